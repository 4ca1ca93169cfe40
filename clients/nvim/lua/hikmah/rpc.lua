-- One JSON-RPC 2.0 connection to hikmahd over its Unix socket (a libuv pipe).
--
-- Nothing here blocks: a request returns at once and its callback runs later on the main
-- loop, with either a result or an error, exactly once, within its timeout. The connection
-- is opened by the first request (lazily) and opened again by the next request after it
-- broke, so a daemon restart costs nothing but the requests in flight at that moment.
--
-- Errors handed to callbacks are tables { reason, message, code?, data? }: `reason` is the
-- daemon's data.reason for its refusals, or one of these for failures on this side:
--   unavailable  no daemon answers at the socket (connect failed; `path` and `detail`,
--                e.g. "ENOENT: no socket there", are set too)
--   broken       the connection closed before the reply came
--   timeout      no reply within the timeout (the connection stays open)
--   too_large    the request would be over the daemon's 1 MiB frame limit
--   closed       close() was called while the request waited
--   invalid      the params cannot be encoded as JSON

local uv = vim.uv or vim.loop
local lines = require("hikmah.lines")

local M = {}

M.MAX_FRAME = 1048576 -- bytes, without the newline (docs/protocol.md, Framing)
M.MAX_REPLY = 64 * 1048576 -- a reply longer than this is not a reply: the connection is dropped
M.DEFAULT_TIMEOUT_MS = 5000

-- Safe to send again after the connection broke before their reply: they write nothing.
local READS = {
  ["memory.recall"] = true,
  ["memory.show"] = true,
  ["memory.conflicts"] = true,
  ["memory.context"] = true,
  ["promises.list"] = true,
  ["daemon.status"] = true,
  ["policy.get"] = true,
  ["focus.list"] = true,
}

-- What a failed connect means, for people (libuv gives the bare code, e.g. "ENOENT").
local CONNECT_ERRORS = {
  ENOENT = "no socket there",
  ECONNREFUSED = "a socket file but nothing listening: a stale socket",
  EACCES = "permission denied",
  ENOTDIR = "a path component is not a directory",
}

--- libuv's connect error, with what it means when that is known.
function M.explain(err)
  local code = tostring(err):match("^(E%u+)")
  local meaning = code and CONNECT_ERRORS[code]
  if meaning and not tostring(err):find(meaning, 1, true) then
    return code .. ": " .. meaning
  end
  return tostring(err)
end

local last_id = 0 -- ids are unique across connections, so a stale reply can never match

local Connection = {}
Connection.__index = Connection

--- A connection; nothing is opened until the first request.
---
---@param opts table
---  path: fun(): string           the socket, asked at each (re)connect
---  timeout_ms: integer|nil        default timeout of a request
---  on_connect: fun(conn)|nil      after each successful connect, before queued requests go
---  on_unavailable: fun(path, why)|nil  a connect failed (why: e.g. "ENOENT: no socket there")
---  on_close: fun(conn, why)|nil   an open connection was lost (not called by close())
---  on_notification: fun(method, params)|nil  a frame with `method` and no `id`
---  on_stray: fun(message)|nil     a reply whose id is null or matches nothing waiting
function M.new(opts)
  return setmetatable({
    opts = opts,
    state = "closed", -- closed | connecting | open
    pending = {}, -- id -> entry, until its callback ran
    queue = {}, -- entries waiting for the connect
    pipe = nil,
    path = nil,
  }, Connection)
end

local function run_callback(entry, err, result)
  local ok, failure = xpcall(entry.callback, debug.traceback, err, result)
  if not ok then
    vim.notify("Hikmah: a callback failed: " .. tostring(failure), vim.log.levels.ERROR)
  end
end

--- Send a request.
---
---@param method string
---@param params table|nil an object by name; nil or {} for none
---@param callback fun(err: table|nil, result: any) runs once, on the main loop
---@param timeout_ms integer|nil overrides the connection's default
---@return integer id
function Connection:request(method, params, callback, timeout_ms)
  last_id = last_id + 1
  local id = last_id
  local entry = { id = id, method = method, callback = callback, retry = READS[method] }
  if params == nil or next(params) == nil then
    -- An empty table encodes as `[]`; the daemon takes both, but say what we mean.
    params = vim.empty_dict()
  end
  local ok, frame =
    pcall(vim.json.encode, { jsonrpc = "2.0", method = method, params = params, id = id })
  if not ok then
    vim.schedule(function()
      run_callback(entry, { reason = "invalid", message = "cannot encode the request: " .. frame })
    end)
    return id
  end
  if #frame > M.MAX_FRAME then
    vim.schedule(function()
      run_callback(entry, {
        reason = "too_large",
        message = string.format(
          "the request is %d bytes, over the daemon's 1 MiB limit; nothing was sent",
          #frame
        ),
      })
    end)
    return id
  end
  entry.frame = frame .. "\n"
  entry.timer = uv.new_timer()
  local limit = timeout_ms or self.opts.timeout_ms or M.DEFAULT_TIMEOUT_MS
  entry.timer:start(limit, 0, function()
    vim.schedule(function()
      self:_finish(id, {
        reason = "timeout",
        message = string.format(
          "hikmahd at %s did not answer %s within %.1f s",
          self.path or "?",
          method,
          limit / 1000
        ),
      })
    end)
  end)
  self.pending[id] = entry
  self:_send(entry)
  return id
end

