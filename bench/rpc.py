"""RPC benchmark: hikmahd over its Unix socket, against baselines measured in the same run.

    .venv/bin/python bench/rpc.py [--seconds 3] [--clients 1,16] [--per-process 1]
                              [--rounds 3] [--keep]

What is measured (every server a subprocess on a Unix socket in a fresh temp dir
under /tmp, stopped with SIGTERM at the end; loopback only):

1. Round-trip latency (p50/p99, and the request rate reached) of ``daemon.status``
   and of ``memory.recall`` (3-word queries over a store pre-filled with 2,000
   short notes), for each client count. The baseline is a plain trio echo server
   (read a line, write it back: the same framing, no JSON work) sent the very same
   request lines right before. ``x p50``/``x p99`` = daemon / echo: the daemon's
   own cost per request (parse, dispatch, the method, encode) on top of the socket
   round trip; ``cpu%`` is the server's CPU time over the run, of one core. For
   ``memory.recall`` it includes the ranking itself, so expect a large ratio there;
   at 16 clients the daemon (one event loop, one core) queues them, so p50 there
   approaches 16x the service time.
2. Durable ``memory.remember`` throughput (writes/s, and latency), for each client
   count, against (a) raw LMDB durable commits of the same request bytes (python-lmdb,
   ``sync=True``, one put + commit per write; and for N > 1 clients also one commit
   per batch of N puts, which is what perfect group commit could reach), and (b) the
   same daemon started with ``--unsafe-no-sync`` (LMDB fsync off). The key ratio is
   durable / no-sync at the largest client count: the issue's target is >= 0.8,
   i.e. group commit hides the cost of the sync almost entirely. Durable and
   no-sync daemons are measured alternately (``--rounds`` times each) and pooled,
   so machine noise hits both alike. ``w/commit`` is writes per LMDB write
   transaction (the daemon's LMDB ``last_txnid``, read from outside): the group
   commit batch size actually reached. With N closed-loop clients and one commit
   in flight at a time, expect about N/2 (half the clients wait for the commit
   under way while the other half's requests gather).
   Caveat: ``--unsafe-no-sync`` turns off LMDB's sync only; the daemon still
   fsyncs its ``head.json`` (file and directory) before every commit, so the
   no-sync reference is not sync-free and the ratio flatters durability.

Clients: each client is a thread with a blocking socket and one request in
flight; by default every client thread has a worker process of its own
(``--per-process 1``). Measured here against the echo server with 16 clients:
16 processes x 1 thread reached about 42k req/s, 4 x 4 about 32-35k and 1 x 16
about 31k, so threads sharing one GIL do distort the baseline. Request ids count
up per client. Requests started before the common start time are warm-up and
not counted. On these 2-vCPU machines the clients share the CPUs with the
server, for the echo baseline and the daemon alike.

The fsync on these VMs is cheap (about 230 us per durable LMDB commit; the VM host
caches it), far cheaper than on a laptop SSD: durable/no-sync ratios here are
optimistic, and the raw LMDB rows show the sync cost actually measured in this run
(its p99 also shows the host's occasional sync stalls of several ms). The machines
are shared and noisy (about +-10% on throughput, +-20% on tails, more for the
tens-of-microseconds 1-client echo figures): compare ratios within one run.

Results go to ``bench/results-rpc.json`` next to this file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import platform
import random
import shutil
import socket
import struct
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lmdb
import trio
from servers import (
    CHANNEL_OFF,
    OK_PREFIX,
    Server,
    call_many,
    cpu_seconds,
    hikmahd_argv,
    wait_semantic_ready,
)
from workload import fmt, note_lines, request_body, with_id, zipf_words

from tests.harness.stats import percentile

RESULTS = Path(__file__).with_name("results-rpc.json")
WARMUP_S = 0.4  # clients connect and send warm-up requests until the common start
NOTES = 2000
QUERIES = 200
SEED = 7
FSYNC_NOTE = (
    "fsync on these VMs is cheap (~230 us per durable LMDB commit; the VM host caches it),"
    " so durable/no-sync ratios are optimistic next to a laptop SSD"
)

# A request line for client ``c``'s ``i``-th request.
RequestMaker = Callable[[int, int], bytes]

# --- workload -----------------------------------------------------------------------


def recall_bodies(count: int, seed: int) -> list[bytes]:
    """``memory.recall`` requests of 3-word queries, drawn like the notes' words."""
    rng = random.Random(seed + 1)
    return [
        request_body("memory.recall", {"query": " ".join(zipf_words(rng, 3))}) for _ in range(count)
    ]


