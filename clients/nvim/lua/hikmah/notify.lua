-- Every message the plugin shows goes through vim.notify, from here.
--
-- A missing daemon is said once: not again until the daemon has been reached in between,
-- however many commands fail meanwhile.

local display = require("hikmah.display")

local levels = vim.log.levels

local M = {}

local missing_reported = false

---@param message string
---@param level integer|nil vim.log.levels.*, default INFO
function M.show(message, level)
  vim.notify("Hikmah: " .. display.visible(message), level or levels.INFO, { title = "Hikmah" })
end

--- No daemon answers at `path`: say so once, with how to start one.
---@param path string
---@param why string what failed, e.g. "ENOENT: no socket there"
function M.missing(path, why)
  if missing_reported then
    return
  end
  missing_reported = true
  M.show(
    string.format(
      "no hikmahd is running at %s (%s). Start it with `hikmahd` in a terminal,"
        .. " or run `hikmah status` (which starts it), or enable the systemd user socket"
        .. " (:help hikmah-daemon). The plugin reconnects by itself; this message is"
        .. " not repeated until the daemon has been reached.",
      path,
      why
    ),
    levels.ERROR
  )
end

--- The daemon answered: a later outage is worth saying again.
function M.reached()
  missing_reported = false
end

--- A request failed: show why, unless it is the missing daemon (said once, by missing()).
---@param err table an error from hikmah.rpc
---@param what string|nil what was being done, e.g. "recall"
function M.failure(err, what)
  if err.reason == "unavailable" then
    return
  end
  local prefix = what and (what .. " failed: ") or ""
  M.show(prefix .. (err.message or "unknown error"), levels.ERROR)
end

return M
