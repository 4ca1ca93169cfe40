"""Tampering: changes made to the data directory behind the daemon's
back are caught by ``ledger.verify``, never laundered by a later write, and while
the ledger has records nobody acknowledged (a forged tail, a replaced head) every
write is refused.

Cases: a sample (seeded) of single-byte changes to every stored record, each
record deleted, each adjacent pair swapped, a tail appended by another process
while the daemon writes, the head file replaced (an older copy, another store's,
garbage, deleted), and a ledger re-chained with a matching head, which only
``--expect-head`` catches. Most cases run on the real daemon objects in this
process (tests/reliability/inprocess.py), one copy of a populated store each.

Writes are refused only while the ledger has an *unacknowledged tail* (the
documented rule: docs/storage.md). A record changed in the middle does not stop
writes; what is checked then is that the change stays reported after the write.
Three cases about the *last* records are in test_found_bugs.py, where they were
found: a last record left unparseable, the last record deleted after a clean stop,
the last two records swapped.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest

from hikmah.ledger.chain import GENESIS, decode_record, encode_record
from hikmah.ledger.headfile import HeadFile
from hikmah.model.errors import LedgerError
from hikmah.model.head import Head
from tests.harness.daemon import Running

from .harness import Book, check_data_dir, ledger_rows, put_raw, writers
from .inprocess import in_process
from .strategies import request_line

POSITIONS = 4  # random byte positions per record, besides the first and the last


def call(root: Path, method: str, **params: Any) -> dict[str, Any]:
    with in_process(root) as daemon:
        (reply,) = daemon.exchange([request_line(method, params)]).replies
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding every kind of record a write makes."""
    root = tmp_path_factory.mktemp("template")
    first = call(root, "memory.remember", content="region is us-east-1", claim_key="region",
                 claim_value="us-east-1", tags=["infra"], source="human:ana", verified=True)  # fmt: skip
    call(root, "memory.remember", content="region is eu-west-1 now", supersedes=first["trace"]["id"],
         kind="correction", verified=True)  # fmt: skip
    todo = call(
        root, "memory.remember", content="rotate the cert", kind="commitment", deadline="+3d"
    )
    call(root, "memory.fulfill", id=todo["trace"]["id"])
    note = call(root, "memory.remember", content="the staging cache is warm", scope="project:/srv")
    call(root, "memory.feedback", ids=[note["trace"]["id"]], outcome="good")
    call(root, "memory.pin", id=note["trace"]["id"])
    gone = call(root, "memory.remember", content="a note to forget")
    call(root, "memory.purge", id=gone["trace"]["id"], reason="no longer true")
    forecast = call(root, "memory.predict", family="ci", question="Green?", type="noul", p=0.8)
    call(root, "memory.outcome", prediction=forecast["trace"]["id"], observed="yes")
    call(root, "memory.remember", content="the last record, an ordinary note")
    return root


Tamper = Callable[[Path], None]


def byte_cases(rows: list[tuple[int, bytes]], rng: random.Random) -> Iterator[tuple[str, Tamper]]:
    last = rows[-1][0]
    for seq, line in rows:
        for position in {0, len(line) - 1, *(rng.randrange(len(line)) for _ in range(POSITIONS))}:
            new = bytes([rng.choice([b for b in range(256) if b != line[position]])])
            changed = line[:position] + new + line[position + 1 :]
            if seq == last and not _parses(changed):
                continue  # the daemon cannot start at all: test_found_bugs.py
            yield f"byte {position} of seq {seq}", _putter({seq: changed})


def _parses(line: bytes) -> bool:
    try:
        decode_record(line)
    except LedgerError:
        return False
    return True


def _putter(changes: dict[int, bytes | None]) -> Tamper:
    return lambda data: put_raw(data, changes)


def structure_cases(rows: list[tuple[int, bytes]]) -> Iterator[tuple[str, Tamper]]:
    lines = dict(rows)
    for seq in list(lines)[:-1]:  # the last one deleted goes unnoticed: test_found_bugs.py
        yield f"seq {seq} deleted", _putter({seq: None})
    for seq in list(lines)[:-2]:  # the last two swapped: test_found_bugs.py
        yield (
            f"seqs {seq} and {seq + 1} swapped",
            _putter({seq: lines[seq + 1], seq + 1: lines[seq]}),
        )


