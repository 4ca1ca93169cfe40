-- The text a command was given through a range: the visual selection when the range is
-- the one just selected (charwise, linewise or blockwise), else the lines of the range.

local M = {}

-- The last byte of the UTF-8 character starting at or containing byte `at` of `line`.
local function char_end(line, at)
  if at >= #line then
    return #line
  end
  local stop = at
  while stop < #line do
    local byte = line:byte(stop + 1)
    if byte < 0x80 or byte >= 0xC0 then
      break -- the next byte starts a new character
    end
    stop = stop + 1
  end
  return stop
end

--- The selected text, or nil without a range (or when it is blank).
---@param opts table the table nvim_create_user_command passes (range, line1, line2)
---@param buf integer|nil default: the current buffer
---@return string|nil text
---@return integer|nil line1
---@return integer|nil line2
function M.text(opts, buf)
  if opts == nil or (opts.range or 0) == 0 then
    return nil
  end
  buf = buf or vim.api.nvim_get_current_buf()
  local first = vim.api.nvim_buf_get_mark(buf, "<")
  local last = vim.api.nvim_buf_get_mark(buf, ">")
  local mode = vim.fn.visualmode()
  local selected = first[1] == opts.line1 and last[1] == opts.line2 and first[1] > 0
  local lines = vim.api.nvim_buf_get_lines(buf, opts.line1 - 1, opts.line2, false)
  if selected and mode == "v" then
    -- Marks are (row, byte column from 0); a `$` selection reports a huge end column.
    lines[#lines] = lines[#lines]:sub(1, char_end(lines[#lines], last[2] + 1))
    lines[1] = lines[1]:sub(first[2] + 1)
  elseif selected and mode == "\22" then -- blockwise: the same byte columns of each line
    local left = math.min(first[2], last[2])
    local right = math.max(first[2], last[2])
    for i, line in ipairs(lines) do
      lines[i] = line:sub(left + 1, char_end(line, right + 1))
    end
  end
  local text = table.concat(lines, "\n")
  if not text:find("%S") then
    return nil
  end
  return text, opts.line1, opts.line2
end

return M
