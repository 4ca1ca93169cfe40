-- :HikmahReview — the person's inbox of what agents wrote and no agent reads yet: an agent's
-- standing rules (pending) and its notes that read as instructions to an agent (quarantined).
-- Listed in a float, newest first, with keys to accept, edit then accept, or reject the item
-- under the cursor. Accepting and rejecting are the person's: with presence on, client.call
-- asks for the passphrase and ends a one-action proof after the action.

local client = require("hikmah.client")
local display = require("hikmah.display")
local notify = require("hikmah.notify")
local render = require("hikmah.render")
local ui = require("hikmah.ui")

local api = vim.api
local levels = vim.log.levels

local M = {}

M.LIMIT = 100 -- items listed at once (review.list's default)

-- Say what the daemon decided: each accepted or rejected trace, and each it refused.
local function report(result, done_word)
  for _, decided in ipairs(result.decided or {}) do
    notify.show(string.format("%s %s (now %s)", done_word, decided.id, decided.by))
  end
  for _, refused in ipairs(result.refused or {}) do
    notify.show(string.format("not %s %s: %s", done_word, refused.id, refused.reason), levels.WARN)
  end
end

local function decide(method, params, done_word, after)
  client.call(method, params, function(err, result)
    if err then
      notify.failure(err, method)
    else
      report(result, done_word)
    end
    after()
  end)
end

--- Accept `id` as the agent wrote it, or with `content` (the person's edit) in its place.
function M.accept(id, content, after)
  decide("review.accept", { ids = { id }, content = content }, "accepted", after)
end

--- Reject `id`, asking why (the reason is kept in the rejection); an empty answer rejects
--- nothing.
function M.reject(id, after)
  vim.ui.input({ prompt = "Reject " .. id .. ", because: " }, function(reason)
    if reason == nil or not reason:find("%S") then
      notify.show("no reason given: " .. id .. " was not rejected", levels.WARN)
      return
    end
    decide("review.reject", { ids = { id }, reason = vim.trim(reason) }, "rejected", after)
  end)
end

--- Open the text of `item` in an editable float, as shown (control characters as escapes);
--- `:w` accepts what is saved in place of the agent's text (or as written, when saved
--- unchanged); `:q!` drops the edit.
function M.edit(item, after)
  local id = item.trace.id
  local shown = display.visible(item.trace.content)
  local lines = vim.split(shown, "\n", { plain = true })
  ui.editor("hikmah://review/" .. id, lines, function(saved, close)
    local edited = table.concat(saved, "\n")
    if not edited:find("%S") then
      notify.show("the text is empty: nothing was accepted (:q! drops the edit)", levels.WARN)
      return
    end
    close()
    M.accept(id, edited ~= shown and edited or nil, after)
  end)
  notify.show("editing " .. id .. ": :w accepts the text as you save it, :q! drops the edit")
end

--- :HikmahReview — what waits for review, in a float.
function M.open()
  client.call("review.list", { limit = M.LIMIT }, function(err, result)
    if err then
      return notify.failure(err, "review.list")
    end
    local lines, ids = render.review(result, ui.text_width())
    local items = {}
    local buf, win
    local function index(list)
      items = {}
      for _, item in ipairs(list.items or {}) do
        items[item.trace.id] = item
      end
    end
    index(result)
    local function reload()
      client.call("review.list", { limit = M.LIMIT }, function(again_err, again)
        if again_err then
          return notify.failure(again_err, "review.list")
        end
        index(again)
        lines, ids = render.review(again, ui.text_width())
        if api.nvim_buf_is_valid(buf) then
          ui.refresh(buf, win, lines)
          if api.nvim_win_is_valid(win) then
            api.nvim_set_current_win(win)
          end
        end
      end)
    end
    local function on_item(action)
      return function(row)
        local item = items[ids[row]]
        if item == nil then
          return notify.show("no memory on this line: put the cursor on one", levels.WARN)
        end
        action(item)
      end
    end
    buf, win = ui.float(lines, {
      a = on_item(function(item)
        M.accept(item.trace.id, nil, reload)
      end),
      r = on_item(function(item)
        M.reject(item.trace.id, reload)
      end),
      e = on_item(function(item)
        M.edit(item, reload)
      end),
      ["<CR>"] = on_item(function(item)
        require("hikmah.commands").show(item.trace.id)
      end),
      R = reload,
    })
  end)
end

return M