--- Close the connection; every request still waiting gets a `closed` error.
function Connection:close()
  local pipe = self.pipe
  self.pipe = nil
  self.state = "closed"
  self.queue = {}
  if pipe and not pipe:is_closing() then
    pipe:close()
  end
  for _, id in ipairs(self:_waiting_ids()) do
    self:_finish(
      id,
      { reason = "closed", message = "the request was cancelled (connection closed)" }
    )
  end
end

function Connection:_waiting_ids()
  local ids = vim.tbl_keys(self.pending)
  table.sort(ids)
  return ids
end

function Connection:_send(entry)
  if self.state == "open" then
    self:_write(entry)
    return
  end
  self.queue[#self.queue + 1] = entry
  if self.state == "closed" then
    self:_connect()
  end
end

function Connection:_write(entry)
  local pipe = self.pipe
  local function failed(err)
    vim.schedule(function()
      self:_lost(pipe, "write failed: " .. tostring(err))
    end)
  end
  local ok, started, err = pcall(pipe.write, pipe, entry.frame, function(write_err)
    if write_err then
      failed(write_err)
    end
  end)
  if not ok or started == nil then -- refused at once (luv returns nil, err)
    failed(ok and err or started)
  end
end

function Connection:_connect()
  self.state = "connecting"
  self.path = self.opts.path()
  local pipe = uv.new_pipe(false)
  self.pipe = pipe
  local ok, started, err = pcall(pipe.connect, pipe, self.path, function(connect_err)
    vim.schedule(function()
      self:_connected(pipe, connect_err)
    end)
  end)
  if not ok or started == nil then -- refused at once: the callback will not run
    local why = tostring(ok and err or started)
    vim.schedule(function()
      self:_connected(pipe, why)
    end)
  end
end

function Connection:_connected(pipe, err)
  if self.pipe ~= pipe then -- closed (or replaced) while connecting
    if not pipe:is_closing() then
      pipe:close()
    end
    return
  end
  if err then
    self.pipe = nil
    self.state = "closed"
    if not pipe:is_closing() then
      pipe:close()
    end
    local queued = self.queue
    self.queue = {}
    local why = M.explain(err)
    if self.opts.on_unavailable then
      self.opts.on_unavailable(self.path, why)
    end
    local failure = {
      reason = "unavailable",
      message = string.format("no hikmahd answers at %s (%s)", self.path, why),
      path = self.path,
      detail = why,
    }
    for _, entry in ipairs(queued) do
      self:_finish(entry.id, failure)
    end
    return
  end
  self.state = "open"
  local decoder = lines.new()
  pipe:read_start(function(read_err, chunk)
    -- libuv's thread-free callback: no editor API here, only bytes.
    if read_err or chunk == nil then
      vim.schedule(function()
        self:_lost(pipe, read_err or "the daemon closed the connection")
      end)
      return
    end
    local complete = decoder:feed(chunk)
    if decoder:pending() > M.MAX_REPLY then
      vim.schedule(function()
        self:_lost(pipe, "a reply over " .. M.MAX_REPLY .. " bytes")
      end)
      return
    end
    if #complete > 0 then
      vim.schedule(function()
        for _, line in ipairs(complete) do
          self:_dispatch(line)
        end
      end)
    end
  end)
  if self.opts.on_connect then
    self.opts.on_connect(self)
  end
  local queued = self.queue
  self.queue = {}
  for _, entry in ipairs(queued) do
    if self.pending[entry.id] and self.pipe == pipe then
      self:_write(entry)
    end
  end
end

function Connection:_lost(pipe, why)
  if self.pipe ~= pipe then
    return -- already handled, or an older connection
  end
  self.pipe = nil
  self.state = "closed"
  if not pipe:is_closing() then
    pipe:close()
  end
  local again = {}
  for _, id in ipairs(self:_waiting_ids()) do
    local entry = self.pending[id]
    if entry.retry and not entry.retried then
      entry.retried = true
      again[#again + 1] = entry
    else
      self:_finish(id, {
        reason = "broken",
        message = string.format(
          "the connection to hikmahd at %s closed before it answered %s (%s)",
          self.path,
          entry.method,
          why
        ),
      })
    end
  end
  if self.opts.on_close then
    self.opts.on_close(self, why)
  end
  -- Reads go once more on a fresh connection (the daemon may have restarted meanwhile).
  for _, entry in ipairs(again) do
    if self.pending[entry.id] then
      self:_send(entry)
    end
  end
end

function Connection:_dispatch(line)
  local ok, message = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok or type(message) ~= "table" then
    if self.opts.on_stray then
      self.opts.on_stray({ unparsable = line:sub(1, 200) })
    end
    return
  end
  if message.method ~= nil then
    if self.opts.on_notification then
      self.opts.on_notification(message.method, message.params or {})
    end
    return
  end
  local entry = message.id ~= nil and self.pending[message.id] or nil
  if entry == nil then
    if message.id == nil and self.opts.on_stray then
      self.opts.on_stray(message) -- e.g. "hikmahd serves only its own user", or a lost frame
    end
    return -- a late reply to a request that timed out
  end
  if message.error then
    local e = message.error
    local data = type(e.data) == "table" and e.data or {}
    self:_finish(entry.id, {
      code = e.code,
      message = e.message or "error",
      reason = data.reason,
      data = e.data,
    })
  else
    self:_finish(entry.id, nil, message.result)
  end
end

function Connection:_finish(id, err, result)
  local entry = self.pending[id]
  if entry == nil then
    return
  end
  self.pending[id] = nil
  if entry.timer then
    entry.timer:stop()
    if not entry.timer:is_closing() then
      entry.timer:close()
    end
  end
  run_callback(entry, err, result)
end

return M
