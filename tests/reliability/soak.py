"""A well-behaved client measured while :mod:`tests.reliability.abusers` runs, with the
daemon's RSS and file descriptors sampled; shared by the suite (a few seconds, some
60 connections) and ``bench/stress/soak.py`` (minutes, 200 connections)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness.daemon import Running
from tests.harness.sockets import Conn

from .harness import fds_back_to, open_fds, rss_kib, steady_fds

ROOT = Path(__file__).resolve().parents[2]
QUERY = {"query": "deploy cache note", "limit": 10}


class Recaller:
    """A well-behaved client: one ``memory.recall`` at a time, each timed. A reply that
    takes longer than ``timeout`` counts as a timeout (and as ``timeout`` seconds);
    the client then reconnects, since a late reply would answer the next request."""

    def __init__(self, socket: Path, timeout: float = 30.0) -> None:
        self.socket, self.timeout = socket, timeout
        self.timeouts = 0
        self.conn = self._open()

    def _open(self) -> Conn:
        conn = Conn(self.socket)
        conn.sock.settimeout(self.timeout)
        return conn

    def __enter__(self) -> Recaller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.sock.close()

    def latencies(self, count: int, *, until: float | None = None) -> list[float]:
        """Seconds per round trip, ``count`` of them (or until ``until``)."""
        out = []
        for _ in range(count):
            if until is not None and time.monotonic() > until:
                break
            started = time.perf_counter()
            try:
                self.conn.call("memory.recall", **QUERY)
            except TimeoutError:
                self.timeouts += 1
                self.conn.sock.close()
                self.conn = self._open()
            out.append(time.perf_counter() - started)
        return out


@dataclass
class Samples:
    """(seconds since start, RSS KiB, open fds) every ``every`` seconds."""

    pid: int
    every: float = 0.1
    rows: list[tuple[float, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Samples:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.rows.append(
                (time.monotonic() - self._started, rss_kib(self.pid), open_fds(self.pid))
            )


@dataclass
class Soak:
    idle: list[float]
    loaded: list[float]
    samples: Samples
    base_rss: int
    base_fds: int
    after_rss: int
    after_fds: int
    fds_settled_s: float
    abusers: dict[str, Any]
    timeouts: int

    def summary(self) -> dict[str, Any]:
        def ms(values: list[float], q: float) -> float:
            return round(1000 * sorted(values)[int(q * (len(values) - 1))], 2)

        return {
            "idle recall ms p50/p90": (ms(self.idle, 0.5), ms(self.idle, 0.9)),
            "loaded recall ms p50/p90": (ms(self.loaded, 0.5), ms(self.loaded, 0.9)),
            "recalls measured": (len(self.idle), len(self.loaded)),
            "recalls over 30 s": self.timeouts,
            "rss MiB base/peak/after": (
                self.base_rss >> 10,
                max(r for _t, r, _f in self.samples.rows) >> 10,
                self.after_rss >> 10,
            ),
            "fds base/peak/after": (
                self.base_fds,
                max(f for _t, _r, f in self.samples.rows),
                self.after_fds,
            ),
            "fds back to baseline after s": round(self.fds_settled_s, 2),
            "abusers": self.abusers,
        }


def soak(daemon: Running, seconds: float, abuser_args: list[str], say: Any = print) -> Soak:
    """Measure recall idle, then while the abusers run, then wait for the fds to settle."""
    pid = daemon.call("daemon.status")["pid"]
    with Recaller(daemon.socket) as client:
        client.latencies(20)  # warm: the feature columns load on the first recall
        idle = client.latencies(100)
        base_rss, base_fds = rss_kib(pid), steady_fds(pid)
        with Samples(pid, every=max(0.1, seconds / 600)) as samples:
            abusers = start_abusers(daemon.socket, seconds, abuser_args)
            time.sleep(min(1.0, seconds / 4))  # let them connect and get going
            loaded = client.latencies(10**9, until=time.monotonic() + seconds * 0.7)
            out = merged(abusers, timeout=seconds + 120)
            settled_from = time.monotonic()
            fds_back_to(pid, base_fds, timeout=30)
            settled = time.monotonic() - settled_from
        after_fds, after_rss = open_fds(pid), rss_kib(pid)
    report = Soak(idle, loaded, samples, base_rss, base_fds, after_rss, after_fds, settled,
                  out, client.timeouts)  # fmt: skip
    say(json.dumps(report.summary()))
    return report


KINDS = ("--stallers", "--silent", "--churners", "--big")
# Connections of one abusing process: below the daemon's cap per process, so that each
# kind is served as it was before the cap (a churner is capped on its own).
PER_PROCESS = 50


def start_abusers(
    socket: Path, seconds: float, arguments: list[str]
) -> list[subprocess.Popen[str]]:
    """The abusers ``arguments`` ask for (``--stallers 40 --big 2``), each kind in
    processes of its own of at most :data:`PER_PROCESS` connections."""
    counts = {flag: int(n) for flag, n in zip(arguments[::2], arguments[1::2], strict=True)}
    runs = []
    for kind in KINDS:
        left = counts.get(kind, 0)
        while left > 0:
            share = min(left, PER_PROCESS)
            only = [flag for other in KINDS for flag in (other, str(share if other == kind else 0))]
            runs.append(only)
            left -= share
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reliability.abusers",
                str(socket),
                "--seconds",
                str(seconds),
                *only,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for only in runs
    ]


def merged(abusers: list[subprocess.Popen[str]], timeout: float) -> dict[str, Any]:
    """What the abusing processes did, added up."""
    reports = [json.loads(a.communicate(timeout=timeout)[0]) for a in abusers]
    done: dict[str, int] = {}
    for report in reports:
        for what, n in report["done"].items():
            done[what] = done.get(what, 0) + n
    return {
        "done": done,
        "errors": [error for report in reports for error in report["errors"]],
        "connections": sum(report["connections"] for report in reports),
        "processes": len(reports),
    }


def median(values: list[float]) -> float:
    return statistics.median(values)
