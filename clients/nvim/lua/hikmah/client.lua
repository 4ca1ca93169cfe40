-- The editor's one connection for requests (reminders have their own, in events.lua).

local config = require("hikmah.config")
local notify = require("hikmah.notify")
local rpc = require("hikmah.rpc")

local M = {}

local connection = nil

--- A new connection to the daemon at the configured socket (opened on the first request);
--- `handlers` adds its callbacks (on_unavailable, on_stray, on_notification, on_close).
function M.connect(handlers)
  return rpc.new(vim.tbl_extend("keep", handlers, {
    path = function()
      return (config.socket_path())
    end,
    timeout_ms = config.options.timeout_ms,
    on_connect = notify.reached,
  }))
end

local function open()
  if connection == nil then
    connection = M.connect({
      on_unavailable = notify.missing,
      on_stray = function(message)
        if type(message.error) == "table" then
          notify.show("the daemon said: " .. tostring(message.error.message), vim.log.levels.WARN)
        end
      end,
    })
  end
  return connection
end

--- Call a method of the daemon; never blocks.
---
---@param method string e.g. "memory.recall"
---@param params table|nil
---@param callback fun(err: table|nil, result: any) on the main loop, once
---@param timeout_ms integer|nil default: the timeout_ms option
function M.call(method, params, callback, timeout_ms)
  return open():request(method, params, callback, timeout_ms or config.options.timeout_ms)
end

--- Drop the connection (setup() changed the socket); waiting requests fail with `closed`.
function M.reset()
  if connection ~= nil then
    connection:close()
    connection = nil
  end
end

return M
