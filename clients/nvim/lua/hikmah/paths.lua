-- Where the daemon listens, found exactly as the CLI finds it (hikmah.paths.socket_path).

local uv = vim.uv or vim.loop

local M = {}

local function strip_slashes(path)
  -- Python's Path() drops trailing slashes; do the same so both name one path alike.
  local stripped = path:gsub("/+$", "")
  return stripped == "" and "/" or stripped
end

--- The daemon's socket path.
---
--- Order: the `socket` option, `$HIKMAH_SOCKET`, `$XDG_RUNTIME_DIR/hikmah/hikmahd.sock`
--- (only when XDG_RUNTIME_DIR is absolute), else `/tmp/hikmah-<uid>/hikmahd.sock`.
---
---@param configured string|nil the `socket` option of setup()
---@param getenv fun(name: string): string|nil defaults to os.getenv
---@param uid integer|nil defaults to this process's uid
---@return string path
---@return string origin which rule gave the path (for :checkhealth)
function M.socket_path(configured, getenv, uid)
  getenv = getenv or os.getenv
  if configured and configured ~= "" then
    return vim.fn.expand(configured), "the socket option of setup()"
  end
  local env = getenv("HIKMAH_SOCKET")
  if env and env ~= "" then
    return env, "$HIKMAH_SOCKET"
  end
  local runtime = getenv("XDG_RUNTIME_DIR")
  if runtime and runtime:sub(1, 1) == "/" then
    return strip_slashes(runtime) .. "/hikmah/hikmahd.sock", "$XDG_RUNTIME_DIR"
  end
  return string.format("/tmp/hikmah-%d/hikmahd.sock", uid or uv.getuid()),
    "the fallback (no $HIKMAH_SOCKET, no absolute $XDG_RUNTIME_DIR)"
end

return M
