"""A short run: 1,000 connections held open by 20 processes (idle, half
frames, garbage), and one runaway process past the per-process cap, while a
well-behaved client connects afresh for each recall and never retries a connect. None
of its connects is refused, its latency stays within a small factor of its idle
latency measured in the same test, the runaway holds exactly the cap, and the daemon's
descriptors come back once the flood leaves. Then 1,000 connections that queue
recalls and never read the replies: the daemon does the work they ask for (one
recall at a time, readers first), so the good client is slowed more, never refused.

``bench/stress/flood.py`` runs it longer and prints the figures (docs/reliability.md).
"""

from __future__ import annotations

from hikmahd.daemon import MAX_CONNECTIONS_PER_PROCESS
from hikmahd.listen import system_backlog
from tests.harness.daemon import Running

from .crashes import fill
from .flood import Visits, flooded, plan_of
from .harness import Book, fds_back_to, open_fds, steady_fds

FACTOR = 5  # a fresh connection costs an identification; the machine has two cores
FLOOR_S = 0.01
# 10,000 queued recalls keep the one recall turn busy: the good one waits for the
# one under way (theirs run in a worker thread, so the loop and its identification
# are not held up: about 2x idle in bench/stress/flood.py, 13-17x before).
UNREAD_FACTOR = 10
PROCESSES, PER_PROCESS = 20, 50
HOLDERS = ("idle", "half", "garbage")


def test_a_thousand_connections_neither_refuse_nor_slow_a_good_client(daemon: Running) -> None:
    assert daemon.process is not None
    pid = daemon.process.pid
    fill(daemon, Book(), 500, "flood")
    base_fds = steady_fds(pid)
    idle = Visits().run(daemon.socket, 60)
    runaway = 3 * MAX_CONNECTIONS_PER_PROCESS
    plan = plan_of(PROCESSES, PER_PROCESS, HOLDERS)
    with flooded(daemon.socket, [*plan, ("idle", runaway)]) as flood:
        assert flood.total("refused") == 0, flood.reports  # no connect failed (backlog)
        assert flood.reports[-1] == {
            "held": MAX_CONNECTIONS_PER_PROCESS,
            "refused": 0,
            "capped": runaway - MAX_CONNECTIONS_PER_PROCESS,
        }, flood.reports[-1]
        assert flood.total("held") == PROCESSES * PER_PROCESS + MAX_CONNECTIONS_PER_PROCESS
        assert open_fds(pid) >= base_fds + PROCESSES * PER_PROCESS
        loaded = Visits().run(daemon.socket, 60)
    assert loaded.refused == 0, loaded.summary()
    assert loaded.median <= max(FACTOR * idle.median, FLOOR_S), (idle.summary(), loaded.summary())
    assert fds_back_to(pid, base_fds, timeout=60) <= base_fds


def test_a_thousand_connections_that_never_read_do_not_refuse_a_good_client(
    daemon: Running,
) -> None:
    fill(daemon, Book(), 500, "flood")
    idle = Visits().run(daemon.socket, 40)
    with flooded(daemon.socket, plan_of(PROCESSES, PER_PROCESS, ("unread",))) as flood:
        assert flood.total("refused") == 0 and flood.total("held") == PROCESSES * PER_PROCESS
        loaded = Visits().run(daemon.socket, 40)
    assert loaded.refused == 0, loaded.summary()
    assert loaded.median <= UNREAD_FACTOR * idle.median, (idle.summary(), loaded.summary())


def test_the_listen_backlog_is_the_systems() -> None:
    from pathlib import Path

    assert system_backlog() >= int(Path("/proc/sys/net/core/somaxconn").read_text())
