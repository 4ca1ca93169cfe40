"""The reminder timer's lateness, as ``bench/reminders.py`` measures it: commitments
written with exact deadlines, one subscriber stamping each ``reminder.due`` as it
arrives, and forked clients recalling in a closed loop meanwhile (or none: idle)."""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing
import multiprocessing.connection
import random
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from servers import OK_PREFIX, Daemon, call_many
from workload import TAGS, zipf_words

from tests.harness.stats import percentile

SEED = 7
TAIL_S = 0.5  # clients go on this long after the last deadline
ARRIVAL_TIMEOUT_S = 10.0


def request(method: str, params: dict[str, Any], request_id: int) -> bytes:
    message = {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def prefill_notes(path: Path, count: int) -> None:
    rng = random.Random(SEED)
    lines = [
        request(
            "memory.remember",
            {"content": " ".join(zipf_words(rng, rng.randint(6, 12))), "tags": rng.sample(TAGS, 2)},
            i,
        )
        for i in range(count)
    ]
    call_many(path, lines)


def write_commitments(
    path: Path, label: str, count: int, span_ms: int, lead_s: float
) -> dict[str, int]:
    """``count`` commitments due uniformly over ``span_ms`` from ``lead_s`` on; id -> deadline."""
    rng = random.Random(f"{SEED}-{label}")
    first = time.time_ns() // 1_000_000 + int(lead_s * 1000)
    deadlines = sorted(first + rng.randint(0, span_ms) for _ in range(count))
    lines = [
        request(
            "memory.remember",
            {"content": f"{label} reminder {i}", "kind": "commitment", "deadline": deadline},
            i,
        )
        for i, deadline in enumerate(deadlines)
    ]
    results = call_many(path, lines)
    return {r["trace"]["id"]: r["trace"]["deadline"] for r in results}


def fulfill_all(path: Path, ids: list[str]) -> None:
    call_many(path, [request("memory.fulfill", {"id": i}, n) for n, i in enumerate(ids)])


@dataclass
class Arrival:
    at_ms: float  # time.time() on arrival, in ms
    due_at: int
    stage: str
    late: bool


class Subscriber:
    """One connection subscribed to events; a thread stamps each ``reminder.due``."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.sock.sendall(b'{"jsonrpc":"2.0","method":"events.subscribe","id":1}\n')
        self.reader = self.sock.makefile("rb")
        reply = self.reader.readline()
        if b'"subscribed":true' not in reply:
            raise RuntimeError(f"events.subscribe failed: {reply[:300]!r}")
        self.arrivals: dict[str, Arrival] = {}
        self.repeats = 0
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in self.reader:
                at_ms = time.time_ns() / 1e6
                if b'"reminder.due"' not in line:
                    continue
                params = json.loads(line)["params"]
                arrival = Arrival(at_ms, params["due_at"], params["stage"], params["late"])
                with self._changed:
                    trace_id = params["trace"]["id"]
                    if trace_id in self.arrivals:
                        self.repeats += 1
                    else:
                        self.arrivals[trace_id] = arrival
                    self._changed.notify_all()

    def wait_for(self, ids: set[str], timeout: float) -> dict[str, Arrival]:
        """The arrivals of ``ids``, once all came or ``timeout`` passed."""
        with self._changed:
            self._changed.wait_for(lambda: ids <= self.arrivals.keys(), timeout)
            return {i: self.arrivals[i] for i in ids if i in self.arrivals}

    def repeated(self) -> int:
        """How many reminders arrived more than once so far."""
        with self._changed:
            return self.repeats

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)


@dataclass
class RecallResult:
    in_window: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    total: int = 0
    errors: int = 0
    first_error: str | None = None

    def add(self, other: RecallResult) -> None:
        self.in_window += other.in_window
        self.latencies_ms += other.latencies_ms
        self.total += other.total
        self.errors += other.errors
        self.first_error = self.first_error or other.first_error


# (stop at, count from, count until): wall-clock ns
Command = tuple[int, int, int]


def recall_loop(path: str, client: int, command: Command) -> RecallResult:
    """Recall in a closed loop until the stop time; count replies inside the window."""
    end_ns, window_start_ns, window_end_ns = command
    rng = random.Random(SEED * 1000 + client)
    result = RecallResult()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        replies = sock.makefile("rb", buffering=1 << 16)
        for i in itertools.count():
            if time.time_ns() >= end_ns:
                break
            sock.sendall(request("memory.recall", {"query": " ".join(zipf_words(rng, 3))}, i))
            began = time.perf_counter_ns()
            reply = replies.readline()
            done = time.time_ns()
            result.total += 1
            if not reply.startswith(OK_PREFIX):
                result.errors += 1
                result.first_error = result.first_error or reply[:300].decode(errors="replace")
            if window_start_ns <= done <= window_end_ns:
                result.in_window += 1
                result.latencies_ms.append((time.perf_counter_ns() - began) / 1e6)
    return result


def recall_worker(path: str, client: int, commands: multiprocessing.connection.Connection) -> None:
    """A pooled client process: one recall loop per command, until ``None``."""
    while (command := commands.recv()) is not None:
        try:
            commands.send(recall_loop(path, client, command))
        except OSError as exc:
            commands.send(RecallResult(errors=1, first_error=f"client {client}: {exc!r}"))


class RecallPool:
    """``clients`` forked processes, started before any thread exists in this one."""

    def __init__(self, path: Path, clients: int) -> None:
        context = multiprocessing.get_context("fork")
        self.workers = []
        for client in range(clients):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=recall_worker, args=(str(path), client, theirs), daemon=True
            )
            process.start()
            theirs.close()
            self.workers.append((process, ours))

    def start(self, command: Command) -> None:
        for _, pipe in self.workers:
            pipe.send(command)

    def collect(self, timeout: float) -> RecallResult:
        merged = RecallResult()
        for _, pipe in self.workers:
            if not pipe.poll(timeout):
                raise RuntimeError("a recall client did not report in time")
            merged.add(pipe.recv())
        return merged

    def close(self) -> None:
        for process, pipe in self.workers:
            with contextlib.suppress(OSError):
                pipe.send(None)
            process.join(5)
            if process.is_alive():
                process.kill()


@dataclass
class LatenessRow:
    load: str
    clients: int
    expected: int
    received: int
    repeats: int
    marked_late: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    recall_per_s: float | None
    recall_p50_ms: float | None
    recall_p99_ms: float | None
    daemon_cpu_pct: float
    recall_errors: int = 0
    first_error: str | None = None


def lateness_run(
    daemon: Daemon,
    subscriber: Subscriber,
    pool: RecallPool | None,
    label: str,
    reminders: int,
    span_s: float,
    lead_s: float,
) -> LatenessRow:
    """Write the run's commitments, load the daemon (or not), wait for every reminder."""
    due = write_commitments(daemon.socket, label, reminders, int(span_s * 1000), lead_s)
    first_ms, last_ms = min(due.values()), max(due.values())
    end_ns = (last_ms + int(TAIL_S * 1000)) * 1_000_000
    cpu, began = daemon.cpu_seconds(), time.monotonic()
    if pool is not None:
        pool.start((end_ns, first_ms * 1_000_000, last_ms * 1_000_000))
    recalls = pool.collect(span_s + 60) if pool is not None else None
    arrivals = subscriber.wait_for(
        set(due), ARRIVAL_TIMEOUT_S + max(0.0, end_ns / 1e9 - time.time())
    )
    cpu_pct = 100 * (daemon.cpu_seconds() - cpu) / (time.monotonic() - began)
    late = [a.at_ms - a.due_at for a in arrivals.values()]
    window_s = (last_ms - first_ms) / 1000
    repeats = subscriber.repeated()
    return LatenessRow(
        load=label,
        clients=0 if pool is None else len(pool.workers),
        expected=len(due),
        received=len(arrivals),
        repeats=repeats,
        marked_late=sum(a.late for a in arrivals.values()),
        p50_ms=percentile(late, 50),
        p99_ms=percentile(late, 99),
        max_ms=max(late, default=float("nan")),
        recall_per_s=None if recalls is None else recalls.in_window / window_s,
        recall_p50_ms=None if recalls is None else percentile(recalls.latencies_ms, 50),
        recall_p99_ms=None if recalls is None else percentile(recalls.latencies_ms, 99),
        daemon_cpu_pct=cpu_pct,
        recall_errors=0 if recalls is None else recalls.errors,
        first_error=None if recalls is None else recalls.first_error,
    )
