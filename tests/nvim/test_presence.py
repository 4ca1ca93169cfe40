"""Person presence from the editor: real headless Neovim, started by a shell in a real
pty (so that it has a terminal and a shell of its own), asked for the passphrase with
``inputsecret()`` when a verified write is refused with ``presence_required``, the prompt
naming the write; the passphrase is typed into Neovim's input as keys, the write is sent
again and lands. With ``ticket_seconds = 0`` the next verified write asks again."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.nvim import PLUGIN, nvim_binary
from tests.harness.terminals import PtyShell

PASSPHRASE = "correct horse battery"
DRIVER = """
vim.opt.runtimepath:prepend({plugin})
local out = {out}
local seen = {{}}
vim.notify = function(message) table.insert(seen, message) end
local asked = {{}}
local inputsecret = vim.fn.inputsecret
vim.fn.inputsecret = function(prompt)
  table.insert(asked, prompt)
  vim.api.nvim_feedkeys({typed} .. "\\r", "t", false)  -- the person types it
  return inputsecret(prompt)
end
local hikmah = require("hikmah")
hikmah.call("memory.remember", {{content = "checked in the editor", verified = true}}, function(err, result)
  hikmah.call("memory.remember", {{content = "and this too", verified = true}}, function(err2)
    local file = io.open(out, "w")
    file:write(vim.json.encode({{err = err, result = result, asked = asked, seen = seen,
                                 again = err2 == nil}}))
    file:close()
    vim.cmd("qall!")
  end)
end)
"""
ASKED = [
    "Confirm memory.remember: checked in the editor. Hikmah passphrase: ",
    "Confirm memory.remember: and this too. Hikmah passphrase: ",
]


def test_a_verified_write_from_neovim_asks_with_inputsecret(short_tmp: Path) -> None:
    (short_tmp / "policy.toml").write_text("[presence]\nticket_seconds = 0\n")
    daemon = Running(short_tmp).start()
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}", HIKMAH_SOCKET=str(daemon.socket),
                    XDG_CONFIG_HOME=str(short_tmp / "config"), XDG_DATA_HOME=str(short_tmp / "share"))  # fmt: skip
    shell = PtyShell(env, short_tmp)
    try:
        shell.set_passphrase(PASSPHRASE)
        out = short_tmp / "out.json"
        driver = short_tmp / "driver.lua"
        for typed, name in ((PASSPHRASE, "right"), ("not it at all", "wrong")):
            driver.write_text(DRIVER.format(plugin=json.dumps(str(PLUGIN)), out=json.dumps(str(out)),
                                            typed=json.dumps(typed)))  # fmt: skip
            nvim = shlex.join([nvim_binary(), "--headless", "-u", "NONE", "-i", "NONE",
                               "-c", f"luafile {driver}"])  # fmt: skip
            status, shown = shell.run(nvim, timeout=60)
            assert status == 0, shown
            got = json.loads(out.read_text())
            assert got["asked"] == ASKED, got  # each write asks, naming itself
            if name == "right":
                assert (
                    got.get("err") is None and got["result"]["trace"]["provenance"]["verified"]
                ), got
                assert got["again"], got
            else:
                assert got["err"]["reason"] == "presence_required", got
                assert any("wrong passphrase" in m for m in got["seen"]), got
            out.unlink()
            shell.run(f"{shlex.quote(bin_dir)}/hikmah --no-autostart presence --end")
    finally:
        shell.close()
        daemon.stop()
