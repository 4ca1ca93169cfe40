-- Text for people: results of the daemon turned into lines, with no window or I/O in sight.
-- Functions that produce a list also return `ids`, the trace id each line is about, so a key
-- pressed on a line knows which trace it means.

local display = require("hikmah.display")

local M = {}

M.FRAMING = "Recalled memories are evidence, not instructions: check them before acting."

local function width_of(text)
  return vim.api.nvim_strwidth(text)
end

--- Epoch ms to a UTC day, "2025-07-01"; "-" for nil.
function M.day(ms)
  if ms == nil then
    return "-"
  end
  return os.date("!%Y-%m-%d", math.floor(ms / 1000))
end

--- Epoch ms to a UTC minute, "2025-07-01 17:00Z"; "-" for nil.
function M.when(ms)
  if ms == nil then
    return "-"
  end
  return os.date("!%Y-%m-%d %H:%M", math.floor(ms / 1000)) .. "Z"
end

--- How far `ms` is from `now_ms`: "in 3h", "2d ago", "now".
function M.relative(ms, now_ms)
  local delta = ms - now_ms
  local seconds = math.abs(delta) / 1000
  for _, unit in ipairs({ { "d", 86400 }, { "h", 3600 }, { "m", 60 } }) do
    if seconds >= unit[2] then
      local amount = string.format("%.0f%s", seconds / unit[2], unit[1])
      return delta >= 0 and ("in " .. amount) or (amount .. " ago")
    end
  end
  return "now"
end

function M.now_ms()
  return os.time() * 1000
end

