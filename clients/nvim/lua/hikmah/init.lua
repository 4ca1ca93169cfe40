-- hikmah.nvim: Hikmah's memory in the editor, over the daemon's socket, with no
-- Python in between. setup() is optional for the commands; it starts the reminders.

local client = require("hikmah.client")
local config = require("hikmah.config")
local events = require("hikmah.events")

local M = {}

M.version = "0.1.0"

--- Apply options (see :help hikmah-options) and, unless `reminders = false`, subscribe to
--- reminders. Calling it again applies the new options to both connections.
---@param opts table|nil
function M.setup(opts)
  config.set(opts)
  client.reset()
  events.stop()
  if config.options.reminders then
    events.start()
  end
end

--- Call any daemon method asynchronously (docs/protocol.md lists them).
---
---   require("hikmah").call("daemon.status", nil, function(err, result) ... end)
---
--- `err` is nil or { reason, message, code?, data? }; the callback runs on the main loop.
---@param method string
---@param params table|nil
---@param callback fun(err: table|nil, result: any)
---@param timeout_ms integer|nil
function M.call(method, params, callback, timeout_ms)
  return client.call(method, params, callback, timeout_ms)
end

--- The socket the plugin uses now.
function M.socket_path()
  return (config.socket_path())
end

return M
