"""What the reliability tests and ``bench/stress`` share: writers that keep books of
what was acknowledged, the checks run on a data directory after a crash, and ways to
reach behind the daemon (its ledger, its file system, its process).

The books are the point. A writer notes each request before sending it; a
reply moves it to ``acked`` (with the trace the daemon said it wrote) or to
``refused``; a connection that dies under a request leaves it ``unacked``.
After ``kill -9`` the data directory is opened with the kernel's own
:class:`~hikmah.store.core.Store` (the daemon is dead, nothing else holds it) and:

- the ledger verifies;
- every acknowledged write is there exactly as acknowledged (its trace, its
  purge, its fulfilment);
- every refused write is absent, and every unacknowledged one is either
  absent or there whole (every field as sent), never in between;
- the derived databases equal a rebuild of them from the ledger, byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb
import msgspec
import pytest

from hikmah.index import queries
from hikmah.index.layout import Databases
from hikmah.ledger.chain import decode_record
from hikmah.ledger.payloads import (
    FulfillPayload,
    PurgePayload,
    RedactedPayload,
    RememberPayload,
    decode_payload,
)
from hikmah.model.trace import Trace
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.store.indexing import rebuild_index
from tests.harness.daemon import Running
from tests.harness.sockets import Conn, wait_for_socket

WRITERS = 16
DAY_MS = 86_400_000
# Fields a writer sends that the daemon must store exactly as sent (for a person).
EXACT_FIELDS = (
    "content",
    "kind",
    "tags",
    "salience",
    "source",
    "locator",
    "claim_key",
    "claim_value",
    "scope",
    "deadline",
)
WORDS = [
    "deploy",
    "cache",
    "rotate",
    "cert",
    "staging",
    "bucket",
    "review",
    "merge",
    "lint",
    "green",
    "flaky",
    "retry",
]


class DaemonGone(Exception):
    """The connection died under a request (the daemon was killed)."""


# -- the books -----------------------------------------------------------------


@dataclass
class Book:
    """What every writer was told, across all rounds of one data directory."""

    acked: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> trace as replied
    unacked: list[dict[str, Any]] = field(default_factory=list)  # remember params in flight
    refused: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    purged: set[str] = field(default_factory=set)  # acknowledged purges
    purge_unacked: set[str] = field(default_factory=set)
    fulfilled: set[str] = field(default_factory=set)
    fulfill_unacked: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self) -> dict[str, int]:
        return {
            "acked": len(self.acked),
            "unacked": len(self.unacked),
            "refused": len(self.refused),
            "purged": len(self.purged),
            "fulfilled": len(self.fulfilled),
        }


def remember_params(round_: int, worker: int, n: int, now_ms: int) -> dict[str, Any]:
    """A write with every kind of field, unique by its content; values are already in the
    form the daemon stores (lower-case tags, a scope of the documented shape)."""
    kind = ("observation", "belief", "commitment", "preference")[n % 4]
    words = " ".join(WORDS[(worker + n + i) % len(WORDS)] for i in range(4))
    params: dict[str, Any] = {
        "content": f"crash r{round_} w{worker} n{n}: {words}",
        "kind": kind,
        "tags": [f"w{worker}", f"r{round_}"],
        "salience": round(((worker * 31 + n * 17) % 97) / 100, 2),
        "source": f"human:writer{worker}",
        "locator": f"crash://r{round_}/w{worker}/n{n}",
        "claim_key": f"crash.r{round_}.w{worker}.n{n}",
        "claim_value": f"v{n}",
        "scope": f"project:/crash/w{worker}",
    }
    if kind == "commitment":
        # Far ahead, so no reminder (and no desktop notification) fires during a test.
        params["deadline"] = now_ms + 30 * DAY_MS + n
    return params


class Writer(threading.Thread):
    """One client writing until stopped: remembers, and now and then a purge of one of
    its own traces or the fulfilment of one of its commitments."""

    def __init__(
        self, socket: Path, book: Book, round_: int, worker: int, stop: threading.Event
    ) -> None:
        super().__init__(daemon=True)
        self.socket = socket
        self.book = book
        self.round = round_
        self.worker = worker
        self.stop = stop
        # Its own open traces from earlier rounds too, so that a short round (a slow
        # machine: a few writes a writer) still purges and fulfils. Commitments are
        # only fulfilled and the rest only purged, so no trace is asked for both.
        self.mine: list[str] = []
        self.commitments: list[str] = []
        with book.lock:
            done = book.purged | book.purge_unacked | book.fulfilled | book.fulfill_unacked
            for trace_id, trace in book.acked.items():
                if trace_id not in done and f"w{worker}" in trace["tags"]:
                    self._hold(trace)

    def _hold(self, trace: dict[str, Any]) -> None:
        """Keep an acknowledged trace of this writer's for a later fulfil or purge."""
        (self.commitments if trace["kind"] == "commitment" else self.mine).append(trace["id"])

    def run(self) -> None:
        try:
            with Conn(self.socket) as conn:
                n = 0
                while not self.stop.is_set():
                    self.step(conn, n)
                    n += 1
        except (OSError, EOFError, ValueError, DaemonGone):
            return  # killed under us: the request in flight is in the book as unacked

    def step(self, conn: Conn, n: int) -> None:
        purging = self.worker % 4 == 3 and n % 5 == 2 and self.mine
        if purging:
            target = self.mine.pop(0)
            with self.book.lock:
                self.book.purge_unacked.add(target)
            reply = _request(conn, "memory.purge", {"id": target, "reason": "crash test"})
            with self.book.lock:
                self.book.purge_unacked.discard(target)
                if "result" in reply:
                    self.book.purged.add(target)
            return
        if n % 7 == 1 and self.commitments:
            target = self.commitments.pop(0)
            with self.book.lock:
                self.book.fulfill_unacked.add(target)
            reply = _request(conn, "memory.fulfill", {"id": target})
            with self.book.lock:
                self.book.fulfill_unacked.discard(target)
                if "result" in reply:
                    self.book.fulfilled.add(target)
            return
        params = remember_params(self.round, self.worker, n, int(time.time() * 1000))
        with self.book.lock:
            self.book.unacked.append(params)
        reply = _request(conn, "memory.remember", params)
        with self.book.lock:
            self.book.unacked.remove(params)
            if "result" in reply:
                trace = reply["result"]["trace"]
                self.book.acked[trace["id"]] = trace
                self._hold(trace)
            else:
                self.book.refused.append((params, reply["error"]))


