-- What each :Hikmah* command does. Every call to the daemon is asynchronous: a command
-- returns at once, and its window or message comes when the reply does.

local client = require("hikmah.client")
local config = require("hikmah.config")
local notify = require("hikmah.notify")
local render = require("hikmah.render")
local scope = require("hikmah.scope")
local selection = require("hikmah.selection")
local ui = require("hikmah.ui")

local api = vim.api
local levels = vim.log.levels

local M = {}

-- Every kind a person writes (predictions go through memory.predict), commonest first.
M.KINDS = {
  "observation",
  "preference",
  "constraint",
  "procedure",
  "belief",
  "episode",
  "commitment",
  "outcome",
  "correction",
}

local ID_PATTERN = "tr_%x+"

--- The trace id at the cursor: the WORD under it if it holds one, else the first on the line.
function M.id_at_cursor()
  local word = vim.fn.expand("<cWORD>"):match(ID_PATTERN)
  return word or api.nvim_get_current_line():match(ID_PATTERN)
end

-- ── recall and show ────────────────────────────────────────────────────────

--- :HikmahRecall [query] — the arguments, else the selection (with a range), else the
--- word under the cursor, else a prompt.
function M.recall(opts)
  opts = opts or { args = "", range = 0 }
  local query = opts.args ~= "" and opts.args or nil
  if query == nil then
    local text = selection.text(opts)
    query = text and text:gsub("%s+", " ") or nil
  end
  if query == nil then
    local word = vim.fn.expand("<cword>")
    query = word ~= "" and word or nil
  end
  if query == nil then
    vim.ui.input({ prompt = "Recall: " }, function(answer)
      if answer and answer:find("%S") then
        M.recall_query(answer)
      end
    end)
    return
  end
  M.recall_query(query)
end

--- Recall `query` and show the results in a float.
function M.recall_query(query)
  local params = { query = query }
  if config.options.recall_limit then
    params.limit = config.options.recall_limit
  end
  if config.options.recall_scope == "project" then
    params.scope = scope.project_scope()
  end
  client.call("memory.recall", params, function(err, result)
    if err then
      return notify.failure(err, "recall")
    end
    local lines, ids = render.recall(result.results or {}, query, ui.text_width())
    ui.float(lines, {
      ["<CR>"] = function(row)
        if ids[row] then
          M.show(ids[row])
        end
      end,
    })
  end)
end

--- :HikmahShow [id] — one trace with its history (memory.show), in a float.
function M.show(id)
  if type(id) == "table" then -- from the command
    id = id.args ~= "" and id.args or M.id_at_cursor()
  end
  if id == nil or id == "" then
    notify.show("no trace id given, and none under the cursor", levels.WARN)
    return
  end
  client.call("memory.show", { id = id }, function(err, result)
    if err then
      return notify.failure(err, "show " .. id)
    end
    local lines, ids = render.trace(result, ui.text_width())
    ui.float(lines, {
      ["<CR>"] = function(row)
        if ids[row] and ids[row] ~= id then
          M.show(ids[row])
        end
      end,
    })
  end)
end

-- ── remember ───────────────────────────────────────────────────────────────

