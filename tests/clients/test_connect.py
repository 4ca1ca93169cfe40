"""Connecting while the daemon's listen backlog is full: the CLI waits briefly, then
says the daemon is busy, not that none runs.

A listening Unix socket that nobody accepts from, with a backlog of 0, provokes it:
Linux queues one connection, then refuses the next at once with EAGAIN.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from hikmah_cli.client import BUSY_RETRY_S, connect


@contextmanager
def full_backlog(path: Path) -> Iterator[socket.socket]:
    """A listener at ``path`` whose backlog is full until someone accepts from it."""
    with ExitStack() as stack:
        listener = stack.enter_context(socket.socket(socket.AF_UNIX))
        listener.bind(str(path))
        listener.listen(0)
        for _ in range(16):
            queued = stack.enter_context(socket.socket(socket.AF_UNIX))
            queued.setblocking(False)
            try:
                queued.connect(str(path))
            except BlockingIOError:
                yield listener
                return
        raise AssertionError("the listen backlog never filled")


def test_a_full_backlog_is_reported_as_busy_after_a_bounded_wait(short_tmp: Path) -> None:
    path = short_tmp / "busy.sock"
    with full_backlog(path):
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "hikmah_cli", "--socket", str(path), "--no-autostart",
             "status"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        waited = time.monotonic() - started
    assert result.returncode == 5, result.stderr
    assert "running but busy" in result.stderr and "no hikmahd answers" not in result.stderr
    assert waited >= BUSY_RETRY_S * 0.8, waited


def test_a_backlog_that_frees_up_within_the_wait_connects(short_tmp: Path) -> None:
    path = short_tmp / "busy.sock"
    with full_backlog(path) as listener:
        accepted: list[socket.socket] = []

        def accept_later() -> None:
            time.sleep(BUSY_RETRY_S / 4)
            accepted.append(listener.accept()[0])

        freer = threading.Thread(target=accept_later)
        freer.start()
        try:
            client = connect(path, autostart=False, daemon_args=[])
            client.close()
        finally:
            freer.join()
            for conn in accepted:
                conn.close()
