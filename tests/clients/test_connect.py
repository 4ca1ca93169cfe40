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

from hikmah_client.connection import BUSY_RETRY_S, connect, started_at


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


# A process whose main thread has ended while another thread runs on: its state reads
# zombie (as a daemon's does while its last threads wind down at exit), yet it runs.
MAIN_THREAD_ENDS = """
import ctypes, sys, threading, time
threading.Thread(target=time.sleep, args=(float(sys.argv[1]),)).start()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def test_a_process_is_running_until_its_last_thread_ends() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", MAIN_THREAD_ENDS, "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        started = started_at(child.pid)
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)  # the main thread is gone: the leader reads as a zombie
        assert child.poll() is None  # not reapable: its other thread runs
        assert started is not None and started_at(child.pid) == started
        child.wait(timeout=10)
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert started_at(child.pid) is None