STATUS_BODY = request_body("daemon.status", {})


def status_maker(client: int, i: int) -> bytes:
    return with_id(STATUS_BODY, i)


def cycling_maker(bodies: list[bytes]) -> RequestMaker:
    """Each client walks ``bodies`` from its own offset."""

    def make(client: int, i: int) -> bytes:
        return with_id(bodies[(client * 7919 + i) % len(bodies)], i)

    return make


def write_maker(client: int, i: int) -> bytes:
    """A unique short note per (client, i): the same bytes in every write measurement."""
    rng = random.Random(client * 1_000_003 + i)
    content = f"bench write {client}-{i}: " + " ".join(zipf_words(rng, 6))
    return with_id(request_body("memory.remember", {"content": content, "tags": ["bench"]}), i)


# --- servers ------------------------------------------------------------------------


def hikmahd(root: Path, name: str, *extra: str) -> Server:
    directory = root / name
    return Server(name, directory, hikmahd_argv(directory, "--log-level", "warning", *extra))


def echo_server(root: Path) -> Server:
    directory = root / "echo"
    argv = [sys.executable, str(Path(__file__).resolve()), "--echo-server", str(directory / "s")]
    return Server("echo", directory, argv)


async def echo_connection(stream: trio.SocketStream) -> None:
    """Write every line back as it is (the daemon's framing without any JSON work)."""
    buffer = bytearray()
    try:
        async with stream:
            while data := await stream.receive_some(1 << 16):
                buffer += data
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[: end + 1])
                    del buffer[: end + 1]
                    await stream.send_all(line)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # one client gone; the server goes on


async def serve_echo(path: str) -> None:
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen(256)
    await trio.serve_listeners(echo_connection, [trio.SocketListener(sock)])


# --- clients ------------------------------------------------------------------------


@dataclass
class ClientResult:
    latencies_ns: list[int] = field(default_factory=list)
    warmup: int = 0  # requests sent before the start, not timed
    errors: int = 0
    first_error: str | None = None

    def add(self, other: ClientResult) -> None:
        self.latencies_ns += other.latencies_ns
        self.warmup += other.warmup
        self.errors += other.errors
        self.first_error = self.first_error or other.first_error


def client_loop(
    path: str, make: RequestMaker, echo: bool, client: int, start_ns: int, end_ns: int
) -> ClientResult:
    """One client: a request, its reply, again, until ``end_ns``; counts from ``start_ns``."""
    result = ClientResult()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        replies = sock.makefile("rb", buffering=1 << 16)
        i = 0
        while (sent := time.monotonic_ns()) < end_ns:
            line = make(client, i)
            sock.sendall(line)
            reply = replies.readline()
            done = time.monotonic_ns()
            i += 1
            if sent < start_ns:
                result.warmup += 1
                continue
            result.latencies_ns.append(done - sent)
            if not (reply == line if echo else reply.startswith(OK_PREFIX)):
                result.errors += 1
                result.first_error = result.first_error or reply[:300].decode(errors="replace")
    return result


