-- Person presence: the passphrase, asked with inputsecret() (never echoed, never stored),
-- proven over the editor's connection; the daemon binds the proof to this terminal and
-- the shell that started the editor (docs/security.md, "Person presence").

local notify = require("hikmah.notify")

local M = {}

M.PROMPT = "Hikmah passphrase: "

--- Ask for the passphrase and prove it; `done(true)` once the daemon took it.
---@param done fun(proved: boolean)
function M.prove(done)
  local asked, secret = pcall(vim.fn.inputsecret, M.PROMPT)
  if not asked or secret == nil or secret == "" then
    notify.show("no passphrase given: nothing was done", vim.log.levels.WARN)
    return done(false)
  end
  require("hikmah.client").call("presence.prove", { passphrase = secret }, function(err)
    if err then
      notify.failure(err, "presence")
      return done(false)
    end
    done(true)
  end)
end

return M
