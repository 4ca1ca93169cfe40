"""Bugs the reliability tests found in the daemon and the kernel, each pinned by a test
of the behaviour the issue asks for. A test goes in marked ``xfail(strict=True)``,
with a reason naming the place in the code and the cause; once the bug is fixed its
test passes, strict mode fails the run, and the mark comes off. All of them are fixed
now: the tests stay, as the reproductions.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hikmah.ledger.headfile import HeadFile
from hikmah.model.head import Head
from tests.harness.daemon import Running, own_daemon
from tests.harness.environment import clean_env

from .crashes import fill
from .harness import (
    Book,
    Launched,
    immutable,
    ledger_rows,
    pipelined,
    put_raw,
    rss_kib,
    tmpfs,
    unprivileged_prefix,
)
from .inprocess import in_process
from .strategies import request_line


@pytest.fixture(scope="module")
def shared() -> Iterator[Running]:
    """One daemon for the bugs that leave it usable."""
    with own_daemon() as running:
        yield running


# -- JSON-RPC input -------------------------------------------------------------


def test_a_frame_nested_too_deep_gets_a_parse_error(shared: Running) -> None:
    with shared.connect() as conn:
        conn.send_raw(b"[" * 5000 + b"]" * 5000 + b"\n")
        reply = conn.read()  # EOFError today
    assert reply["error"]["code"] == -32700


LMDB_KEYS = [
    ("memory.show", {"id": ""}),
    ("memory.pin", {"id": ""}),
    ("memory.unpin", {"id": ""}),
    ("memory.fulfill", {"id": ""}),
    ("memory.feedback", {"ids": [""], "outcome": "good"}),
    ("memory.purge", {"id": "", "reason": "r"}),
    ("memory.remember", {"content": "x", "supersedes": ""}),
    ("memory.remember", {"content": "a word of 600 letters: " + "w" * 600}),
    ("memory.remember", {"content": "x", "tags": ["t" * 600]}),
    ("memory.remember", {"content": "x", "claim_key": "k" * 600, "claim_value": "v"}),
    ("memory.remember", {"content": "x", "scope": "project:/" + "s" * 600}),
    ("memory.context", {"scope": ""}),
    ("memory.export", {"after": ""}),
]


def test_keys_lmdb_cannot_hold_are_refused_cleanly(shared: Running) -> None:
    assert not internal_errors(shared, LMDB_KEYS)


NUMBERS = [
    ("memory.remember", {"content": "x", "kind": "commitment", "deadline": 10**20}),
    ("memory.predict", {"family": "f", "question": "q?", "type": "noul", "p": 0.5,
                        "deadline": 10**20}),
    ("promises.list", {"within_hours": 1e308}),
]  # fmt: skip


def test_numbers_past_64_bits_are_invalid_params(shared: Running) -> None:
    assert not internal_errors(shared, NUMBERS)


def internal_errors(daemon: Running, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The calls answered with -32603, each sent on a connection of its own."""
    found = []
    for method, params in calls:
        with daemon.connect() as conn:
            reply = conn.request(method, **params)
        if reply.get("error", {}).get("code") == -32603:
            found.append(f"{method} {json.dumps(params)[:60]}")
    return found


def test_one_bad_request_does_not_fail_the_writes_batched_with_it(shared: Running) -> None:
    requests: list[tuple[str, dict[str, Any]]] = [
        ("memory.remember", {"content": f"an innocent note {n}"}) for n in range(300)
    ]
    for position in (50, 150, 250):
        requests.insert(position, ("memory.pin", {"id": ""}))
    with shared.connect() as conn:
        replies = pipelined(conn, requests)
    failed = [
        reply for (method, _p), reply in zip(requests, replies, strict=True)
        if method == "memory.remember" and "error" in reply
    ]  # fmt: skip
    assert not failed, f"{len(failed)} innocent writes failed, e.g. {failed[0]}"


# -- fairness ---------------------------------------------------------------------


def test_clients_that_never_read_cannot_hold_up_another_clients_recall(
    daemon: Running,
) -> None:
    fill(daemon, Book(), 3000, "fairness")
    line = request_line("memory.recall", {"query": "deploy cache note", "limit": 10})
    with daemon.connect() as conn:
        for _ in range(5):  # warm: the feature columns load on the first recall
            conn.call("memory.recall", query="deploy cache note", limit=10)
        idle = []
        for _ in range(10):
            started = time.perf_counter()
            conn.call("memory.recall", query="deploy cache note", limit=10)
            idle.append(time.perf_counter() - started)
        floods = []
        try:
            for _ in range(16):
                flood = socket.socket(socket.AF_UNIX)
                floods.append(flood)
                flood.connect(str(daemon.socket))
                flood.sendall(line * 64)  # and never read
            time.sleep(0.2)
            started = time.perf_counter()
            conn.call("memory.recall", query="deploy cache note", limit=10)
            waited = time.perf_counter() - started
        finally:
            for flood in floods:
                flood.close()
    bound = max(100 * sorted(idle)[5], 0.3)
    assert waited < bound, f"{waited * 1000:.0f} ms (idle {sorted(idle)[5] * 1000:.1f} ms)"


