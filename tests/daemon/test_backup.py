"""``hikmah backup`` while the daemon serves writes, and ``hikmahd --restore`` checking a
backup before it replaces anything."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import blake3
import lmdb

from hikmah.ledger.chain import decode_record
from hikmah.ledger.headfile import HeadFile
from hikmah.model.head import Head
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

WRITERS = 4


def backup(daemon: Running, target: Path) -> Any:
    result = daemon.cli("backup", str(target), "--json", env=clean_env())
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def restore(data: Path, source: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hikmahd", "--data-dir", str(data), "--restore", str(source)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def export(daemon: Running) -> list[str]:
    result = daemon.cli("export", "--include-superseded", env=clean_env())
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def snapshot_of(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name not in ("lock.mdb", "hikmahd.lock")
    }


def test_a_backup_taken_under_writes_restores_a_consistent_prefix(
    daemon: Running, short_tmp: Path
) -> None:
    stop = threading.Event()
    acknowledged: list[list[str]] = [[] for _ in range(WRITERS)]

    def writer(n: int) -> None:
        with daemon.connect() as conn:
            i = 0
            while not stop.is_set():
                reply = conn.call("memory.remember", content=f"writer {n} note {i}")
                acknowledged[n].append(reply["trace"]["id"])
                i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    try:
        while sum(map(len, acknowledged)) < 200:
            time.sleep(0.01)
        before = {trace_id for ids in acknowledged for trace_id in ids}
        manifest = backup(daemon, short_tmp / "backup")
        while sum(map(len, acknowledged)) < len(before) + 200:
            time.sleep(0.01)  # the daemon kept taking writes after the backup
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    everything = export(daemon)
    assert (short_tmp / "backup").stat().st_mode & 0o777 == 0o700
    assert manifest["records"] >= len(before)
    assert manifest["head"]["seq"] == manifest["records"]

    fresh = Running(short_tmp / "r")
    (short_tmp / "r").mkdir()
    restored = restore(fresh.data, short_tmp / "backup")
    assert restored.returncode == 0, restored.stderr
    assert f"restored {manifest['records']} ledger records" in restored.stdout
    fresh.start()
    try:
        report = fresh.call("ledger.verify")
        assert report["ok"], report["errors"]
        assert report["head"] == manifest["head"]
        copied = export(fresh)
        # Exactly the writes up to one moment: a prefix of the live memory, in write order,
        # holding every write acknowledged before the backup was asked for.
        assert copied == everything[: len(copied)] and len(copied) == manifest["records"]
        assert before <= {json.loads(line)["id"] for line in copied}
        assert len(everything) > len(copied)
        written = fresh.call("memory.remember", content="the restored store takes writes")
        assert written["trace"]["id"]
    finally:
        fresh.stop()


def test_restore_over_a_data_directory_moves_it_aside(daemon: Running, short_tmp: Path) -> None:
    daemon.call("memory.remember", content="the office is on floor 3")
    manifest = backup(daemon, short_tmp / "backup")
    daemon.call("memory.remember", content="the office moved to floor 5")
    daemon.stop()
    live = snapshot_of(daemon.data)
    restored = restore(daemon.data, short_tmp / "backup")
    assert restored.returncode == 0, restored.stderr
    (aside,) = short_tmp.glob("data.before-restore-*")
    assert str(aside) in restored.stdout
    assert snapshot_of(aside) == live  # the current data, untouched, beside it
    daemon.start()
    found = daemon.call("memory.recall", query="office floor")["results"]
    assert [r["trace"]["content"] for r in found] == ["the office is on floor 3"]
    assert daemon.call("ledger.verify")["head"] == manifest["head"]


def test_a_damaged_backup_is_refused_and_nothing_changes(daemon: Running, short_tmp: Path) -> None:
    for n in range(5):
        daemon.call("memory.remember", content=f"note number {n}")
    good = short_tmp / "backup"
    backup(daemon, good)
    daemon.stop()
    live = snapshot_of(daemon.data)

    flipped = short_tmp / "flipped"
    shutil.copytree(good, flipped)
    data = flipped / "lmdb" / "data.mdb"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    data.write_bytes(bytes(raw))

    # A record rewritten inside the copy, with the manifest's checksum made to match:
    # the hash chain still tells.
    rewritten = short_tmp / "rewritten"
    shutil.copytree(good, rewritten)
    env = lmdb.open(str(rewritten / "lmdb"), max_dbs=16)
    ledger = env.open_db(b"ledger")
    with env.begin(write=True) as txn:
        key, line = next(iter(txn.cursor(db=ledger)))
        txn.put(key, bytes(line).replace(b"note number 0", b"note number 9"), db=ledger)
    env.close()
    (rewritten / "lmdb" / "lock.mdb").unlink()
    manifest = json.loads((rewritten / "manifest.json").read_text())
    manifest["data_blake3"] = blake3.blake3(
        (rewritten / "lmdb" / "data.mdb").read_bytes()
    ).hexdigest()
    manifest["data_bytes"] = (rewritten / "lmdb" / "data.mdb").stat().st_size
    (rewritten / "manifest.json").write_text(json.dumps(manifest))

    # A head moved back (to the true first record), with the manifest agreeing: the
    # records past it are a tail nobody acknowledged.
    behind = short_tmp / "behind"
    shutil.copytree(good, behind)
    env = lmdb.open(str(behind / "lmdb"), max_dbs=16, readonly=True, lock=False)
    with env.begin() as txn:
        _, line = next(iter(txn.cursor(db=env.open_db(b"ledger", txn=txn, create=False))))
        first = decode_record(bytes(line))
    env.close()
    (behind / "head").unlink()
    HeadFile(behind / "head").write(Head(seq=1, hash=first.hash), None)
    manifest = json.loads((behind / "manifest.json").read_text())
    manifest["head"] = {"seq": 1, "hash": first.hash}
    (behind / "manifest.json").write_text(json.dumps(manifest))

    unfinished = short_tmp / "unfinished"
    shutil.copytree(good, unfinished)
    (unfinished / "manifest.json").unlink()

    for source, why in (
        (flipped, "does not match its manifest"),
        (rewritten, "does not verify"),
        (behind, "unacknowledged"),
        (unfinished, "no manifest.json"),
        (short_tmp / "nowhere", "no manifest.json"),
    ):
        refused = restore(daemon.data, source)
        assert refused.returncode == 1, (source, refused.stdout)
        assert why in refused.stderr, (source, refused.stderr)
        assert snapshot_of(daemon.data) == live
    assert not list(short_tmp.glob("data.*"))


def test_backup_refuses_a_used_relative_or_inner_directory(
    daemon: Running, short_tmp: Path
) -> None:
    busy = short_tmp / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    result = daemon.cli("backup", str(busy), env=clean_env())
    assert result.returncode == 2 and "not empty" in result.stderr
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    with daemon.connect() as conn:
        relative = conn.request("daemon.backup", dir="relative/dir")
        inside = conn.request("daemon.backup", dir=str(daemon.data / "backup"))
    assert relative["error"]["data"]["reason"] == "invalid"
    assert "outside the data directory" in inside["error"]["message"]
    assert not (daemon.data / "backup").exists()


def test_restore_refuses_while_a_daemon_serves_the_data(daemon: Running, short_tmp: Path) -> None:
    daemon.call("memory.remember", content="still being served")
    backup(daemon, short_tmp / "backup")
    refused = restore(daemon.data, short_tmp / "backup")
    assert refused.returncode == 1 and "another hikmahd" in refused.stderr
    assert daemon.call("ledger.verify")["ok"]
