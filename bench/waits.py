"""Where a person or an agent waits on the daemon, beside what the same call costs once
nothing is in its way.

- A new connection for one call: ``daemon.status`` on a connection of its own (the
  client's ``socket`` and ``connect`` included, as every CLI call pays them) against
  the same call on a connection kept open, taking turns; medians.
- The first answers after a restart: the moment the socket accepts, one client sends
  ``daemon.status`` and ``memory.recall`` together (what an agent's session-start
  hook asks first), and each reply's arrival is timed from that moment; against the
  same two calls once the daemon has settled (its vectors loaded, its queue read).
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATUS = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{}}\n'


def recall_line(query: str, request_id: int = 2) -> bytes:
    params = {"query": query, "limit": 10}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "memory.recall", "params": params}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


@dataclass
class ConnectTiming:
    calls: int
    kept_ms: float  # median, the call on a kept connection
    new_ms: float  # median, connect + the call + close


class Line:
    """One connection, one request in flight."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(str(path))
        self.replies = self.sock.makefile("rb")

    def call(self, line: bytes) -> dict[str, Any]:
        self.sock.sendall(line)
        return _checked(self.replies.readline())

    def close(self) -> None:
        self.replies.close()
        self.sock.close()


def connection_overhead(path: Path, calls: int) -> ConnectTiming:
    """``calls`` status calls each way, taking turns."""
    kept: list[float] = []
    new: list[float] = []
    held = Line(path)
    for _ in range(calls):
        began = time.perf_counter()
        held.call(STATUS)
        kept.append(time.perf_counter() - began)
        began = time.perf_counter()
        line = Line(path)
        line.call(STATUS)
        line.close()
        new.append(time.perf_counter() - began)
    held.close()
    return ConnectTiming(calls, statistics.median(kept) * 1e3, statistics.median(new) * 1e3)


@dataclass
class FirstAnswers:
    status_s: float  # from the socket accepting to the reply
    recall_s: float


def first_answers(path: Path, query: str, accepted: float) -> FirstAnswers:
    """Status and recall sent together on one new connection; each reply's arrival,
    in seconds since ``accepted`` (a ``time.monotonic`` reading)."""
    arrived: dict[int, float] = {}
    line = Line(path)
    line.sock.sendall(STATUS + recall_line(query))
    while len(arrived) < 2:
        reply = _checked(line.replies.readline())
        arrived[reply["id"]] = time.monotonic() - accepted
    line.close()
    return FirstAnswers(arrived[1], arrived[2])


def settled_answers(path: Path, query: str, rounds: int) -> FirstAnswers:
    """The same two calls on a settled daemon, each on a kept connection; medians."""
    status: list[float] = []
    recall: list[float] = []
    held = Line(path)
    for _ in range(rounds):
        for line, times in ((STATUS, status), (recall_line(query), recall)):
            began = time.perf_counter()
            held.call(line)
            times.append(time.perf_counter() - began)
    held.close()
    return FirstAnswers(statistics.median(status), statistics.median(recall))


def _checked(line: bytes) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(line)
    if "result" not in reply:
        raise RuntimeError(f"the daemon refused a call: {line[:300]!r}")
    return reply