# -- replay.ingest reads whatever path it is given ------------------------------------


def test_ingesting_an_endless_file_is_bounded(short_tmp: Path) -> None:
    limit = ["prlimit", "--as=4000000000", "--"] if shutil.which("prlimit") else []
    daemon = Launched(short_tmp, limit).start()
    try:
        pid = daemon.call("daemon.status")["pid"]
        before = rss_kib(pid)
        with daemon.connect() as conn:
            conn.sock.settimeout(2)
            conn.send({"jsonrpc": "2.0", "method": "replay.ingest",
                       "params": {"path": "/dev/zero"}, "id": 1})  # fmt: skip
            growth = 0
            try:
                reply = conn.read()
            finally:
                growth = rss_kib(pid) - before
        assert growth < 200 << 10, f"RSS grew {growth >> 10} MiB"
        assert reply["error"]["data"]["reason"] == "invalid", reply
    finally:
        daemon.kill(signal.SIGKILL)


def test_ingesting_fifos_cannot_stall_the_writer(short_tmp: Path) -> None:
    fifo = short_tmp / "fifo"
    os.mkfifo(fifo)
    daemon = Running(short_tmp).start()
    try:
        with daemon.connect() as conn:
            for n in range(41):
                conn.send({"jsonrpc": "2.0", "method": "replay.ingest",
                           "params": {"path": str(fifo)}, "id": n})  # fmt: skip
            time.sleep(0.3)
            with daemon.connect() as writer:
                writer.sock.settimeout(2)
                reply = writer.request("memory.remember", content="a write after the FIFOs")
                assert "result" in reply, reply
                assert "result" in writer.request("memory.recall", query="write")
    finally:
        _release(fifo)
        daemon.kill(signal.SIGKILL)


def _release(fifo: Path) -> None:
    """Open the FIFO for writing until no reader waits, so blocked threads return."""
    for _ in range(64):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return


# -- the ledger and its head --------------------------------------------------------


def _written(daemon: Running, count: int) -> None:
    for n in range(count):
        daemon.call("memory.remember", content=f"fact {n} about the deploy window")


def test_a_corrupt_last_record_is_reported_by_verify_ledger(daemon: Running) -> None:
    _written(daemon, 3)
    daemon.stop()
    seq, line = ledger_rows(daemon.data)[-1]
    put_raw(daemon.data, {seq: b"X" + line[1:]})
    daemon.start()  # RuntimeError today: hikmahd exited 1
    result = daemon.cli("verify-ledger")
    assert result.returncode == 1 and "NOT OK" in result.stdout


def test_the_last_record_deleted_after_a_clean_stop_is_caught(daemon: Running) -> None:
    _written(daemon, 4)
    daemon.stop()
    seq, _line = ledger_rows(daemon.data)[-1]
    put_raw(daemon.data, {seq: None})
    daemon.start()
    assert not daemon.call("ledger.verify")["ok"]


def test_a_write_after_swapped_last_records_is_refused_or_in_the_ledger(tmp_path: Path) -> None:
    for n in range(4):
        with in_process(tmp_path) as daemon:
            daemon.exchange([request_line("memory.remember", {"content": f"fact {n}"})])
    rows = dict(ledger_rows(tmp_path / "data"))
    put_raw(tmp_path / "data", {3: rows[4], 4: rows[3]})
    with in_process(tmp_path) as daemon:
        (reply,) = daemon.exchange(
            [request_line("memory.remember", {"content": "after the swap"})]
        ).replies
    if "result" in reply:
        trace_id = reply["result"]["trace"]["id"].encode()
        assert any(trace_id in line for _s, line in ledger_rows(tmp_path / "data")), (
            "acknowledged, indexed, and not in the ledger"
        )


