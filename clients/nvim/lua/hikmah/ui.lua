-- Floating windows: a scratch buffer of lines, centred, `q`/<Esc> to close, and keys that
-- get the line under the cursor.

local config = require("hikmah.config")

local api = vim.api

local M = {}

local function size(setting, total)
  if setting <= 1 then
    return math.floor(total * setting)
  end
  return math.floor(setting)
end

--- The text width floats are rendered for (inside the border).
function M.text_width()
  local columns = vim.o.columns
  return math.max(math.min(size(config.options.width, columns), columns - 4), 20)
end

local function geometry(lines)
  local width = M.text_width()
  local room = math.max(vim.o.lines - vim.o.cmdheight - 4, 3)
  local height = math.max(math.min(#lines, size(config.options.height, vim.o.lines), room), 1)
  return {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = config.options.border,
  }
end

--- Put `lines` into a float's buffer (it stays read-only for the user).
function M.set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

--- Open a float and enter it.
---
---@param lines string[]
---@param keys table<string, fun(row: integer, buf: integer, win: integer)>|nil
---  extra normal-mode keys; `row` is the cursor's line (1-based)
---@return integer buf
---@return integer win
function M.float(lines, keys)
  local buf = api.nvim_create_buf(false, true)
  M.set_lines(buf, lines)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "hikmah"
  local win = api.nvim_open_win(buf, true, geometry(lines))
  vim.wo[win].cursorline = true
  vim.wo[win].wrap = true
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  local map = { buffer = buf, nowait = true, silent = true }
  vim.keymap.set("n", "q", close, map)
  vim.keymap.set("n", "<Esc>", close, map)
  for lhs, action in pairs(keys or {}) do
    vim.keymap.set("n", lhs, function()
      action(api.nvim_win_get_cursor(win)[1], buf, win)
    end, map)
  end
  return buf, win
end

--- Open an editable float on `lines` and enter it: a scratch buffer named `name` that no
--- file backs ('buftype' acwrite), so `:w` calls `on_write(lines, close)` and writes no file;
--- `close()` closes the float. `:q!` drops the edit (the buffer is wiped when hidden).
---@param name string
---@param lines string[]
---@param on_write fun(lines: string[], close: fun())
---@return integer buf
---@return integer win
function M.editor(name, lines, on_write)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modified = false
  pcall(api.nvim_buf_set_name, buf, name) -- taken: a second edit of the same trace
  local win = api.nvim_open_win(buf, true, geometry(lines))
  vim.wo[win].wrap = true
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  api.nvim_create_autocmd("BufWriteCmd", {
    buffer = buf,
    callback = function()
      local saved = api.nvim_buf_get_lines(buf, 0, -1, false)
      -- After the write command: the window may close then.
      vim.schedule(function()
        on_write(saved, close)
      end)
    end,
  })
  return buf, win
end

--- Resize a float to new contents.
function M.refresh(buf, win, lines)
  M.set_lines(buf, lines)
  if api.nvim_win_is_valid(win) then
    local g = geometry(lines)
    api.nvim_win_set_config(win, {
      relative = g.relative,
      width = g.width,
      height = g.height,
      row = g.row,
      col = g.col,
    })
  end
end

return M
