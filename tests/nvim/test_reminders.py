"""reminder.due in the editor: through vim.notify, WARN before the deadline, ERROR after."""

from __future__ import annotations

import time

from tests.harness.daemon import Running
from tests.harness.nvim import Nvim

WARN, ERROR = 3, 4  # vim.log.levels


def test_reminders_arrive_through_vim_notify_at_their_level(daemon: Running, nvim: Nvim) -> None:
    done = nvim.run(
        """
        local events = require("hikmah.events")
        require("hikmah").setup({})
        T.wait(5000, function() return events.subscribed end, "subscribed")
        -- Past its deadline: overdue at once. Due in 10 min, inside the 30 min lead: lead at once.
        T.call("memory.remember", { content = "Post the release notes to eng",
          kind = "commitment", deadline = os.time() * 1000 - 5 * 60000 })
        T.call("memory.remember", { content = "Hand the pager to Omar",
          kind = "commitment", deadline = "+10m" })
        T.wait(5000, function() return events.count == 2 end, "two reminders")
        T.data.shown = vim.deepcopy(T.notes)
        -- setup() again: a new subscription, which first replays the recent reminders
        require("hikmah").setup({})
        T.wait(5000, function() return events.received == 4 end, "the replay")
        vim.wait(200)
        T.data.received = events.received
        """,
        socket=daemon.socket,
    )
    shown = {note["level"]: note["msg"] for note in done["data"]["shown"]}
    assert set(shown) == {WARN, ERROR}
    overdue, lead = shown[ERROR], shown[WARN]
    assert (
        overdue.startswith("Hikmah: overdue since ")
        and "(5m ago): Post the release notes to eng [tr_" in overdue
    )
    assert lead.startswith("Hikmah: due in 10m (") and "): Hand the pager to Omar [tr_" in lead
    due = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 600))
    assert f"({due} " in lead
    assert done["data"]["received"] == 4
    assert len(done["notes"]) == 2  # the replayed two were not shown again


def test_reminders_off(daemon: Running, nvim: Nvim) -> None:
    done = nvim.run(
        """
        require("hikmah").setup({ reminders = false })
        local _, status = T.call("daemon.status")
        T.data.subscribers = status.subscribers
        """,
        socket=daemon.socket,
    )
    assert done["data"]["subscribers"] == 0
