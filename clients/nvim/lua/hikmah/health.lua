-- :checkhealth hikmah — the socket, the daemon's version, one round trip, and what is
-- wrong when something is. The only place the plugin waits (vim.wait, bounded): a health
-- report is written synchronously.

local config = require("hikmah.config")
local events = require("hikmah.events")
local rpc = require("hikmah.rpc")

local uv = vim.uv or vim.loop

local M = {}

-- Neovim 0.9+ has vim.health.start/ok/…; 0.8 has vim.health.report_*; 0.7 has require("health").
local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local info = health.info or health.report_info
local warn = health.warn or health.report_warn
local fail = health.error or health.report_error

local START_ADVICE = {
  "Start it in a terminal: `hikmahd` (or `hikmah status`, which starts it).",
  "Or the systemd user socket: `hikmah setup systemd`, then the commands it prints.",
  "Check that the editor and the daemon agree on HIKMAH_SOCKET / XDG_RUNTIME_DIR.",
}

--- One request on `conn`, waited for at most `timeout_ms`; the reply, the error, and ms.
local function wait_for(conn, method, timeout_ms)
  local done, err, result = false, nil, nil
  local began = uv.hrtime()
  conn:request(method, nil, function(e, r)
    done, err, result = true, e, r
  end, timeout_ms)
  vim.wait(timeout_ms + 500, function()
    return done
  end, 5)
  if not done then
    err = { reason = "timeout", message = "no reply within " .. timeout_ms .. " ms" }
  end
  return err, result, (uv.hrtime() - began) / 1e6
end

function M.check()
  start("hikmah.nvim")
  if vim.json == nil or uv.new_pipe == nil then
    fail("this Neovim lacks vim.json or libuv pipes; hikmah.nvim needs Neovim 0.7 or newer")
    return
  end
  local path, origin = config.socket_path()
  info(string.format("socket: %s (from %s)", path, origin))

  local stat = uv.fs_stat(path)
  if stat == nil then
    fail("no socket at " .. path .. ": hikmahd is not running there", START_ADVICE)
    return
  end
  if stat.type ~= "socket" then
    fail(path .. " exists but is a " .. stat.type .. ", not a socket")
    return
  end

  local timeout = config.options.timeout_ms
  local conn = rpc.new({
    path = function()
      return path
    end,
    timeout_ms = timeout,
  })
  local err, status, first_ms = wait_for(conn, "daemon.status", timeout)
  if err then
    conn:close()
    if err.reason == "unavailable" then
      fail(string.format("nothing answers at %s (%s)", path, err.detail or "?"), START_ADVICE)
    else
      fail("daemon.status failed: " .. err.message)
    end
    return
  end
  ok(
    string.format(
      "hikmahd %s answers (pid %d, up %.0f s)",
      status.version,
      status.pid,
      status.uptime_s
    )
  )
  local again, _, round_trip_ms = wait_for(conn, "daemon.status", timeout)
  conn:close()
  if again then
    warn("a second daemon.status failed: " .. again.message)
  else
    ok(
      string.format(
        "round trip: %.2f ms (first request, with connect: %.2f ms)",
        round_trip_ms,
        first_ms
      )
    )
  end

  local counts = status.counts or {}
  info(
    string.format(
      "store: %d active, %d superseded, %d fulfilled; %d commitments scheduled, %d overdue",
      counts.active or 0,
      counts.superseded or 0,
      counts.fulfilled or 0,
      status.reminders and status.reminders.scheduled or 0,
      status.reminders and status.reminders.overdue or 0
    )
  )
  if status.policy and status.policy.error then
    warn("the policy file did not load, the previous policy stays: " .. status.policy.error)
  end
  if status.principal then
    warn(
      string.format(
        "the daemon takes this editor for a %s agent session: writes are stamped,"
          .. " verified is refused",
        tostring(status.principal.host)
      ),
      { "Run Neovim from a terminal without coding-agent variables to write as a person." }
    )
  end

  if not config.options.reminders then
    info("reminders are off (setup{ reminders = false })")
  elseif not events.started() then
    warn("reminders are not subscribed: call require('hikmah').setup() in your config")
  elseif events.subscribed then
    ok("subscribed to reminders (reminder.due → vim.notify)")
  else
    warn("reminders are not subscribed yet; the plugin retries by itself")
  end
end

return M
