-- Memory as a person reads it: content is data, never a control sequence, and an agent's write
-- is named as one wherever its source is shown. The same rules as the CLI's (the Python module
-- hikmah.display); a test keeps the two tables equal.

local M = {}

-- What a terminal acts on rather than shows, and what reorders or hides text, as inclusive
-- code point ranges: C0 controls but tab and newline, DEL and the C1 controls, Unicode's
-- format characters (bidi overrides and isolates, zero-width characters, the BOM, tag
-- characters) and its line and paragraph separators.
M.INVISIBLE = {
  { 0x00, 0x08 }, { 0x0B, 0x1F }, { 0x7F, 0x9F }, { 0xAD, 0xAD }, { 0x600, 0x605 },
  { 0x61C, 0x61C }, { 0x6DD, 0x6DD }, { 0x70F, 0x70F }, { 0x890, 0x891 }, { 0x8E2, 0x8E2 },
  { 0x180E, 0x180E }, { 0x200B, 0x200F }, { 0x2028, 0x202E }, { 0x2060, 0x2064 },
  { 0x2066, 0x206F }, { 0xFEFF, 0xFEFF }, { 0xFFF9, 0xFFFB }, { 0x110BD, 0x110BD },
  { 0x110CD, 0x110CD }, { 0x13430, 0x1343F }, { 0x1BCA0, 0x1BCA3 }, { 0x1D173, 0x1D17A },
  { 0xE0001, 0xE0001 }, { 0xE0020, 0xE007F },
} -- stylua: ignore

-- The daemon's stamp on a write from an agent session: agent-session:<host>:<session id>.
M.AGENT_LOCATOR_PREFIX = "agent-session:"

local function invisible(code)
  for _, range in ipairs(M.INVISIBLE) do
    if code < range[1] then
      return false
    end
    if code <= range[2] then
      return true
    end
  end
  return false
end

-- The code point of one UTF-8 sequence (or a single byte).
local function code_point(char)
  local first = char:byte(1)
  if #char == 1 then
    return first
  end
  local code = first % (2 ^ (7 - #char))
  for i = 2, #char do
    code = code * 64 + char:byte(i) % 64
  end
  return code
end

local function escaped(char)
  local code = code_point(char)
  if not invisible(code) then
    return char
  end
  if code < 0x100 then
    return string.format("\\x%02x", code)
  end
  return code < 0x10000 and string.format("\\u%04x", code) or string.format("\\U%08x", code)
end

--- `text` with every control and format character shown as an escape ("\x1b", "\u202e").
---@param text any
---@return string
function M.visible(text)
  -- Multi-byte characters first, then single bytes: a control byte is escaped whatever follows.
  local shown = tostring(text):gsub("[\194-\244][\128-\191]*", escaped)
  return (shown:gsub("[%z\1-\8\11-\31\127]", escaped))
end

-- "<host>:<session>" of the daemon's stamp in `locator`, or nil when there is none.
local function stamp_of(locator)
  local prefix = M.AGENT_LOCATOR_PREFIX
  if type(locator) ~= "string" or locator:sub(1, #prefix) ~= prefix then
    return nil
  end
  return locator:sub(#prefix + 1):match("^[^;]*")
end

--- "agent:<host>" when `locator` carries the daemon's stamp for an agent session, else nil.
function M.stamped_agent(locator)
  local stamp = stamp_of(locator)
  if stamp == nil then
    return nil
  end
  local host = vim.trim(stamp:match("^[^:]*"))
  return "agent:" .. (host ~= "" and M.visible(host) or "unknown")
end

local function short(session)
  return vim.fn.strchars(session) <= 12 and session or (vim.fn.strcharpart(session, 0, 8) .. "…")
end

--- Who wrote a trace: "human:sam, verified"; "agent:codex, session 5f1c…, unverified";
--- "human:sam (claimed), written by agent:codex, session 5f1c…, unverified".
---@param provenance table|nil a trace's provenance
function M.writer(provenance)
  provenance = provenance or {}
  local claimed = M.visible(provenance.source or "unknown")
  local state = provenance.verified and "verified" or "unverified"
  local agent = M.stamped_agent(provenance.locator)
  if agent == nil then
    return claimed .. ", " .. state
  end
  local session = vim.trim(stamp_of(provenance.locator):match("^[^:]*:?(.*)$"))
  local session_text = session ~= "" and (", session " .. M.visible(short(session))) or ""
  if claimed == agent or claimed == "unknown" or claimed == "" then
    return agent .. session_text .. ", " .. state
  end
  return claimed .. " (claimed), written by " .. agent .. session_text .. ", " .. state
end

return M
