"""What ``bench/rpc.py`` measures: round trips against the echo server, durable writes
against no-sync daemons and raw LMDB commits, each run of the clients with the server's
side of it (CPU time, LMDB commits)."""

from __future__ import annotations

import contextlib
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lmdb
from rpc_clients import (
    WARMUP_S,
    ClientResult,
    RequestMaker,
    cycling_maker,
    recall_bodies,
    run_clients,
    status_maker,
    write_maker,
)
from rpc_echo import echo_server
from servers import CHANNEL_OFF, Server, call_many, cpu_seconds, hikmahd_argv, wait_semantic_ready
from workload import fmt, note_lines

from tests.harness.stats import percentile

NOTES = 2000
QUERIES = 200
SEED = 7


def hikmahd(root: Path, name: str, *extra: str) -> Server:
    directory = root / name
    return Server(name, directory, hikmahd_argv(directory, "--log-level", "warning", *extra))


@dataclass
class Measured:
    """One measurement: a server (or raw LMDB), a workload, a client count."""

    target: str
    workload: str
    clients: int
    seconds: float
    requests: int
    errors: int
    per_s: float
    p50_us: float
    p99_us: float
    server_cpu_pct: float | None = None  # of one core, warm-up included
    writes_per_commit: float | None = None  # LMDB write transactions, warm-up included
    first_error: str | None = None


@dataclass
class Observed:
    """What one run of the clients saw, and the server's side of it."""

    result: ClientResult
    seconds: float
    wall_s: float
    cpu_s: float | None = None
    commits: int | None = None


def measured(target: str, workload: str, clients: int, runs: list[Observed]) -> Measured:
    """One row from one or more runs (several rounds are pooled)."""
    result = ClientResult()
    for run in runs:
        result.add(run.result)
    seconds = sum(run.seconds for run in runs)
    lat = result.latencies_ns
    cpu = [run.cpu_s for run in runs if run.cpu_s is not None]
    commits = [run.commits for run in runs if run.commits is not None]
    return Measured(
        target=target,
        workload=workload,
        clients=clients,
        seconds=seconds,
        requests=len(lat),
        errors=result.errors,
        per_s=len(lat) / seconds,
        p50_us=percentile(lat, 50) / 1000,
        p99_us=percentile(lat, 99) / 1000,
        server_cpu_pct=100 * sum(cpu) / sum(run.wall_s for run in runs) if cpu else None,
        writes_per_commit=(len(lat) + result.warmup) / sum(commits) if any(commits) else None,
        first_error=result.first_error,
    )


def lmdb_commits(data_dir: Path) -> int:
    """Write transactions committed so far in a daemon's store (LMDB's last txn id),
    read from outside: LMDB allows readers in other processes."""
    env = lmdb.open(str(data_dir / "lmdb"), readonly=True, max_dbs=16)
    try:
        return int(env.info()["last_txnid"])
    finally:
        env.close()


def observe(
    server: Server, make: RequestMaker, clients: int, opts: Options, echo: bool = False
) -> Observed:
    """Run the clients against ``server``, with its CPU time and (hikmahd) its commits."""
    data = server.directory / "data"
    commits = lmdb_commits(data) if data.exists() else None
    cpu, began = cpu_seconds(server.pid), time.monotonic()
    result = run_clients(
        server.socket, make, clients, opts.seconds, opts.per_process, echo, opts.warmup_s
    )
    wall = time.monotonic() - began
    observed = Observed(result, opts.seconds, wall, cpu_seconds(server.pid) - cpu)
    if commits is not None:
        observed.commits = lmdb_commits(data) - commits
    return observed


_KEY = struct.Struct(">Q")


def raw_lmdb(directory: Path, seconds: float, batch: int) -> Measured:
    """Durable commits of the remember request bytes: ``batch`` puts per commit."""
    env = lmdb.open(str(directory), map_size=1 << 30, sync=True, metasync=True, readahead=False)
    commits: list[int] = []
    written = 0
    try:
        end = time.monotonic_ns() + int(seconds * 1e9)
        while (began := time.monotonic_ns()) < end:
            with env.begin(write=True) as txn:
                for j in range(batch):
                    txn.put(_KEY.pack(written), write_maker(j, written))
                    written += 1
            commits.append(time.monotonic_ns() - began)
    finally:
        env.close()
    name = "raw LMDB, commit per write" if batch == 1 else f"raw LMDB, commit per {batch} writes"
    return Measured(
        target=name,
        workload="durable put+commit",
        clients=batch,
        seconds=seconds,
        requests=written,
        errors=0,
        per_s=written / seconds,
        p50_us=percentile(commits, 50) / 1000,
        p99_us=percentile(commits, 99) / 1000,
    )


