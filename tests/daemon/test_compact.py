"""ledger.compact through a real daemon: purged text leaves every file, the daemon keeps
serving, an agent cannot run it, and kill -9 in the middle leaves a consistent store."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

from hikmah.store import maintenance
from hikmah.store.core import Store
from tests.harness.daemon import Running

SECRET = "the cellar door code is purple elephant"


def every_byte(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def test_compact_removes_purged_text_while_the_daemon_serves(daemon: Running) -> None:
    gone = daemon.call("memory.remember", content=SECRET)["trace"]
    kept = daemon.call("memory.remember", content="the cellar stays locked at night")["trace"]
    purged = daemon.cli("purge", "--id", gone["id"], "--reason", "asked to forget")
    assert purged.returncode == 0 and "hikmah compact" in purged.stdout
    assert SECRET.encode() in every_byte(daemon.data)  # still in the ledger, as it says

    shown = daemon.cli("compact")
    assert shown.returncode == 0 and "removed the text of 1 purged trace" in shown.stdout
    assert "nothing to compact" in daemon.cli("compact").stdout
    with daemon.connect() as conn:
        done = conn.call("ledger.compact")
        assert done["redacted"] == []
        assert conn.call("ledger.verify")["ok"]
        (hit,) = conn.call("memory.recall", query="cellar")["results"]
        assert hit["trace"]["id"] == kept["id"]
        conn.call("memory.remember", content="writes go on after compaction")
    assert SECRET.encode() not in every_byte(daemon.data)


def test_an_agent_session_cannot_compact(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.call("session.restrict", host="claude-code", session_id="s1")
        refused = conn.request("ledger.compact")
    assert refused["error"]["data"]["reason"] == "agent_restricted"


def test_kill_9_during_compaction_leaves_a_consistent_store(short_tmp: Path) -> None:
    rng = random.Random(5)
    daemon = Running(short_tmp).start()
    try:
        with daemon.connect() as conn:
            for batch in range(6):
                conn.send_raw(
                    b"".join(
                        b'{"jsonrpc":"2.0","method":"memory.remember","params":{"content":'
                        b'"note %d of batch %d about the deploy cache"},"id":%d}\n' % (n, batch, n)
                        for n in range(500)
                    )
                )
                for _ in range(500):
                    conn.read()
            ids = [r["trace"]["id"] for r in conn.call("memory.recall", query="deploy cache",
                                                          limit=40)["results"]]  # fmt: skip
            for trace_id in ids:
                conn.call("memory.purge", id=trace_id, reason="test")
        for _round in range(3):
            caller = threading.Thread(target=_compact_quietly, args=(daemon,))
            caller.start()
            time.sleep(rng.uniform(0.0, 0.15))
            daemon.kill(signal.SIGKILL)
            caller.join()
            with Store(daemon.data) as store:
                report = maintenance.verify(store)
                assert report.ok, report.errors
                assert store.head == report.head
            daemon.start()
            with daemon.connect() as conn:
                assert conn.call("ledger.verify")["ok"]
                conn.call("memory.remember", content="still writable")
    finally:
        daemon.stop()


def _compact_quietly(daemon: Running) -> None:
    try:
        with daemon.connect() as conn:
            conn.request("ledger.compact")
    except (OSError, EOFError):
        pass  # killed under us, as intended
