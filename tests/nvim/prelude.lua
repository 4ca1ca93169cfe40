-- Loaded first by every test driver (tests/harness/nvim.py writes the drivers).
--
-- It stands in for the person: vim.notify is captured, vim.ui.select/input answer from
-- T.answers in order. A driver's body runs inside T.run; whatever it puts in T.data, with
-- the captured notifications and prompts, is written as JSON to $HIKMAH_TEST_RESULT, then
-- Neovim quits. Every wait is bounded.

T = { data = {}, notes = {}, prompts = {}, answers = {} }

local dir = os.getenv("HIKMAH_TEST_DIR")
local result_path = os.getenv("HIKMAH_TEST_RESULT")

vim.cmd("runtime! plugin/hikmah.lua")

vim.notify = function(msg, level)
  table.insert(T.notes, { msg = msg, level = level or vim.log.levels.INFO })
end

vim.ui.select = function(items, opts, on_choice)
  table.insert(T.prompts, { prompt = opts.prompt, items = items })
  local answer = table.remove(T.answers, 1)
  if answer == nil then
    return on_choice(nil, nil)
  end
  if type(answer) == "number" then
    return on_choice(items[answer], answer)
  end
  for i, item in ipairs(items) do
    if item == answer then
      return on_choice(item, i)
    end
  end
  error("no item " .. tostring(answer) .. " among " .. vim.inspect(items))
end

vim.ui.input = function(opts, on_confirm)
  table.insert(T.prompts, { prompt = opts.prompt })
  on_confirm(table.remove(T.answers, 1))
end

--- Wait for `condition`, at most `ms`; fail the test with `what` if it never holds.
function T.wait(ms, condition, what)
  if not vim.wait(ms, condition, 5) then
    error("timed out after " .. ms .. " ms waiting for " .. what, 2)
  end
end

--- Floating windows, oldest first.
function T.floats()
  local floats = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      floats[#floats + 1] = win
    end
  end
  table.sort(floats)
  return floats
end

--- Wait until `count` floats are open; the lines of the newest.
function T.float_lines(count, what)
  T.wait(5000, function()
    return #T.floats() >= count
  end, what or ("float " .. count))
  local floats = T.floats()
  local win = floats[#floats]
  return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), win
end

--- Put the cursor of the current window on the first line containing `text` (plain).
function T.cursor_on(text)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for row, line in ipairs(lines) do
    if line:find(text, 1, true) then
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      return row
    end
  end
  error("no line contains " .. text .. ":\n" .. table.concat(lines, "\n"), 2)
end

--- Type keys as the person would (mappings apply).
function T.keys(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "mx", false)
end

--- Notes captured so far whose message contains `text`.
function T.notes_with(text)
  local found = {}
  for _, note in ipairs(T.notes) do
    if note.msg:find(text, 1, true) then
      found[#found + 1] = note
    end
  end
  return found
end

--- Call a daemon method through the plugin and wait for the reply.
function T.call(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  require("hikmah").call(method, params, function(e, r)
    done, err, result = true, e, r
  end, timeout_ms)
  T.wait((timeout_ms or 5000) + 1000, function()
    return done
  end, method)
  return err, result
end

--- Tell the Python side something happened (a file in the test's directory).
function T.signal(name)
  local file = assert(io.open(dir .. "/" .. name, "w"))
  file:write("1")
  file:close()
end

--- Wait for the Python side's signal.
function T.await(name, ms)
  T.wait(ms or 20000, function()
    return (vim.uv or vim.loop).fs_stat(dir .. "/" .. name) ~= nil
  end, "signal " .. name)
end

function T.finish()
  local file = assert(io.open(result_path, "w"))
  file:write(vim.json.encode({ data = T.data, notes = T.notes, prompts = T.prompts }))
  file:close()
  vim.cmd("qa!")
end

function T.run(body)
  local ok, failure = xpcall(body, debug.traceback)
  if not ok then
    T.data.error = tostring(failure)
  end
  T.finish()
end
