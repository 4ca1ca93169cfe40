-- The options of setup(), their defaults, and their checks. An unknown option is an error
-- that names it, so a typo does not pass silently.

local paths = require("hikmah.paths")

local M = {}

local function user_name()
  local uv = vim.uv or vim.loop
  local ok, passwd = pcall(uv.os_get_passwd)
  if ok and type(passwd) == "table" and passwd.username then
    return passwd.username
  end
  return os.getenv("USER") or "me"
end

-- Each option with its allowed types, and whether `nil` means "not set".
local SCHEMA = {
  socket = { "string", "nil" }, -- the daemon's socket; nil: as the CLI finds it
  timeout_ms = { "number" }, -- per request
  reminders = { "boolean" }, -- subscribe to reminder.due at setup()
  recall_limit = { "number", "nil" }, -- nil: the policy's recall_limit
  recall_scope = { "string" }, -- "all" or "project"
  source = { "string", "boolean" }, -- provenance of :HikmahRemember; false: none sent
  verified = { "boolean" }, -- mark what :HikmahRemember writes as checked by you
  commitments = { "string" }, -- "float" or "quickfix"
  border = { "string", "table" }, -- nvim_open_win's border
  width = { "number" }, -- float width: columns, or a fraction of the editor's (<= 1)
  height = { "number" }, -- float height at most: rows, or a fraction (<= 1)
}

local CHOICES = {
  recall_scope = { all = true, project = true },
  commitments = { float = true, quickfix = true },
}

function M.defaults()
  return {
    socket = nil,
    timeout_ms = 5000,
    reminders = true,
    recall_limit = nil,
    recall_scope = "all",
    source = "human:" .. user_name(),
    verified = false,
    commitments = "float",
    border = "rounded",
    width = 0.8,
    height = 0.8,
  }
end

M.options = M.defaults()

--- Check and apply options over the defaults.
---@param opts table|nil
---@return table options
function M.set(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("hikmah.setup() takes a table of options", 2)
  end
  local merged = M.defaults()
  for key, value in pairs(opts) do
    local allowed = SCHEMA[key]
    if allowed == nil then
      error(string.format("hikmah.setup(): unknown option '%s' (see :help hikmah-options)", key), 2)
    end
    if not vim.tbl_contains(allowed, type(value)) then
      error(
        string.format(
          "hikmah.setup(): option '%s' must be %s, not %s",
          key,
          table.concat(allowed, " or "),
          type(value)
        ),
        2
      )
    end
    if CHOICES[key] and not CHOICES[key][value] then
      error(
        string.format(
          "hikmah.setup(): option '%s' must be one of %s",
          key,
          table.concat(vim.tbl_keys(CHOICES[key]), ", ")
        ),
        2
      )
    end
    merged[key] = value
  end
  if merged.source == true then
    merged.source = M.defaults().source
  end
  M.options = merged
  return merged
end

--- The socket path now, and which rule gave it.
function M.socket_path()
  return paths.socket_path(M.options.socket)
end

return M