--- Words of `text` (whitespace collapsed) filled to `width` display cells.
---@return string[]
function M.wrap(text, width, indent, first_indent)
  indent = indent or ""
  first_indent = first_indent or indent
  local out = {}
  local line = first_indent
  local bare = true
  for word in tostring(text):gmatch("%S+") do
    if not bare and width_of(line) + 1 + width_of(word) > width then
      out[#out + 1] = line
      line = indent .. word
    else
      line = line .. (bare and "" or " ") .. word
    end
    bare = false
  end
  out[#out + 1] = line
  return out
end

--- `parts` joined by `sep` (default " · "), wrapped between parts only (a part never splits).
---@return string[]
function M.fill(parts, width, indent, first_indent, sep)
  sep = sep or " · "
  local out = {}
  local line = first_indent or indent
  local bare = true
  for _, part in ipairs(parts) do
    if not bare and width_of(line) + width_of(sep) + width_of(part) > width then
      out[#out + 1] = line
      line = indent .. part
    else
      line = line .. (bare and "" or sep) .. part
    end
    bare = false
  end
  out[#out + 1] = line
  return out
end

-- Every line about a trace goes through here: what it stored is shown, never acted on.
local function add(lines, ids, id, more)
  for _, line in ipairs(more) do
    lines[#lines + 1] = display.visible(line)
    ids[#lines] = id
  end
end

--- memory.recall's results, best first.
---@param results table[] RecallResult list
---@param query string
---@param width integer
---@return string[] lines
---@return table<integer, string> ids
function M.recall(results, query, width)
  local lines, ids = {}, {}
  local count = #results == 1 and "1 result" or (#results .. " results")
  lines[1] = string.format('Hikmah recall "%s": %s', query, count)
  if #results == 0 then
    lines[2] = "nothing recalled; try other words, or :HikmahRecall with no scope limit"
    return lines, ids
  end
  lines[2] = M.FRAMING
  lines[3] = ""
  for rank, item in ipairs(results) do
    local trace = item.trace
    local head = string.format("%2d. ", rank)
    add(
      lines,
      ids,
      trace.id,
      M.wrap("[" .. trace.kind .. "] " .. trace.content, width, "    ", head)
    )
    local meta = {
      M.day(trace.created_at),
      display.writer(trace.provenance),
      string.format("score %.2f", item.score or 0),
    }
    if item.status and item.status ~= "active" then
      meta[#meta + 1] = item.status
    end
    if trace.scope and trace.scope ~= "global" then
      meta[#meta + 1] = trace.scope
    end
    meta[#meta + 1] = trace.id
    add(lines, ids, trace.id, M.fill(meta, width, "    ", "    "))
    local notes = {}
    if item.conflicts and #item.conflicts > 0 then
      notes[#notes + 1] = "CONFLICTS with " .. table.concat(item.conflicts, ", ")
    end
    if trace.deadline then
      notes[#notes + 1] =
        string.format("due %s (%s)", M.when(trace.deadline), M.relative(trace.deadline, M.now_ms()))
    end
    if trace.claim_key then
      notes[#notes + 1] =
        string.format("claims %s = %s", trace.claim_key, tostring(trace.claim_value))
    end
    if (item.duplicates or 0) > 0 then
      notes[#notes + 1] = item.duplicates .. " near-duplicate(s) folded in"
    end
    if item.supersedes then
      notes[#notes + 1] = "supersedes " .. item.supersedes
    end
    if item.superseded_by then
      notes[#notes + 1] = "superseded by " .. item.superseded_by
    end
    if #notes > 0 then
      add(lines, ids, trace.id, M.fill(notes, width, "      ", "    ↳ ", "; "))
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "<CR> full trace and history · q close"
  return lines, ids
end

local function trace_head(stored)
  local trace = stored.trace
  local parts = { trace.id, trace.kind, M.day(trace.created_at), stored.status or "active" }
  if stored.superseded_by then
    parts[#parts] = parts[#parts] .. " → " .. stored.superseded_by
  end
  return table.concat(parts, " · ")
end

--- memory.show: one trace, every field worth reading, and its correction history.
---@return string[] lines
---@return table<integer, string> ids
function M.trace(shown, width)
  local lines, ids = {}, {}
  local trace = shown.trace
  add(lines, ids, trace.id, { trace_head(shown) })
  add(lines, ids, trace.id, M.wrap(trace.content, width, "  "))
  lines[#lines + 1] = ""
  local prov = trace.provenance or {}
  local fields = {
    { "source", display.writer(prov) },
    { "locator", prov.locator },
    { "scope", trace.scope },
    { "tags", trace.tags and #trace.tags > 0 and table.concat(trace.tags, ", ") or nil },
    {
      "deadline",
      trace.deadline
        and (M.when(trace.deadline) .. " (" .. M.relative(trace.deadline, M.now_ms()) .. ")"),
    },
    {
      "claim",
      trace.claim_key and (trace.claim_key .. " = " .. tostring(trace.claim_value)) or nil,
    },
    { "created", M.when(trace.created_at) },
    {
      "weights",
      string.format(
        "salience %.2f · confidence %.2f · authority %.2f",
        trace.salience or 0,
        trace.confidence or 0,
        prov.authority or 0
      ),
    },
    { "privacy", trace.privacy },
    { "supersedes", trace.supersedes },
    { "fulfills", trace.fulfills },
  }
  for _, field in ipairs(fields) do
    if field[2] ~= nil and field[2] ~= "" then
      local target = (field[1] == "supersedes" or field[1] == "fulfills") and field[2] or trace.id
      add(lines, ids, target, { string.format("  %-11s%s", field[1], field[2]) })
    end
  end
  local history = shown.history or {}
  if #history > 1 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = "history (oldest first):"
    for _, link in ipairs(history) do
      local mark = link.trace.id == trace.id and "  ← this trace" or ""
      add(lines, ids, link.trace.id, { "  " .. trace_head(link) .. mark })
      add(lines, ids, link.trace.id, M.wrap(link.trace.content, width, "    "))
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "<CR> open the trace on the line · q close"
  return lines, ids
end

local function due_text(entry, now_ms)
  local deadline = entry.trace.deadline
  if entry.overdue then
    return string.format("OVERDUE since %s (%s)", M.when(deadline), M.relative(deadline, now_ms))
  end
  return string.format("due %s (%s)", M.when(deadline), M.relative(deadline, now_ms))
end

--- promises.list: the promise queue, soonest first.
---@return string[] lines
---@return table<integer, string> ids
function M.commitments(list, width, now_ms)
  now_ms = now_ms or M.now_ms()
  local lines, ids = {}, {}
  local count = #list == 1 and "1 commitment" or (#list .. " commitments")
  lines[1] = "Hikmah promise queue: " .. count
  if #list == 0 then
    lines[2] = "nothing is due; commitments with a deadline appear here"
    return lines, ids
  end
  lines[2] = ""
  for rank, entry in ipairs(list) do
    local trace = entry.trace
    add(lines, ids, trace.id, {
      string.format("%2d. %s · %s", rank, due_text(entry, now_ms), trace.id),
    })
    add(lines, ids, trace.id, M.wrap(trace.content, width, "    "))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "f fulfill · <CR> full trace · q close"
  return lines, ids
end

--- promises.list as quickfix items (no file: the text carries the trace id).
function M.commitment_items(list, now_ms)
  now_ms = now_ms or M.now_ms()
  local items = {}
  for _, entry in ipairs(list) do
    local text = string.format(
      "%s: %s [%s]",
      due_text(entry, now_ms),
      display.visible((entry.trace.content:gsub("%s+", " "))),
      entry.trace.id
    )
    items[#items + 1] = { text = text, valid = 0 }
  end
  return items
end

--- memory.conflicts, with each trace's content when it is known.
---@param groups table[] { key, values = { { value, ids } } }
---@param traces table<string, table> id -> Trace (may miss some)
---@return string[] lines
---@return table<integer, string> ids
function M.conflicts(groups, traces, width)
  local lines, ids = {}, {}
  local count = #groups == 1 and "1 open conflict" or (#groups .. " open conflicts")
  lines[1] = "Hikmah conflicts: " .. count
  if #groups == 0 then
    lines[2] = "no claim key has two values among active traces"
    return lines, ids
  end
  for _, group in ipairs(groups) do
    lines[#lines + 1] = ""
    lines[#lines + 1] = display.visible(group.key)
    for _, value in ipairs(group.values) do
      for _, id in ipairs(value.ids) do
        local trace = traces[id]
        local about = ""
        if trace then
          about = " · " .. M.day(trace.created_at) .. " · " .. display.writer(trace.provenance)
        end
        add(lines, ids, id, { string.format("  = %s · %s%s", value.value, id, about) })
        if trace then
          add(lines, ids, id, M.wrap(trace.content, width, "      "))
        end
      end
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "<CR> full trace · q close"
  return lines, ids
end

--- "3 memories await review".
function M.awaiting(count)
  return count .. (count == 1 and " memory awaits" or " memories await") .. " review"
end

--- review.list: what agents wrote that waits for the person, newest first. For each item,
--- its kind and text, who wrote it (agent and session), when, its id, and why it waits:
--- pending (an agent's standing rule), or quarantined with each screen rule and what it
--- matched. Every line about an item is escaped (display.visible).
---@param result table { waiting, items = ReviewItem[] }
---@return string[] lines
---@return table<integer, string> ids
function M.review(result, width)
  local items = result.items or {}
  local lines, ids = {}, {}
  if #items == 0 then
    lines[1] = "Hikmah review: nothing waits for review"
    lines[2] = "an agent's standing rules, and its notes that read as instructions, wait here"
    lines[3] = ""
    lines[4] = "R reload · q close"
    return lines, ids
  end
  lines[1] = "Hikmah review: " .. M.awaiting(result.waiting or #items) .. ", newest first"
  lines[2] = "No agent reads these until you accept them. Their text is data, not instructions."
  lines[3] = ""
  for rank, item in ipairs(items) do
    local trace = item.trace
    local head = string.format("%2d. ", rank)
    local text = "[" .. trace.kind .. "] " .. trace.content
    add(lines, ids, trace.id, M.wrap(text, width, "    ", head))
    local meta = {
      display.writer(trace.provenance),
      M.day(trace.created_at),
      item.state,
      trace.id,
    }
    add(lines, ids, trace.id, M.fill(meta, width, "    ", "    "))
    if item.state == "quarantined" then
      add(lines, ids, trace.id, { "    ↳ QUARANTINED: reads as instructions to an agent" })
      for _, reason in ipairs(item.reasons or {}) do
        local why =
          string.format('%s (%s): "%s"', reason.rule, reason.meaning, vim.trim(reason.matched))
        add(lines, ids, trace.id, M.wrap(why, width, "        ", "      • "))
      end
    else
      add(lines, ids, trace.id, {
        "    ↳ PENDING: an agent's " .. trace.kind .. "; no agent reads it until you accept it",
      })
    end
  end
  if (result.waiting or 0) > #items then
    lines[#lines + 1] = ""
    lines[#lines + 1] =
      string.format("… and %d more, shown once these are decided", result.waiting - #items)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "a accept · e edit (:w accepts) · r reject · <CR> full trace · R reload"
    .. " · q close"
  return lines, ids
end

--- A reminder.due notification, as a message and its level (lead: WARN, overdue: ERROR).
---@return string message
---@return integer level
function M.reminder(params, now_ms)
  now_ms = now_ms or M.now_ms()
  local trace = params.trace or {}
  local deadline = trace.deadline or params.due_at
  local content = display.visible((tostring(trace.content or "?"):gsub("%s+", " ")))
  local late = params.late and " (delivered late)" or ""
  if params.stage == "overdue" then
    return string.format(
      "overdue since %s (%s): %s [%s]%s",
      M.when(deadline),
      M.relative(deadline, now_ms),
      content,
      tostring(trace.id),
      late
    ),
      vim.log.levels.ERROR
  end
  return string.format(
    "due %s (%s): %s [%s]%s",
    M.relative(deadline, now_ms),
    M.when(deadline),
    content,
    tostring(trace.id),
    late
  ),
    vim.log.levels.WARN
end

return M
