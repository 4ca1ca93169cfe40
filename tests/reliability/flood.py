"""Connection floods: many processes holding many connections, idle or abusive,
while a well-behaved client connects afresh for every recall. Shared by the suite
(tests/reliability/test_flood.py) and ``bench/stress/flood.py``.

A flooding process, run as its own process (the daemon caps connections per process):

    python -m tests.reliability.flood SOCKET KIND COUNT

opens COUNT connections of one KIND, says on stdout how many it holds and how many
the daemon refused (its per-process cap answers one ``unavailable`` line, then closes),
and holds them until its stdin closes:

- *idle*: connects and says nothing;
- *half*: half a frame, then nothing;
- *garbage*: a line that is not JSON, then nothing (it never reads the reply);
- *unread*: 10 recalls it never reads the replies of.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness.stats import percentile

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("idle", "half", "garbage", "unread")
HALF = b'{"jsonrpc":"2.0","method":"memory.recall","params":{"query":"dep'
RECALL = b'{"jsonrpc":"2.0","method":"memory.recall","params":{"query":"deploy cache"},"id":1}\n'
SETTLE_S = 4.0  # how long a flooder waits for the daemon's refusals


def _first_words(kind: str) -> bytes:
    return {
        "idle": b"",
        "half": HALF,
        "garbage": b"\x00\xffnot json at all {]\n",
        "unread": RECALL * 10,
    }[kind]


def hold(path: str, kind: str, count: int) -> None:
    """The flooding process: open, report, hold until stdin closes."""
    held: list[socket.socket] = []
    refused = 0
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            refused += 1
            continue
        with contextlib.suppress(OSError):
            sock.sendall(_first_words(kind))
        held.append(sock)
    capped = _refused_by_the_cap(held)
    print(
        json.dumps({"held": len(held) - capped, "refused": refused, "capped": capped}), flush=True
    )
    sys.stdin.read()
    for sock in held:
        sock.close()


def _refused_by_the_cap(held: list[socket.socket]) -> int:
    """Connections the daemon answered with its per-process refusal and closed."""
    capped, looked = 0, set()
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        waiting = [s for s in held if s.fileno() not in looked]
        ready, _, _ = select.select(waiting, [], [], 0.2)
        for sock in ready:
            looked.add(sock.fileno())
            try:
                data = sock.recv(1 << 16, socket.MSG_PEEK)
            except OSError:
                data = b""
            capped += b"connections to hikmahd" in data or not data
    return capped


@dataclass
class Flood:
    """Flooding processes, each holding its connections until :meth:`close`."""

    socket: Path
    plan: list[tuple[str, int]]  # (kind, connections) per process
    reports: list[dict[str, int]] = field(default_factory=list)
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    def open(self) -> Flood:
        for kind, count in self.plan:
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.reliability.flood",
                        str(self.socket),
                        kind,
                        str(count),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=ROOT,
                )
            )
        for process in self.processes:
            assert process.stdout is not None
            self.reports.append(json.loads(process.stdout.readline()))
        return self

    def close(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
        for process in self.processes:
            process.wait(timeout=60)
            assert process.stdout is not None
            process.stdout.close()

    def total(self, what: str) -> int:
        return sum(report[what] for report in self.reports)


@contextlib.contextmanager
def flooded(socket_path: Path, plan: list[tuple[str, int]]) -> Iterator[Flood]:
    flood = Flood(socket_path, plan)
    try:
        yield flood.open()
    finally:
        flood.close()


@dataclass
class Visits:
    """A well-behaved client that connects afresh for each recall and never retries a
    connect (as the Neovim plugin and scripts do): refused connects, and latencies."""

    refused: int = 0
    seconds: list[float] = field(default_factory=list)

    def run(self, path: Path, count: int) -> Visits:
        for _ in range(count):
            started = time.perf_counter()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(30)
            try:
                sock.connect(str(path))
            except OSError:
                self.refused += 1
                sock.close()
                continue
            with sock, sock.makefile("rb") as reader:
                sock.sendall(RECALL)
                reply = json.loads(reader.readline())
                assert "result" in reply, reply
            self.seconds.append(time.perf_counter() - started)
        return self

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def summary(self) -> dict[str, Any]:
        return {
            "connects": len(self.seconds) + self.refused,
            "refused": self.refused,
            "median_ms": round(self.median * 1000, 2),
            "p99_ms": round(percentile(self.seconds, 99) * 1000, 2),
        }


def plan_of(
    processes: int, per_process: int, kinds: tuple[str, ...] = KINDS
) -> list[tuple[str, int]]:
    """``processes`` flooders, of ``kinds`` in turn, each holding ``per_process``."""
    return [(kinds[n % len(kinds)], per_process) for n in range(processes)]


if __name__ == "__main__":
    hold(sys.argv[1], sys.argv[2], int(sys.argv[3]))