def test_a_failed_head_write_leaves_the_newest_state_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hikmah.ledger import headfile

    path = tmp_path / "head"
    heads = [Head(seq=n, hash=f"{n:064x}") for n in range(1, 4)]
    written = HeadFile(path)
    written.write(heads[0], None)
    written.write(heads[1], None)  # the newest good state
    real = os.pwrite

    def failing(fd: int, data: bytes, offset: int) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(headfile.os, "pwrite", failing)
    with pytest.raises(Exception, match="cannot write the ledger head"):
        written.write(heads[2], None)
    monkeypatch.setattr(headfile.os, "pwrite", real)
    before = path.read_bytes()
    written.write(heads[2], None)
    after = path.read_bytes()
    written.close()
    # Tear that write: the slot it went to is half old, half new.
    changed = next(i for i in range(len(after)) if after[i] != before[i])
    slot = (changed // headfile.SLOT) * headfile.SLOT
    torn = after[:slot] + after[slot : slot + 40] + before[slot + 40 : slot + headfile.SLOT]
    path.write_bytes(torn + after[slot + headfile.SLOT :])
    acknowledged, _pending = HeadFile(path).read()
    assert acknowledged == heads[1]


def test_a_head_file_cut_off_while_it_is_created_is_no_head_not_a_corrupt_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by kill -9 during the first import: the file was created zeroed, and a
    # kill before its first slot left "no intact slot" for a person to reset.
    path = tmp_path / "head"

    def killed(fd: int) -> None:
        raise KeyboardInterrupt("killed here")

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        HeadFile(path).write(Head(seq=1, hash=f"{1:064x}"), None)
    monkeypatch.undo()
    assert not path.exists()
    assert HeadFile(path).read() == (None, None)
    written = HeadFile(path)
    written.write(Head(seq=2, hash=f"{2:064x}"), None)
    assert HeadFile(path).read() == (Head(seq=2, hash=f"{2:064x}"), None)
    written.close()


# -- resources ------------------------------------------------------------------------


def test_a_full_disk_is_store_full_for_batched_writes(short_tmp: Path) -> None:
    with tmpfs(short_tmp / "data", "3m") as data:
        (data / "ballast").write_bytes(os.urandom(512 << 10))
        daemon = Running(short_tmp).start()
        try:
            reasons = set()
            with daemon.connect() as conn:
                for batch in range(200):
                    requests = [
                        ("memory.remember", {"content": f"filler {batch}.{n} " + "lorem " * 300})
                        for n in range(20)
                    ]
                    errors = [r["error"] for r in pipelined(conn, requests) if "error" in r]
                    reasons |= {(e.get("data") or {}).get("reason") for e in errors}
                    if errors:
                        break
        finally:
            daemon.stop()
    assert reasons == {"store_full"}, reasons


def test_an_unwritable_store_file_is_a_clear_error(daemon: Running) -> None:
    with daemon.connect() as conn, immutable([daemon.data / "lmdb" / "data.mdb"]):
        reply = conn.request("memory.remember", content="while data.mdb is read-only")
    assert reply["error"]["code"] != -32603, reply


# -- trust ------------------------------------------------------------------------------

CREDENTIAL = "ghp_000777A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5"


def test_a_credential_as_a_session_id_never_reaches_the_disk(daemon: Running) -> None:
    script = (
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rwb')\n"
        "for i, (m, p) in enumerate(json.loads(sys.argv[2])):\n"
        "    f.write(json.dumps({'jsonrpc': '2.0', 'method': m, 'params': p, 'id': i}).encode()"
        " + b'\\n'); f.flush(); f.readline()\n"
    )
    calls = [("session.restrict", {"host": "codex", "session_id": CREDENTIAL}),
             ("memory.remember", {"content": "a plain note from the agent"})]  # fmt: skip
    subprocess.run([sys.executable, "-c", script, str(daemon.socket), json.dumps(calls)],
                   check=True, timeout=30, env=clean_env())  # fmt: skip
    daemon.stop()
    stored = b"".join(p.read_bytes() for p in daemon.data.rglob("*") if p.is_file())
    assert stored.count(CREDENTIAL.encode()) == 0, "the session id is in the store"


NON_DUMPABLE_PARENT = r"""
import ctypes, subprocess, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: our environ is unreadable
cli = [sys.executable, "-m", "hikmah_cli", "--socket", sys.argv[1], "--no-autostart",
       "remember", "an agent's words, as verified", "--verified"]
sys.exit(subprocess.run(cli, env={"PATH": "/usr/bin:/bin"}).returncode)
"""


def test_an_unreadable_ancestor_does_not_make_an_agent_a_person(short_tmp: Path) -> None:
    prefix = unprivileged_prefix()
    daemon = Launched(short_tmp, prefix).start()
    try:
        result = subprocess.run(
            [*prefix, sys.executable, "-c", NON_DUMPABLE_PARENT, str(daemon.socket)],
            capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2],
            env=clean_env(CLAUDECODE="1"),
        )  # fmt: skip
        assert result.returncode == 3, result.stdout + result.stderr
    finally:
        daemon.stop()


# -- the credential detector ---------------------------------------------------------


def test_a_redacted_text_holds_no_credential_the_detector_finds() -> None:
    from hikmah.model import secrets

    text = "s://PASSWORD=02/DBs:/;:s@D"
    assert secrets.find_secret(text) is not None
    redacted = secrets.redact(text)
    assert "02/DBs" not in redacted
    assert secrets.find_secret(redacted) is None, redacted
