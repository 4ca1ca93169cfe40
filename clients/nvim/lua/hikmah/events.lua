-- Reminders in the editor: a connection of its own subscribed to the daemon's events
-- (events.subscribe), showing each reminder.due through vim.notify, WARN for the `lead`
-- stage and ERROR for `overdue`. The same subscription follows review.waiting, the count of
-- agents' memories that wait for the person's review: when it rises from none, the person
-- is told once (:HikmahReview).
--
-- When the connection is lost (a daemon restart) it is opened again and subscribed again,
-- every second for half a minute, then every 10 s. A new subscription first receives the
-- reminders of the last minutes again (marked `replayed`); those already shown are not
-- shown twice.

local client = require("hikmah.client")
local notify = require("hikmah.notify")
local render = require("hikmah.render")

local uv = vim.uv or vim.loop

local M = {}

local FAST_RETRIES = 30
local FAST_MS = 1000
local SLOW_MS = 10000

local connection = nil
local timer = nil
local attempts = 0
local started = false
local first_attempt = true
local shown = {} -- "trace id:stage" -> true; kept across setup() so a replay is not repeated

--- True while a subscription is live.
M.subscribed = false
--- reminder.due notifications received, and shown (a replay of one shown is not shown).
M.received = 0
M.count = 0

--- How many memories wait for review, as last heard (from daemon.status when subscribed,
--- then from each review.waiting); nil: not known.
M.waiting = nil
--- Times the person was told that a memory awaits review.
M.review_told = 0

M.REVIEW_MESSAGE = "a memory from an agent awaits review: :HikmahReview"

local function on_review_waiting(params)
  local count = type(params) == "table" and tonumber(params.waiting) or nil
  if count == nil then
    return
  end
  local before = M.waiting
  M.waiting = count
  if count > 0 and (before or 0) == 0 then
    M.review_told = M.review_told + 1
    notify.show(M.REVIEW_MESSAGE)
  end
end

local function on_notification(method, params)
  if method == "review.waiting" then
    return on_review_waiting(params)
  end
  if method ~= "reminder.due" then
    return
  end
  M.received = M.received + 1
  local key = tostring(params.trace and params.trace.id) .. ":" .. tostring(params.stage)
  if shown[key] then
    return
  end
  shown[key] = true
  M.count = M.count + 1
  local message, level = render.reminder(params)
  notify.show(message, level)
end

local subscribe

local function retry_later()
  M.subscribed = false
  if not started or (timer and timer:is_active()) then
    return
  end
  attempts = attempts + 1
  timer = timer or uv.new_timer()
  local delay = attempts <= FAST_RETRIES and FAST_MS or SLOW_MS
  timer:start(delay, 0, vim.schedule_wrap(subscribe))
end

subscribe = function()
  if not started then
    return
  end
  connection:request("events.subscribe", nil, function(err)
    if not started then
      return
    end
    if err == nil then
      attempts = 0
      first_attempt = false
      M.subscribed = true
      -- What waits for review now, so that only a rise from none is told; an event that
      -- came first is newer, and kept.
      M.waiting = nil
      connection:request("daemon.status", nil, function(status_err, status)
        if status_err == nil and M.waiting == nil and type(status.review) == "table" then
          M.waiting = tonumber(status.review.waiting)
        end
      end)
      return
    end
    -- Said once, at the first attempt: a daemon that goes away later is retried quietly
    -- (a restart), and a command run meanwhile says it is missing.
    if first_attempt and err.reason == "unavailable" then
      notify.missing(err.path, err.detail)
    elseif first_attempt and err.reason ~= "broken" then
      notify.show("cannot subscribe to reminders: " .. err.message, vim.log.levels.WARN)
    end
    first_attempt = false
    if err.reason ~= "unavailable" then
      connection:close() -- a timeout or a refusal: start again from a fresh connection
    end
    retry_later()
  end)
end

--- Subscribe (once); reminders are then shown until stop().
function M.start()
  if started then
    return
  end
  started = true
  first_attempt = true
  attempts = 0
  connection = client.connect({
    on_notification = on_notification,
    on_close = function()
      retry_later()
    end,
  })
  subscribe()
end

--- Unsubscribe: the connection is closed and no retry is left pending.
function M.stop()
  started = false
  M.subscribed = false
  M.waiting = nil
  if timer then
    timer:stop()
  end
  if connection then
    connection:close()
    connection = nil
  end
end

function M.started()
  return started
end

return M