def run_case(template: Path, work: Path, tamper: Tamper) -> list[dict[str, Any]]:
    shutil.copytree(template, work)
    tamper(work / "data")
    with in_process(work) as daemon:
        exchange = daemon.exchange(
            [
                request_line("ledger.verify", {}, 1),
                request_line("memory.remember", {"content": "a write after the tampering"}, 2),
            ]
        )
        (after,) = daemon.exchange([request_line("ledger.verify", {}, 3)]).replies
    replies = sorted(exchange.replies, key=lambda r: r["id"])
    write = replies[1]
    if "result" in write:
        # An acknowledged write must be in the ledger, not only in the indexes.
        trace_id = write["result"]["trace"]["id"].encode()
        assert any(trace_id in line for _seq, line in ledger_rows(work / "data")), write
    return [*replies, after]


def check_caught(name: str, replies: list[dict[str, Any]], *, refused: bool) -> bool:
    """True when the write went through (and the tampering stayed reported)."""
    before, write, after = replies
    assert not before["result"]["ok"], f"{name}: not caught by ledger.verify"
    if "error" in write:
        assert write["error"]["data"]["reason"] in ("conflict", "ledger"), (name, write)
        return False
    assert not refused, f"{name}: a write was accepted on an unacknowledged ledger"
    assert not after["result"]["ok"], f"{name}: a later write laundered the change"
    assert before["result"]["errors"][0] in after["result"]["errors"], (name, after)
    return True


def test_every_record_changed_deleted_or_swapped_is_caught(
    template: Path, tmp_path: Path, rng: random.Random
) -> None:
    rows = ledger_rows(template / "data")
    assert len(rows) >= 12
    written = refused = 0
    cases = [*byte_cases(rows, rng), *structure_cases(rows)]
    for number, (name, tamper) in enumerate(cases):
        replies = run_case(template, tmp_path / str(number), tamper)
        if check_caught(name, replies, refused=False):
            written += 1
        else:
            refused += 1
        shutil.rmtree(tmp_path / str(number))
    print(f"{len(cases)} cases: every one caught; writes refused in {refused}, accepted in"
          f" {written} (a change before the last record does not stop writes)")  # fmt: skip


def _head_file(data: Path) -> bytes:
    return (data / "head").read_bytes()


def test_a_replaced_head_or_an_altered_last_hash_stops_writes(
    template: Path, tmp_path: Path
) -> None:
    older = tmp_path / "older"
    shutil.copytree(template, older)
    old_head = _head_file(older / "data")
    call(older, "memory.remember", content="one more record after the copy")
    other = tmp_path / "other"
    call(other, "memory.remember", content="a different store")
    seq, line = ledger_rows(older / "data")[-1]
    digit = line.rindex(b'"hash":"') + 8
    flipped = line[:digit] + (b"0" if line[digit : digit + 1] != b"0" else b"1") + line[digit + 1 :]
    cases: dict[str, Tamper] = {
        "the last record's hash altered": _putter({seq: flipped}),
        "an older copy of the head": lambda d: (d / "head").write_bytes(old_head),
        "another store's head": lambda d: (d / "head").write_bytes(_head_file(other / "data")),
        "garbage": lambda d: (d / "head").write_bytes(random.Random(1).randbytes(512)),
        "a truncated head": lambda d: (d / "head").write_bytes(b""),
        "deleted": lambda d: (d / "head").unlink(),
    }
    for number, (name, tamper) in enumerate(cases.items()):
        replies = run_case(older, tmp_path / f"case{number}", tamper)
        check_caught(name, replies, refused=True)


FORGER = """
import struct, sys, lmdb
from hikmah.ledger.chain import decode_record, encode_record
env = lmdb.open(sys.argv[1], max_dbs=16)
db = env.open_db(b"ledger")
with env.begin(write=True) as txn:
    cursor = txn.cursor(db=db)
    cursor.last()
    last = decode_record(bytes(cursor.value()))
    forged = encode_record(last.seq + 1, last.hash, b'{"type":"purge","id":"tr_x","reason":"forged"}')
    txn.put(struct.pack(">Q", forged.seq), forged.line, db=db)
print(forged.seq)
"""


