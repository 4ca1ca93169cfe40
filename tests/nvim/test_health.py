""":checkhealth hikmah, with a daemon and without one."""

from __future__ import annotations

from pathlib import Path

from tests.harness.daemon import Running
from tests.harness.nvim import Nvim

CHECK = """
require("hikmah").setup({})
if T.daemon then
  T.wait(5000, function() return require("hikmah.events").subscribed end, "subscribed")
else
  T.wait(5000, function() return #T.notes == 1 end, "the missing daemon's message")
end
vim.cmd("checkhealth hikmah")
T.data.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.wait(100)
"""


def test_checkhealth_reports_the_daemon_and_a_round_trip(
    daemon: Running, nvim: Nvim, short_tmp: Path
) -> None:
    healthy = nvim.start("T.daemon = true\n" + CHECK, socket=daemon.socket)
    missing = nvim.start(CHECK, socket=short_tmp / "none.sock")
    report = "\n".join(healthy.result()["data"]["lines"])
    assert f"socket: {daemon.socket} (from $HIKMAH_SOCKET)" in report
    assert "OK" in report and "hikmahd 0.1.0 answers (pid " in report
    assert "round trip: " in report and " ms (first request, with connect: " in report
    assert "subscribed to reminders" in report
    assert "ERROR" not in report and "WARNING" not in report

    done = missing.result()
    report = "\n".join(done["data"]["lines"])
    assert "ERROR" in report and f"no socket at {short_tmp / 'none.sock'}" in report
    assert "`hikmahd`" in report
    assert len(done["notes"]) == 1  # the reminders' message at setup(); checkhealth adds none
