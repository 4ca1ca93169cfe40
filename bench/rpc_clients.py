"""The clients of ``bench/rpc.py``: what each sends, and how many of them are driven at
once (a thread each, one request in flight, in worker processes of their own)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from servers import OK_PREFIX
from workload import request_body, with_id, zipf_words

WARMUP_S = 0.4  # clients connect and send warm-up requests until the common start

# A request line for client ``c``'s ``i``-th request.
RequestMaker = Callable[[int, int], bytes]

# --- what the clients send -----------------------------------------------------------


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


# --- how they are driven -------------------------------------------------------------


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