def _request(conn: Conn, method: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        reply: dict[str, Any] = conn.request(method, **params)
    except (OSError, EOFError, ValueError) as exc:
        raise DaemonGone(str(exc)) from None
    return reply


@contextmanager
def writers(socket: Path, book: Book, round_: int, count: int = WRITERS) -> Iterator[None]:
    """``count`` writers run for the duration of the block, then are stopped and joined."""
    stop = threading.Event()
    threads = [Writer(socket, book, round_, w, stop) for w in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
            assert not thread.is_alive(), "a writer hung"


# -- checks on a data directory ------------------------------------------------


@dataclass
class LedgerView:
    """The ledger's payloads, decoded: the source of truth the books are checked against."""

    traces: dict[str, Trace]
    purged: set[str]
    fulfilled: set[str]
    redacted: set[str]
    records: int
    types: Counter[str]


def read_ledger(store: Store) -> LedgerView:
    view = LedgerView({}, set(), set(), set(), 0, Counter())
    with store.snapshot() as snapshot:
        for _seq, line in snapshot.records():
            payload = decode_payload(decode_record(line))
            view.records += 1
            view.types[type(payload).__name__] += 1
            if isinstance(payload, RememberPayload):
                view.traces[payload.trace.id] = payload.trace
            elif isinstance(payload, PurgePayload):
                view.purged.add(payload.id)
            elif isinstance(payload, FulfillPayload):
                view.fulfilled.add(payload.id)
            elif isinstance(payload, RedactedPayload):
                view.redacted.add(payload.id)
    return view


def derived_state(store: Store) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every database a rebuild recreates (and ``meta``), as raw key/value pairs."""
    # The ledger is the source; delivered reminders and the vault's wrapped keys are
    # kept, not derived.
    names = [n for n in Databases.names() if n not in ("ledger", "reminders", "keys")]
    with store.snapshot() as snapshot:
        return {
            name: [
                (bytes(k), bytes(v)) for k, v in snapshot.txn.cursor(db=getattr(store.dbs, name))
            ]
            for name in names
        }


def differences(
    before: dict[str, list[tuple[bytes, bytes]]], after: dict[str, list[tuple[bytes, bytes]]]
) -> list[str]:
    found = []
    for name, rows in before.items():
        if rows != after[name]:
            old, new = dict(rows), dict(after[name])
            changed = sorted({k for k in old.keys() | new.keys() if old.get(k) != new.get(k)})
            found.append(f"{name}: {len(changed)} keys differ, first {changed[:3]!r}")
    return found


def wire(value: Any) -> Any:
    """A Struct as it travels on the wire (lists, not tuples)."""
    return json.loads(msgspec.json.encode(value))


def fields_of(trace: dict[str, Any]) -> dict[str, Any]:
    """The writer-given fields of a trace in its wire shape."""
    shown = {name: trace.get(name) for name in EXACT_FIELDS}
    provenance = trace.get("provenance") or {}
    shown["source"], shown["locator"] = provenance.get("source"), provenance.get("locator")
    shown["tags"] = list(shown["tags"] or [])
    return shown


def sent_fields(params: dict[str, Any]) -> dict[str, Any]:
    return {name: params.get(name) for name in EXACT_FIELDS} | {"tags": list(params["tags"])}


@dataclass
class Checked:
    records: int
    unacked_present: int
    unacked_absent: int


def check_data_dir(data: Path, book: Book) -> Checked:
    """Open a stopped daemon's data directory and check it against the books.

    Raises:
        AssertionError: naming the first write or database that is wrong.
    """
    with Store(data) as store:
        report = maintenance.verify(store)
        assert report.ok, report.errors
        view = read_ledger(store)
        for trace_id, replied in book.acked.items():
            written = view.traces.get(trace_id)
            if trace_id in view.redacted:
                assert trace_id in view.purged, f"{trace_id} redacted but never purged"
                continue
            assert written is not None, f"acknowledged write {trace_id} is missing"
            assert wire(written) == replied, f"{trace_id} differs from its reply"
            assert fields_of(replied)["content"] == written.content
        for trace_id in book.purged:
            assert trace_id in view.purged, f"acknowledged purge of {trace_id} is missing"
        for trace_id in book.fulfilled:
            assert trace_id in view.fulfilled, f"acknowledged fulfilment of {trace_id} is missing"
        by_content = {t.content: t for t in view.traces.values()}
        for params, error in book.refused:
            assert params["content"] not in by_content, f"refused write is there: {error}"
        present = 0
        for params in book.unacked:
            found = by_content.get(params["content"])
            if found is None:
                continue
            present += 1
            assert fields_of(wire(found)) == sent_fields(params), f"half-present write: {found.id}"
        for trace_id in view.traces:
            if trace_id not in view.purged and trace_id not in view.redacted:
                assert store.read(queries.get, trace_id).trace.id == trace_id  # the indexes find it
        before = derived_state(store)
        rebuild_index(store)
        diff = differences(before, derived_state(store))
        assert not diff, "derived indexes disagree with a rebuild: " + "; ".join(diff)
        return Checked(view.records, present, len(book.unacked) - present)


# -- processes -------------------------------------------------------------------


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def steady_fds(pid: int, timeout: float = 5.0) -> int:
    """The daemon's open file descriptors once two reads 100 ms apart agree (a client
    that just hung up may take it a moment to close)."""
    deadline = time.monotonic() + timeout
    last = open_fds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = open_fds(pid)
        if now == last:
            return now
        last = now
    return last


def fds_back_to(pid: int, baseline: int, timeout: float = 15.0) -> int:
    """Wait until the daemon holds no more descriptors than ``baseline``; the count."""
    deadline = time.monotonic() + timeout
    while open_fds(pid) > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    return open_fds(pid)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def every_byte(directory: Path) -> bytes:
    """The bytes of every file under ``directory`` (sockets and the like skipped)."""
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def restart(daemon: Running) -> None:
    """Start ``daemon`` again after a kill, and check a person can write at once: a
    crash must never leave the store's own records looking like a forged tail."""
    daemon.start()
    with daemon.connect() as conn:
        reply = conn.request("memory.remember", content=f"after a restart {time.monotonic_ns()}")
        assert "result" in reply, reply
        assert conn.call("ledger.verify")["ok"]


def pipelined(conn: Conn, requests: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Send every request at once, then read every reply (matched by id)."""
    lines = [
        json.dumps({"jsonrpc": "2.0", "method": m, "params": p, "id": i}).encode()
        for i, (m, p) in enumerate(requests)
    ]
    conn.send_raw(b"\n".join(lines) + b"\n")
    replies: dict[int, dict[str, Any]] = {}
    while len(replies) < len(requests):
        reply = conn.read()
        replies[reply["id"]] = reply
    return [replies[i] for i in range(len(requests))]


def hikmahd(*args: str) -> list[str]:
    return [sys.executable, "-m", "hikmahd", *args]


class Launched(Running):
    """A :class:`Running` daemon started under a command prefix (``setpriv``, ``unshare``)."""

    def __init__(self, root: Path, prefix: list[str], *extra: str) -> None:
        super().__init__(root, *extra)
        self.prefix = prefix

    def start(self) -> Launched:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*self.prefix, *hikmahd(*self.flags(), *self.extra)],
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        wait_for_socket(self.socket, self.process, self.log)
        return self


# -- the ledger, read and written behind the daemon's back ------------------------


def ledger_rows(data: Path) -> list[tuple[int, bytes]]:
    env = lmdb.open(str(data / "lmdb"), max_dbs=16, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            db = env.open_db(b"ledger", txn=txn)
            return [(struct.unpack(">Q", k)[0], bytes(v)) for k, v in txn.cursor(db=db)]
    finally:
        env.close()


def put_raw(data: Path, changes: dict[int, bytes | None]) -> None:
    env = lmdb.open(str(data / "lmdb"), max_dbs=16)
    try:
        db = env.open_db(b"ledger")
        with env.begin(write=True) as txn:
            for seq, line in changes.items():
                key = struct.pack(">Q", seq)
                if line is None:
                    txn.delete(key, db=db)
                else:
                    txn.put(key, line, db=db)
    finally:
        env.close()


# -- resources that need root, skipped without it -----------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    if not shutil.which("mount"):
        pytest.skip("mount is needed")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def immutable(paths: list[Path]) -> Iterator[None]:
    """``chattr +i``: writes fail with EPERM even for root and through open files."""
    if not shutil.which("chattr"):
        pytest.skip("chattr (e2fsprogs) is needed")
    names = [str(p) for p in paths]
    try:
        done = subprocess.run(["chattr", "+i", *names], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {done.stderr.strip()}")
        yield
    finally:
        subprocess.run(["chattr", "-i", *names], capture_output=True, check=False)


def unprivileged_prefix() -> list[str]:
    """Run as the uid we are, but without capabilities (root with none is, for /proc, an
    ordinary user: it cannot read a non-dumpable process's environment)."""
    if os.getuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is needed to drop capabilities")
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]
