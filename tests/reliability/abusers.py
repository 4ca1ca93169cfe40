"""Badly behaved clients, run as a process of their own so their work does not share a
GIL with the client being measured:

    python -m tests.reliability.abusers SOCKET --seconds 6 --stallers 40 --silent 8 \\
        --churners 4 --big 2

- *stallers* send half a frame and then nothing, holding the connection open;
- *silent* ones send requests as fast as the socket takes them and never read a
  reply (the daemon's replies back up, then its reading of them stops);
- *churners* connect and hang up in a loop, half of them mid-request;
- *big* ones send 1 MiB frames: one byte over the limit, and exactly at it.

Prints what was done as one JSON object when the time is up and every connection
is closed.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

MIB = 1 << 20
HALF = b'{"jsonrpc":"2.0","method":"memory.recall","params":{"query":"dep'
RECALL = b'{"jsonrpc":"2.0","method":"memory.recall","params":{"query":"deploy cache"},"id":1}\n'
STATUS = b'{"jsonrpc":"2.0","method":"daemon.status","id":"big"}'
STATUS_LINE = b'{"jsonrpc":"2.0","method":"daemon.status","id":2}\n'


def connect(path: str, timeout: float = 5.0, retries: Counter[str] | None = None) -> socket.socket:
    """A connection, retrying while the daemon's listen backlog is full (EAGAIN)."""
    deadline = time.monotonic() + 30
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            sock.close()
            if retries is not None:
                retries["connect retries (backlog full)"] += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)
        except BaseException:
            sock.close()
            raise


class Abuse:
    def __init__(self, path: str, seconds: float) -> None:
        self.path = path
        self.until = time.monotonic() + seconds
        self.done: Counter[str] = Counter()
        self.lock = threading.Lock()

    def running(self) -> bool:
        return time.monotonic() < self.until

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.done[what] += n

    def open(self, timeout: float = 5.0) -> socket.socket:
        retries: Counter[str] = Counter()
        try:
            return connect(self.path, timeout, retries)
        finally:
            with self.lock:
                self.done.update(retries)

    def staller(self) -> None:
        with self.open() as sock:
            sock.sendall(HALF)
            self.count("half frames")
            while self.running():
                time.sleep(0.05)

    def silent(self) -> None:
        with self.open(timeout=0.2) as sock:
            while self.running():
                try:
                    sock.sendall(STATUS_LINE * 12 + RECALL)
                    self.count("unread requests", 13)
                except TimeoutError:
                    self.count("sends blocked")  # the daemon stopped reading us: as designed

    def churner(self) -> None:
        n = 0
        while self.running():
            with self.open() as sock:
                if n % 2:
                    sock.sendall(RECALL[: len(RECALL) // 2])
            self.count("connections opened and closed")
            n += 1

    def big(self) -> None:
        oversized = b"x" * (MIB + 1) + b"\n"
        exact = STATUS[:-1] + b" " * (MIB - len(STATUS)) + b"}\n"
        assert len(exact) == MIB + 1
        with self.open(timeout=30) as sock:
            reader = sock.makefile("rb")
            while self.running():
                sock.sendall(oversized)
                reply = json.loads(reader.readline())
                assert reply["error"]["data"]["reason"] == "too_large", reply
                sock.sendall(exact)
                reply = json.loads(reader.readline())
                assert "result" in reply, reply
                self.count("1 MiB frames", 2)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("socket")
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--stallers", type=int, default=40)
    p.add_argument("--silent", type=int, default=8)
    p.add_argument("--churners", type=int, default=4)
    p.add_argument("--big", type=int, default=2)
    args = p.parse_args(argv)
    abuse = Abuse(args.socket, args.seconds)
    kinds: list[tuple[Callable[[], None], int]] = [
        (abuse.staller, args.stallers),
        (abuse.silent, args.silent),
        (abuse.churner, args.churners),
        (abuse.big, args.big),
    ]
    errors: list[str] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except Exception as exc:  # reported, so the test sees what broke
            errors.append(f"{target.__name__}: {exc!r}")

    threads = [
        threading.Thread(target=guarded, args=(target,), daemon=True)
        for target, count in kinds
        for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=args.seconds + 60)
    json.dump({"done": abuse.done, "errors": errors, "connections": len(threads)}, sys.stdout)


if __name__ == "__main__":
    main()
