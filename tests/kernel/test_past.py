"""Reads as of a point in the past, over a real store: the ledger's clock, records
written before payloads carried their time, the vault, and what a person may write."""

from __future__ import annotations

import gc
from pathlib import Path

import msgspec
import pytest

from hikmah.index import queries
from hikmah.index.layout import SEQ
from hikmah.index.past import Past, as_of, moment
from hikmah.ledger.chain import GENESIS, encode_record
from hikmah.ledger.payloads import PAYLOAD_ENCODER, FulfillPayload, RememberPayload
from hikmah.model.deadlines import parse_moment
from hikmah.model.errors import InvalidInput
from hikmah.model.moment import Moment
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.model.trace import Trace
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Fulfill
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import DAY, NOW, remember, write

HOUR = 3_600_000


def test_a_time_names_the_last_record_written_by_then(store: Store) -> None:
    remember(store, "one", now=NOW)
    remember(store, "two", now=NOW + HOUR)
    remember(store, "three", now=NOW - DAY)  # a clock that stepped back
    with store.snapshot() as snapshot:
        assert [snapshot.written_at(seq) for seq in (1, 2, 3)] == [NOW, NOW + HOUR, NOW + HOUR]
        assert snapshot.seq_at(NOW - 1) == 0
        assert snapshot.seq_at(NOW + HOUR - 1) == 1
        assert snapshot.seq_at(NOW + DAY) == 3
        later = NOW + 2 * HOUR
        assert moment(snapshot, "-1h", later) == Moment(seq=3, at=NOW + HOUR)
        assert moment(snapshot, 2, later) == Moment(seq=2, at=NOW + HOUR)
        assert moment(snapshot, "1", later) == Moment(seq=1, at=NOW)
        for bad in (4, -1, "+1h", "tomorrow", True):
            with pytest.raises(InvalidInput):
                moment(snapshot, bad, later)  # type: ignore[arg-type]


def test_the_forms_of_a_moment() -> None:
    now = 1_780_000_000_000  # 2026-05-28T20:26:40Z
    assert parse_moment("-3d", now) == now - 3 * DAY
    assert parse_moment("2026-05-28", now) == now - (20 * 3600 + 26 * 60 + 40) * 1000
    assert parse_moment("2026-05-28T20:00", now) == now - (26 * 60 + 40) * 1000
    assert parse_moment("20:26:40", now) == now
    for bad in ("25:00", "2026-13-01", "+3d", "3d", ""):
        with pytest.raises(InvalidInput):
            parse_moment(bad, now)


def test_records_without_their_time_verify_and_read_as_of(tmp_path: Path) -> None:
    """A ledger written before payloads said when (and a reference's): its hashes are
    what they were, and each record takes the time of the last one that said."""
    old = Trace(id="tr_old", kind="commitment", content="file the taxes", created_at=NOW)
    # An old remember had no "at" at all (None is written out: take it out again).
    remembered = PAYLOAD_ENCODER.encode(RememberPayload(trace=old))
    assert b',"at":null' in remembered
    bodies = [remembered.replace(b',"at":null', b""), b'{"type":"fulfill","id":"tr_old","by":null}']
    with Store(tmp_path / "data") as store:
        prev, lines = GENESIS, []
        for seq, body in enumerate(bodies, 1):
            record = encode_record(seq, prev, body)
            lines.append(record.line)
            prev = record.hash
        with store.transaction() as snapshot:
            for seq, line in enumerate(lines, 1):
                snapshot.txn.put(SEQ.pack(seq), line, db=store.dbs.ledger)
        maintenance.reset_head(store)
        assert maintenance.verify(store).ok
        assert store.read(lambda s: [line for _seq, line in s.records()]) == lines
        assert msgspec.json.decode(bodies[1], type=FulfillPayload).at is None
        # A new record says when it was written.
        later = remember(store, "a new one", now=NOW + DAY)
        with store.snapshot() as snapshot:
            assert [snapshot.written_at(seq) for seq in (1, 2, 3)] == [NOW, NOW, NOW + DAY]
            assert b'"at":%d' % (NOW + DAY) in dict(snapshot.records())[3]
            before = as_of(snapshot, 1, NOW + DAY)
            assert queries.get(before, "tr_old").status == "active"
            assert queries.get(snapshot, "tr_old").status == "fulfilled"
            assert before.docno(later.id) is None


def test_as_of_under_the_vault_reads_blind_claims(tmp_path: Path) -> None:
    keys = HeldKeys()
    with Store(tmp_path / "data", vault=keys.loader()) as store:
        first = remember(store, "deploys go out on friday", claim_key="deploy", claim_value="fri")
        remember(
            store, "deploys go out on monday", claim_key="deploy", claim_value="mon", now=NOW + HOUR
        )
        remember(
            store, "monday it is", claim_key="deploy", claim_value="mon", supersedes=first.id,
            now=NOW + 2 * HOUR,
        )  # fmt: skip
        with store.snapshot() as snapshot:
            assert queries.conflicts(snapshot) == []
            then = as_of(snapshot, 2, NOW)
            assert isinstance(then, Past)
            groups = queries.conflicts(then, "DEPLOY")
            assert [[v.value for v in g.values] for g in groups] == [["fri", "mon"]]
            history = queries.claim_history(snapshot, "deploy")
            assert [(v.value, v.status) for v in history] == [
                ("fri", "superseded"), ("mon", "active"), ("mon", "active"),
            ]  # fmt: skip
            assert history[0].ended == Moment(seq=4, at=NOW + 2 * HOUR)
            found = recall(
                then, RecallQuery(query="deploys friday"), now_ms=NOW + HOUR, policy=KernelPolicy()
            )
            assert found[0].trace.id == first.id and found[0].status == "active"
            assert found[0].conflicts and found[0].superseded_by is None


def test_a_fulfilment_made_later_is_not_made_yet(store: Store) -> None:
    todo = remember(store, "renew the domain", kind="commitment", deadline="+1d")
    write(store, Fulfill(id=todo.id), now=NOW + HOUR)
    with store.snapshot() as snapshot:
        then = as_of(snapshot, 1, NOW + 2 * HOUR)
        assert [e.trace.id for e in queries.commitments(then)] == [todo.id]
        assert queries.commitments(snapshot) == []
        assert then.overdue(NOW + 2 * DAY).tolist() == [0]


def test_a_read_as_of_the_past_lets_its_transaction_go_at_once(store: Store) -> None:
    """Nothing it builds holds it in a reference cycle: were it so, each read as of the
    past would keep a reader slot until the cyclic collector ran, and a daemon answering
    them back to back ran out of slots (126) after as many recalls."""
    for n in range(3):
        remember(store, f"the release train leaves on thursday {n}", tags=("release",))
    query = RecallQuery(query="release train thursday", limit=10)

    def slots() -> int:
        return int(store.env.info()["num_readers"])

    def read_as_of(seq: int) -> int:
        with store.snapshot() as present:
            then = as_of(present, seq, NOW + DAY)
            found = recall(then, query, now_ms=NOW + DAY, policy=KernelPolicy())
            return len(found) + len(queries.commitments(then))

    gc.disable()
    try:
        read_as_of(2)
        before = slots()
        assert [read_as_of(seq) for seq in (1, 2, 3)] == [1, 2, 3]
        assert slots() == before
        assert not [o for o in gc.get_objects() if isinstance(o, Past)]
    finally:
        gc.enable()
