-- Person presence: the passphrase, asked with inputsecret() (never echoed, never stored),
-- proven over the editor's connection; the daemon binds the proof to this terminal and
-- the shell that started the editor (docs/security.md, "Person presence").

local display = require("hikmah.display")
local notify = require("hikmah.notify")

local M = {}

M.PROMPT = "Hikmah passphrase: "

--- Ask for the passphrase to confirm `action` and prove it; `done(true, once)` once the
--- daemon took it, `once` when the proof holds for this one action (the editor ends it
--- after: the next action asks again).
---@param action string what is being confirmed, e.g. "memory.remember (verified)"
---@param done fun(proved: boolean, once: boolean|nil)
function M.prove(action, done)
  local question = "Confirm " .. display.visible(action) .. ". " .. M.PROMPT
  local asked, secret = pcall(vim.fn.inputsecret, question)
  if not asked or secret == nil or secret == "" then
    notify.show("no passphrase given: nothing was done", vim.log.levels.WARN)
    return done(false)
  end
  require("hikmah.client").call("presence.prove", { passphrase = secret }, function(err, ticket)
    if err then
      notify.failure(err, "presence")
      return done(false)
    end
    done(true, ticket.expires_at == nil or ticket.expires_at == vim.NIL)
  end)
end

return M
