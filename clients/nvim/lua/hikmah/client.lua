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

--- Call a method of the daemon; never blocks (but for the passphrase prompt: when the
--- daemon answers presence_required, the person is asked once with inputsecret(), and
--- the call is sent again after a proof).
---
---@param method string e.g. "memory.recall"
---@param params table|nil
---@param callback fun(err: table|nil, result: any) on the main loop, once
---@param timeout_ms integer|nil default: the timeout_ms option
function M.call(method, params, callback, timeout_ms)
  local timeout = timeout_ms or config.options.timeout_ms
  return open():request(method, params, function(err, result)
    if err == nil or err.reason ~= "presence_required" then
      return callback(err, result)
    end
    -- What is confirmed: the method, the traces it decides (review), and the text it writes.
    local action = method
    if params and type(params.ids) == "table" then
      action = action .. " " .. table.concat(params.ids, ", ")
    end
    if params and params.content then
      action = action .. ": " .. params.content
    end
    require("hikmah.presence").prove(action:sub(1, 200), function(proved, once)
      if not proved then
        return callback(err, nil)
      end
      open():request(method, params, function(again, result)
        if not once then
          return callback(again, result)
        end
        -- A proof for this action alone: ended before anything else is sent (requests on
        -- one connection run at once), so that the next action asks again.
        open():request("presence.end", {}, function()
          callback(again, result)
        end, timeout)
      end, timeout)
    end)
  end, timeout)
end

--- Drop the connection (setup() changed the socket); waiting requests fail with `closed`.
function M.reset()
  if connection ~= nil then
    connection:close()
    connection = nil
  end
end

return M