def worker_process(
    path: str,
    make: RequestMaker,
    echo: bool,
    clients: range,
    start_ns: int,
    end_ns: int,
    out: multiprocessing.connection.Connection,
) -> None:
    """Run ``clients`` as threads; send back their merged result."""
    results = [ClientResult() for _ in clients]

    def run(slot: int, client: int) -> None:
        try:
            results[slot] = client_loop(path, make, echo, client, start_ns, end_ns)
        except OSError as exc:
            results[slot] = ClientResult(errors=1, first_error=f"client {client}: {exc!r}")

    threads = [
        threading.Thread(target=run, args=(slot, client)) for slot, client in enumerate(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    merged = ClientResult()
    for r in results:
        merged.add(r)
    out.send(merged)
    out.close()


def run_clients(
    socket_path: Path,
    make: RequestMaker,
    clients: int,
    seconds: float,
    per_process: int,
    echo: bool,
    warmup_s: float = WARMUP_S,
) -> ClientResult:
    """``clients`` concurrent clients for ``seconds`` after a short warm-up."""
    context = multiprocessing.get_context("fork")  # the request maker needs no pickling
    start_ns = time.monotonic_ns() + int(warmup_s * 1e9)
    end_ns = start_ns + int(seconds * 1e9)
    workers = []
    for first in range(0, clients, per_process):
        receive, send = context.Pipe(duplex=False)
        group = range(first, min(first + per_process, clients))
        args = (str(socket_path), make, echo, group, start_ns, end_ns, send)
        process = context.Process(target=worker_process, args=args, daemon=True)
        process.start()
        send.close()
        workers.append((process, receive))
    merged = ClientResult()
    for process, receive in workers:
        if not receive.poll(warmup_s + seconds + 60):
            process.kill()
            raise RuntimeError("a client process did not report in time")
        part: ClientResult = receive.recv()
        process.join(10)
        merged.add(part)
    return merged


# --- figures ------------------------------------------------------------------------


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


# --- the run ------------------------------------------------------------------------


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


def wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=88, subsequent_indent="      ")


def find(rows: list[Measured], target: str, workload: str, clients: int) -> Measured:
    for row in rows:
        if row.target == target and row.workload == workload and row.clients == clients:
            return row
    raise KeyError((target, workload, clients))


def latency_table(
    rows: list[Measured], clients: list[int]
) -> tuple[list[str], list[dict[str, Any]]]:
    lines = [
        "Round-trip latency: hikmahd vs a trio echo server (same request lines, same run)",
        f"{'method':<14} {'clients':>7} {'req/s':>7} {'p50 us':>8} {'p99 us':>8} {'cpu%':>5}"
        f" {'echo/s':>7} {'echo p50':>8} {'echo p99':>8} {'x p50':>6} {'x p99':>6}",
    ]
    ratios = []
    for workload in ("daemon.status", "memory.recall"):
        for n in clients:
            d, e = find(rows, "lat", workload, n), find(rows, "echo", workload, n)
            r50, r99 = d.p50_us / e.p50_us, d.p99_us / e.p99_us
            lines.append(
                f"{workload:<14} {n:>7} {d.per_s:>7.0f} {d.p50_us:>8.1f} {d.p99_us:>8.1f}"
                f" {fmt(d.server_cpu_pct, '.0f'):>5} {e.per_s:>7.0f} {e.p50_us:>8.1f}"
                f" {e.p99_us:>8.1f} {r50:>6.1f} {r99:>6.1f}"
            )
            ratios.append({"method": workload, "clients": n, "p50_ratio": r50, "p99_ratio": r99})
    lines.append("x p50, x p99: daemon / echo; cpu%: the daemon's CPU time, of one core")
    return lines, ratios


def write_table(rows: list[Measured], clients: list[int]) -> tuple[list[str], dict[str, float]]:
    lines = [
        "memory.remember throughput (p50/p99: per request; raw LMDB rows: per commit)",
        f"{'target':<32} {'clients':>7} {'writes/s':>9} {'p50 us':>8} {'p99 us':>8}"
        f" {'cpu%':>5} {'w/commit':>8}",
    ]
    for row in rows:
        if row.workload in ("memory.remember", "durable put+commit"):
            shown = "-" if row.target.startswith("raw") else str(row.clients)
            lines.append(
                f"{row.target:<32} {shown:>7} {row.per_s:>9.0f} {row.p50_us:>8.1f}"
                f" {row.p99_us:>8.1f} {fmt(row.server_cpu_pct, '.0f'):>5}"
                f" {fmt(row.writes_per_commit, '.1f'):>8}"
            )
    raw1 = find(rows, "raw LMDB, commit per write", "durable put+commit", 1)
    ratios: dict[str, float] = {}
    lines.append("Ratios (writes/s over writes/s)")
    for n in clients:
        durable = find(rows, "hikmahd durable", "memory.remember", n)
        nosync = find(rows, "hikmahd no-sync", "memory.remember", n)
        ratios[f"durable_over_nosync_{n}"] = durable.per_s / nosync.per_s
        ratios[f"durable_over_raw_lmdb_per_write_{n}"] = durable.per_s / raw1.per_s
        lines.append(
            f"  {n:>2} clients: durable/no-sync {durable.per_s / nosync.per_s:.2f},"
            f" durable/raw LMDB commit-per-write {durable.per_s / raw1.per_s:.2f}"
        )
        if n > 1:
            batch = find(rows, f"raw LMDB, commit per {n} writes", "durable put+commit", n)
            ratios[f"durable_over_raw_lmdb_batch_{n}"] = durable.per_s / batch.per_s
            lines.append(
                f"{'':>14}durable/raw LMDB commit-per-{n} {durable.per_s / batch.per_s:.2f}"
            )
    top = max(clients)
    key = ratios[f"durable_over_nosync_{top}"]
    verdict = "meets" if key >= 0.8 else "MISSES"
    lines += [
        f"KEY: {top}-client durable / no-sync throughput = {key:.2f}"
        f" ({verdict} the issue's target >= 0.8)",
        *wrapped(
            f"Note: {FSYNC_NOTE}. Raw LMDB durable commit in this run: p50"
            f" {raw1.p50_us:.0f} us, p99 {raw1.p99_us:.0f} us."
        ),
        *wrapped(
            "w/commit: writes per LMDB write transaction (the group commit batch size,"
            " warm-up included); cpu%: the daemon's CPU time, of one core."
        ),
    ]
    return lines, ratios


def run(opts: Options) -> int:
    root = Path(tempfile.mkdtemp(prefix="hkb", dir="/tmp"))
    began = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            rows = latency_phase(root, opts, stack)
            rows += write_phase(root, opts, stack)
    finally:
        if not opts.keep:
            shutil.rmtree(root, ignore_errors=True)
    lat_lines, lat_ratios = latency_table(rows, opts.clients)
    write_lines, write_ratios = write_table(rows, opts.clients)
    clients_note = (
        f"Clients: threads with blocking sockets, one request in flight each, {opts.per_process}"
        f" per worker process; {opts.seconds:g} s per measurement after {opts.warmup_s:g} s"
        " warm-up;"
        f" writes pooled over {opts.rounds} alternating rounds;"
        f" whole run {time.monotonic() - began:.0f} s."
    )
    print("\n".join([*lat_lines, "", *write_lines, "", *wrapped(clients_note)]))
    errors = sum(row.errors for row in rows)
    RESULTS.write_text(
        json.dumps(
            {
                "options": asdict(opts),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "notes": [FSYNC_NOTE, clients_note],
                "latency_ratios": lat_ratios,
                "write_ratios": write_ratios,
                "rows": [asdict(row) for row in rows],
            },
            indent=2,
        )
        + "\n"
    )
    if errors:
        print(f"{errors} requests failed; see the rows' first_error", file=sys.stderr)
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--seconds", type=float, default=3.0, help="per measurement (default 3)")
    p.add_argument("--clients", default="1,16", help="client counts (default 1,16)")
    p.add_argument(
        "--per-process", type=int, default=1, help="client threads per process (default 1)"
    )
    p.add_argument("--rounds", type=int, default=3, help="alternating write rounds (default 3)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, stores)")
    p.add_argument("--echo-server", metavar="SOCKET", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.echo_server:
        trio.run(serve_echo, args.echo_server)
        return 0
    clients = sorted({int(n) for n in args.clients.split(",")})
    opts = Options(args.seconds, clients, max(1, args.per_process), max(1, args.rounds), args.keep)
    return run(opts)


if __name__ == "__main__":
    sys.exit(main())