def test_a_tail_forged_by_another_process_while_writers_run(
    daemon: Running, rng: random.Random
) -> None:
    """16 writers are writing when another process appends a well-chained record: from
    then on every write is refused, nothing acknowledged is lost, and after a person
    accepts the tail (tests/daemon/test_durability.py) writes go on."""
    book = Book()
    with writers(daemon.socket, book, 0):
        threading.Event().wait(rng.uniform(0.2, 0.5))
        forged = subprocess.run(
            [sys.executable, "-c", FORGER, str(daemon.data / "lmdb")],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        threading.Event().wait(0.3)
    seq = int(forged.stdout)
    assert book.acked and book.refused, book.summary()
    assert {e["data"]["reason"] for _p, e in book.refused} == {"conflict"}
    report = daemon.call("ledger.verify")
    assert not report["ok"] and report["records"] == seq
    daemon.stop()
    rows = ledger_rows(daemon.data)
    assert rows[-1][0] == seq and b'"forged"' in rows[-1][1]
    # Every acknowledged write is there, every refused one absent; drop the forged
    # record first so the chain the books are checked against verifies.
    put_raw(daemon.data, {seq: None})
    check_data_dir(daemon.data, book)


def test_a_rechained_ledger_passes_verify_and_only_expect_head_catches_it(
    daemon: Running,
) -> None:
    """Whoever can rewrite both the ledger and the head file can re-chain undetected
    (docs/storage.md); a head pinned elsewhere catches it."""
    for i in range(6):
        daemon.call("memory.remember", content=f"fact {i}: the deploy window is Tuesday")
    pinned = daemon.call("ledger.verify")["head"]
    pin = f"{pinned['seq']}:{pinned['hash']}"
    daemon.stop()
    rows = ledger_rows(daemon.data)
    prev, changes = GENESIS, {}
    for seq, line in rows:
        record = decode_record(line)
        payload = record.payload.replace(b"Tuesday", b"Fridays") if seq == 3 else record.payload
        rewritten = encode_record(seq, prev, payload)
        changes[seq] = rewritten.line
        prev = rewritten.hash
    put_raw(daemon.data, changes)
    head = HeadFile(daemon.data / "head")
    head.read()
    head.write(Head(seq=rows[-1][0], hash=prev), None)
    head.close()
    daemon.start()
    plain = daemon.cli("verify-ledger", "--json")
    assert plain.returncode == 0 and json.loads(plain.stdout)["ok"], plain.stdout
    pinned_check = daemon.cli("verify-ledger", "--expect-head", pin)
    assert pinned_check.returncode == 1, pinned_check.stdout + pinned_check.stderr
    assert "NOT OK" in pinned_check.stdout


def test_changed_indexes_are_not_the_ledgers_business_and_a_rebuild_restores_them(
    template: Path, tmp_path: Path
) -> None:
    """A documented limit (docs/security.md, threat model): ``verify`` checks the ledger,
    not the derived indexes. Whoever can write the data directory can change what
    recall shows without ``verify`` noticing; ``hikmahd --rebuild-index`` restores it."""
    work = tmp_path / "work"
    shutil.copytree(template, work)
    env = lmdb.open(str(work / "data" / "lmdb"), max_dbs=16)
    try:
        docs = env.open_db(b"docs")
        with env.begin(write=True) as txn:
            for key, value in txn.cursor(db=docs):
                if b"the staging cache is warm" in bytes(value):
                    changed = bytes(value).replace(b"is warm", b"is cold")
                    txn.put(bytes(key), changed, db=docs)
    finally:
        env.close()
    assert call(work, "ledger.verify")["ok"]
    recalled = call(work, "memory.recall", query="staging cache")["results"]
    assert recalled[0]["trace"]["content"] == "the staging cache is cold"
    rebuilt = subprocess.run(
        [sys.executable, "-m", "hikmahd", "--data-dir", str(work / "data"), "--rebuild-index"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr
    recalled = call(work, "memory.recall", query="staging cache")["results"]
    assert recalled[0]["trace"]["content"] == "the staging cache is warm"