local function split_tags(answer)
  local tags = {}
  for tag in (answer or ""):gmatch("[^,%s]+") do
    tags[#tags + 1] = tag
  end
  return tags
end

local function write(params)
  client.call("memory.remember", params, function(err, result)
    if err then
      return notify.failure(err, "remember")
    end
    local trace = result.trace
    notify.show(string.format("remembered %s (%s, %s)", trace.id, trace.kind, trace.scope))
    if result.conflicts and #result.conflicts > 0 then
      notify.show(
        "it conflicts with " .. table.concat(result.conflicts, ", ") .. " (:HikmahConflicts)",
        levels.WARN
      )
    end
  end)
end

--- Ask kind, tags, scope (and a deadline for a commitment), then write `content`.
---@param content string
---@param locator string|nil where the text came from, "file:line[-line]"
function M.remember_text(content, locator)
  vim.ui.select(M.KINDS, { prompt = "Hikmah: kind of memory" }, function(kind)
    if kind == nil then
      return
    end
    vim.ui.input({ prompt = "Tags (space or comma separated, empty for none): " }, function(tags)
      if tags == nil then
        return
      end
      local project = scope.project_scope()
      local scopes = { project, "global" }
      vim.ui.select(scopes, { prompt = "Hikmah: scope" }, function(chosen)
        if chosen == nil then
          return
        end
        local params = { content = content, kind = kind, scope = chosen }
        local tag_list = split_tags(tags)
        if #tag_list > 0 then
          params.tags = tag_list
        end
        if config.options.source then
          params.source = config.options.source
        end
        if config.options.verified then
          params.verified = true
        end
        if locator then
          params.locator = locator
        end
        if kind ~= "commitment" then
          return write(params)
        end
        vim.ui.input(
          { prompt = "Deadline (+2d, +3h, 2025-07-01, 2025-07-01T17:00; empty for none): " },
          function(deadline)
            if deadline == nil then
              return
            end
            if deadline:find("%S") then
              params.deadline = vim.trim(deadline)
            end
            write(params)
          end
        )
      end)
    end)
  end)
end

--- :HikmahRemember [text] — the arguments, else the selection (with a range), else a prompt.
function M.remember(opts)
  opts = opts or { args = "", range = 0 }
  if opts.args ~= "" then
    return M.remember_text(opts.args)
  end
  local text, first, last = selection.text(opts)
  if text then
    local name = api.nvim_buf_get_name(0)
    local locator = nil
    if name ~= "" then
      locator = name .. ":" .. first .. (last ~= first and ("-" .. last) or "")
    end
    return M.remember_text(text, locator)
  end
  vim.ui.input({ prompt = "Remember: " }, function(answer)
    if answer and answer:find("%S") then
      M.remember_text(answer)
    end
  end)
end

-- ── commitments ────────────────────────────────────────────────────────────

local function fulfill(id, done)
  client.call("memory.fulfill", { id = id }, function(err)
    if err then
      return notify.failure(err, "fulfill " .. id)
    end
    notify.show("fulfilled " .. id)
    if done then
      done()
    end
  end)
end

local function list_params(opts)
  local args = opts and opts.args or ""
  if args == "" then
    return {}
  end
  local hours = tonumber(args)
  if hours == nil or hours < 0 then
    notify.show("expected a number of hours, not '" .. args .. "'; listing them all", levels.WARN)
    return {}
  end
  return { within_hours = hours }
end

local function commitments_float(params, result)
  local lines, ids = render.commitments(result.commitments or {}, ui.text_width())
  local function refresh(buf, win)
    client.call("promises.list", params, function(err, again)
      if err then
        return notify.failure(err, "promises.list")
      end
      lines, ids = render.commitments(again.commitments or {}, ui.text_width())
      if api.nvim_buf_is_valid(buf) then
        ui.refresh(buf, win, lines)
      end
    end)
  end
  ui.float(lines, {
    ["<CR>"] = function(row)
      if ids[row] then
        M.show(ids[row])
      end
    end,
    f = function(row, buf, win)
      if ids[row] then
        fulfill(ids[row], function()
          refresh(buf, win)
        end)
      end
    end,
  })
end

local quickfix_params = {} -- of the list shown last, to refresh it after :HikmahFulfill

local function show_commitments(params)
  client.call("promises.list", params, function(err, result)
    if err then
      return notify.failure(err, "promises.list")
    end
    if config.options.commitments == "quickfix" then
      quickfix_params = params
      local items = render.commitment_items(result.commitments or {})
      vim.fn.setqflist({}, " ", { title = "Hikmah commitments", items = items })
      vim.cmd("copen")
      return
    end
    commitments_float(params, result)
  end)
end

--- :HikmahCommitments [hours] — the promise queue (all, or due within `hours`), in a float
--- or the quickfix list (the `commitments` option).
function M.commitments(opts)
  show_commitments(list_params(opts))
end

--- :HikmahFulfill [id] — mark a commitment done: the id given, else the one at the cursor
--- (a quickfix line of :HikmahCommitments, or any line naming a trace).
function M.fulfill(opts)
  local id = opts and opts.args ~= "" and opts.args or M.id_at_cursor()
  if id == nil then
    notify.show("no trace id given, and none under the cursor", levels.WARN)
    return
  end
  local in_quickfix = vim.bo.buftype == "quickfix"
  fulfill(id, function()
    if in_quickfix and config.options.commitments == "quickfix" then
      show_commitments(quickfix_params)
    end
  end)
end

-- ── review ─────────────────────────────────────────────────────────────────

--- :HikmahReview — what agents wrote that waits for the person (hikmah.review).
function M.review()
  require("hikmah.review").open()
end

-- ── conflicts ──────────────────────────────────────────────────────────────

local MAX_SHOWN = 50 -- traces fetched for their content; past that, ids alone

--- :HikmahConflicts — every claim key with several values, each trace with its content.
function M.conflicts()
  client.call("memory.conflicts", nil, function(err, result)
    if err then
      return notify.failure(err, "conflicts")
    end
    local groups = result.conflicts or {}
    local wanted = {}
    for _, group in ipairs(groups) do
      for _, value in ipairs(group.values) do
        for _, id in ipairs(value.ids) do
          if #wanted < MAX_SHOWN then
            wanted[#wanted + 1] = id
          end
        end
      end
    end
    local traces, waiting = {}, #wanted
    local function show()
      local lines, ids = render.conflicts(groups, traces, ui.text_width())
      ui.float(lines, {
        ["<CR>"] = function(row)
          if ids[row] then
            M.show(ids[row])
          end
        end,
      })
    end
    if waiting == 0 then
      return show()
    end
    -- All in flight at once on the one connection; replies are matched by id.
    for _, id in ipairs(wanted) do
      client.call("memory.show", { id = id }, function(show_err, shown)
        if not show_err then
          traces[id] = shown.trace
        end
        waiting = waiting - 1
        if waiting == 0 then
          show()
        end
      end)
    end
  end)
end

return M