@dataclass
class Options:
    seconds: float
    clients: list[int]
    per_process: int
    rounds: int
    keep: bool
    warmup_s: float = WARMUP_S


def latency_phase(root: Path, opts: Options, stack: contextlib.ExitStack) -> list[Measured]:
    """Echo and daemon, the same request lines, back to back for each workload."""
    echo = echo_server(root).start()
    stack.callback(echo.stop)
    daemon = hikmahd(root, "lat").start()
    stack.callback(daemon.stop)
    began = time.monotonic()
    call_many(daemon.socket, note_lines(NOTES, SEED))
    print(f"pre-filled {NOTES} notes in {time.monotonic() - began:.1f} s", file=sys.stderr)
    workloads: list[tuple[str, RequestMaker]] = [
        ("daemon.status", status_maker),
        ("memory.recall", cycling_maker(recall_bodies(QUERIES, SEED))),
    ]
    rows = []
    for workload, make in workloads:
        for n in opts.clients:
            for server, is_echo in ((echo, True), (daemon, False)):
                rows.append(
                    measured(server.name, workload, n, [observe(server, make, n, opts, is_echo)])
                )
                progress(rows[-1])
    daemon.stop()
    echo.stop()
    return rows


def write_phase(root: Path, opts: Options, stack: contextlib.ExitStack) -> list[Measured]:
    """Raw LMDB, then durable and no-sync daemons alternately, pooled over the rounds."""
    rows = []
    for batch in [1] + [n for n in opts.clients if n > 1]:
        rows.append(raw_lmdb(root / f"raw{batch}", opts.seconds, batch))
        progress(rows[-1])
    durable = hikmahd(root, "dur").start()
    stack.callback(durable.stop)
    nosync = hikmahd(root, "nosync", "--unsafe-no-sync").start()
    stack.callback(nosync.stop)
    # The same durable daemon with the semantic channel off: what embedding each write costs.
    (root / "dur-off").mkdir(mode=0o700)
    (root / "dur-off" / "policy.toml").write_text(CHANNEL_OFF)
    lexical = hikmahd(root, "dur-off").start()
    stack.callback(lexical.stop)
    servers = (
        (durable, "hikmahd durable"),
        (nosync, "hikmahd no-sync"),
        (lexical, "hikmahd durable, semantic off"),
    )
    for server, _name in servers:
        wait_semantic_ready(server.socket)
    runs: dict[tuple[str, int], list[Observed]] = {}
    for _ in range(opts.rounds):
        for n in opts.clients:
            for server, name in servers:
                run = observe(server, write_maker, n, opts)
                runs.setdefault((name, n), []).append(run)
                progress(measured(name, "memory.remember", n, [run]))
                # Its vectors follow the writes in the background: let them catch up
                # before the next daemon is measured, so that none runs beside another's.
                wait_semantic_ready(server.socket)
    for server, _name in servers:
        server.stop()
    return rows + [measured(name, "memory.remember", n, r) for (name, n), r in runs.items()]


def progress(row: Measured) -> None:
    error = f"  ERRORS {row.errors}: {row.first_error}" if row.errors else ""
    print(
        f"  {row.target:<32} {row.workload:<16} {row.clients:>3} clients"
        f"  {row.per_s:>9.0f}/s  p50 {row.p50_us:8.1f} us  p99 {row.p99_us:8.1f} us"
        f"  cpu {fmt(row.server_cpu_pct, '.0f')}%"
        f"  writes/commit {fmt(row.writes_per_commit, '.1f')}"
        f"{error}",
        file=sys.stderr,
        flush=True,
    )


def find(rows: list[Measured], target: str, workload: str, clients: int) -> Measured:
    for row in rows:
        if row.target == target and row.workload == workload and row.clients == clients:
            return row
    raise KeyError((target, workload, clients))
