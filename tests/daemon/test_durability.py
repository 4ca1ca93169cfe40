"""Group commit and crash safety: acknowledged writes survive kill -9, and tampering shows."""

from __future__ import annotations

import random
import signal
import struct
import threading
import time

import lmdb

from tests.harness.daemon import Running
from tests.harness.sockets import Conn

WRITERS = 16


def write_until_stopped(
    daemon: Running, worker: int, acked: list[str], stop: threading.Event
) -> None:
    try:
        with Conn(daemon.socket) as conn:
            n = 0
            while not stop.is_set():
                reply = conn.request(
                    "memory.remember", content=f"worker {worker} note {n}", tags=[f"w{worker}"]
                )
                if "result" in reply:
                    acked.append(reply["result"]["trace"]["id"])
                n += 1
    except (OSError, EOFError, ValueError):
        return  # the daemon was killed under us: what was acknowledged is in `acked`


def concurrent_writes(daemon: Running, seconds: float, *, kill: bool = False) -> list[str]:
    """Ids acknowledged to 16 writers over ``seconds``, then optionally kill -9 the daemon."""
    acked: list[str] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=write_until_stopped, args=(daemon, w, acked, stop))
        for w in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    if kill:
        daemon.kill(signal.SIGKILL)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    return acked


def test_concurrent_writers_then_kill_9_lose_nothing_acknowledged(daemon: Running) -> None:
    rng = random.Random(20261130)
    for _round in range(3):
        acked = concurrent_writes(daemon, rng.uniform(0.3, 1.0), kill=True)
        assert acked, "no write was acknowledged before the kill"
        daemon.start()
        report = daemon.call("ledger.verify")
        assert report["ok"], report
        for trace_id in acked:
            shown = daemon.call("memory.show", id=trace_id)
            assert shown["trace"]["id"] == trace_id
        counts = daemon.call("daemon.status")["counts"]
        assert counts["active"] >= len(acked)
        assert counts["active"] == report["records"]


def test_group_commit_batches_concurrent_writers(daemon: Running) -> None:
    acked = concurrent_writes(daemon, 1.0)
    # Every acknowledged write is its own record, and the ids are all distinct.
    assert len(set(acked)) == len(acked)
    assert daemon.call("ledger.verify")["records"] == len(acked)


def test_a_record_tampered_with_on_disk_is_caught(daemon: Running) -> None:
    for i in range(5):
        daemon.call("memory.remember", content=f"fact number {i}")
    daemon.stop()
    env = lmdb.open(str(daemon.data / "lmdb"), max_dbs=16)
    ledger = env.open_db(b"ledger")
    with env.begin(write=True) as txn:
        key = struct.pack(">Q", 3)
        line = bytes(txn.get(key, db=ledger))
        txn.put(key, line.replace(b"fact number 2", b"fact number 9"), db=ledger)
    env.close()
    daemon.start()
    result = daemon.cli("verify-ledger")
    assert result.returncode == 1
    assert "NOT OK" in result.stdout
    assert "3" in result.stdout
    as_json = daemon.cli("verify-ledger", "--json")
    assert '"ok": false' in as_json.stdout


def test_a_forged_append_blocks_writes_until_a_person_accepts_it(daemon: Running) -> None:
    daemon.call("memory.remember", content="genuine")
    daemon.stop()
    from hikmah.ledger.chain import decode_record, encode_record

    env = lmdb.open(str(daemon.data / "lmdb"), max_dbs=16)
    ledger = env.open_db(b"ledger")
    with env.begin(write=True) as txn:
        last = decode_record(bytes(txn.get(struct.pack(">Q", 1), db=ledger)))
        forged = encode_record(2, last.hash, b'{"type":"fulfill","id":"tr_x"}')
        txn.put(struct.pack(">Q", 2), forged.line, db=ledger)
    env.close()
    daemon.start()
    with daemon.connect() as conn:
        refused = conn.request("memory.remember", content="after the forgery")
    assert refused["error"]["data"]["reason"] == "conflict"
    listed = daemon.cli("verify-ledger")
    assert listed.returncode == 1 and "#2 fulfill" in listed.stdout
    # An agent session can neither accept the tail nor reset the head over it.
    with daemon.connect() as agent:
        agent.call("session.restrict", host="codex", session_id="1")
        for flag in ("accept_tail", "reset_head"):
            refused = agent.request("ledger.verify", **{flag: True})
            assert refused["error"]["data"]["reason"] == "agent_restricted"
        assert agent.call("ledger.verify")["unacknowledged"][0]["seq"] == 2
    accepted = daemon.cli("verify-ledger", "--accept-tail")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert daemon.call("memory.remember", content="after acceptance")["trace"]["id"]


def test_a_full_store_refuses_writes_and_keeps_serving_reads(short_tmp) -> None:  # type: ignore[no-untyped-def]
    daemon = Running(short_tmp, "--max-store-mib", "1").start()
    try:
        with daemon.connect() as conn:
            first = conn.call("memory.remember", content="the first note fits")
            reply = {}
            for i in range(2000):
                reply = conn.request(
                    "memory.remember", content=f"filler {i} " + "lorem ipsum " * 40
                )
                if "error" in reply:
                    break
            assert reply["error"]["data"]["reason"] == "store_full"
            assert "nothing was written" in reply["error"]["message"]
            recalled = conn.call("memory.recall", query="first note")
            assert recalled["results"][0]["trace"]["id"] == first["trace"]["id"]
        assert daemon.call("ledger.verify")["ok"]
    finally:
        daemon.stop()
