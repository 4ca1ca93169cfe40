-- Newline-delimited frames, without I/O: feed it bytes as they arrive, get whole lines back.
-- A frame may come in many reads, and one read may hold several frames.

local M = {}

local Lines = {}
Lines.__index = Lines

function M.new()
  return setmetatable({ parts = {}, size = 0 }, Lines)
end

--- Feed one chunk read from the socket.
---@param chunk string
---@return string[] lines the complete lines it finished, without "\n"; blank lines skipped
function Lines:feed(chunk)
  local out = {}
  local start = 1
  while true do
    local newline = chunk:find("\n", start, true)
    if newline == nil then
      break
    end
    local piece = chunk:sub(start, newline - 1)
    if #self.parts > 0 then
      -- Joined only once the frame is complete: a 1 MiB reply in 64 KiB reads is copied once.
      self.parts[#self.parts + 1] = piece
      piece = table.concat(self.parts)
      self.parts = {}
      self.size = 0
    end
    if piece:find("%S") then
      out[#out + 1] = piece
    end
    start = newline + 1
  end
  if start <= #chunk then
    self.parts[#self.parts + 1] = chunk:sub(start)
    self.size = self.size + (#chunk - start + 1)
  end
  return out
end

--- Bytes of an unfinished frame held so far.
function Lines:pending()
  return self.size
end

return M
