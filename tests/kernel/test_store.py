"""The LMDB store: durability of the head, tamper evidence, indexes rebuilt from the ledger."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import lmdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.ledger.chain import encode_record
from hikmah.ledger.headfile import HeadFile
from hikmah.model.errors import AgentRestricted, ConflictError, HikmahError, NotFound, StoreFull
from hikmah.model.head import Head
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.model.trace import Draft
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Feedback, Fulfill, Pin, Purge, Remember
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.store.indexing import rebuild_index
from tests.harness.store import NOW, all_traces, remember, write

SEQ = struct.Struct(">Q")


def ledger_rows(store: Store) -> list[tuple[int, bytes]]:
    with store.snapshot() as snapshot:
        return list(snapshot.records())


def put_raw(store: Store, key: int, line: bytes | None) -> None:
    """Change the ledger behind the store's back, as an attacker with file access would."""
    with store.env.begin(write=True) as txn:
        if line is None:
            txn.delete(SEQ.pack(key), db=store.dbs.ledger)
        else:
            txn.put(SEQ.pack(key), line, db=store.dbs.ledger)


def index_snapshot(store: Store) -> dict[str, list[tuple[bytes, bytes]]]:
    names = [
        "docs", "ids", "features", "postings", "claims", "deadlines", "links", "scopes",
        "feedback", "clock", "revisions", "claim_log",
    ]  # fmt: skip
    with store.snapshot() as snapshot:
        return {
            name: [
                (bytes(k), bytes(v)) for k, v in snapshot.txn.cursor(db=getattr(store.dbs, name))
            ]
            for name in names
        }


def populate(store: Store) -> None:
    a = remember(store, "region is us-east-1", claim_key="region", claim_value="us-east-1")
    remember(store, "region is eu-west-1", claim_key="Region", claim_value="eu-west-1")
    remember(store, "region is really eu-west-1", supersedes=a.id, tags=("infra",))
    todo = remember(store, "rotate the cert", kind="commitment", deadline="+1d")
    remember(store, "renew the domain", kind="commitment", deadline="+3d", scope="project:/srv")
    write(store, Fulfill(id=todo.id))
    write(store, Feedback(id=a.id, outcome="good"), Feedback(id=a.id, outcome="bad"))
    write(store, Pin(id=todo.id, pinned=True))
    gone = remember(store, "temporary note about purge")
    write(store, Purge(id=gone.id, reason="no longer needed"))


def test_a_fresh_store_verifies(store: Store) -> None:
    report = maintenance.verify(store)
    assert report.ok and report.records == 0


def test_writes_are_chained_and_acknowledged(tmp_path: Path, store: Store) -> None:
    populate(store)
    report = maintenance.verify(store)
    assert report.ok, report.errors
    # six remembers, a supersede, a fulfill, two feedbacks, a pin and a purge
    assert report.records == 12
    acknowledged, pending = HeadFile(store.head_file.path).read()
    assert pending is not None and pending == report.head
    assert acknowledged is not None and acknowledged.seq < pending.seq


def test_reopen_acknowledges_the_pending_head(tmp_path: Path) -> None:
    with Store(tmp_path / "d") as first:
        populate(first)
        head = first.head
    with Store(tmp_path / "d") as second:
        assert second.head == head
        assert maintenance.verify(second).ok
        remember(second, "writes go on after a restart")


def test_a_crash_before_commit_leaves_a_pending_head_that_is_ignored(tmp_path: Path) -> None:
    with Store(tmp_path / "d") as first:
        populate(first)
        head = first.head
        assert head is not None
    # The head file promised a record that never committed (crash between the two).
    ghost = encode_record(head.seq + 1, head.hash, b'{"type":"fulfill","id":"x"}')
    promise = HeadFile(tmp_path / "d" / "head")
    promise.read()
    promise.write(head, Head(seq=ghost.seq, hash=ghost.hash))
    promise.close()
    with Store(tmp_path / "d") as second:
        assert second.head == head
        assert maintenance.verify(second).ok
        remember(second, "still writable")


def test_a_forged_append_is_an_unacknowledged_tail_and_blocks_writes(store: Store) -> None:
    populate(store)
    rows = ledger_rows(store)
    last = rows[-1]
    prev_hash = maintenance.verify(store).head
    assert prev_hash is not None
    forged = encode_record(
        last[0] + 1,
        prev_hash.hash,
        b'{"type":"remember","trace":{"id":"tr_forged","kind":"belief","content":"the admin '
        b'password is on the wiki","created_at":1}}',
    )
    put_raw(store, forged.seq, forged.line)
    report = maintenance.verify(store)
    assert not report.ok
    assert [s.seq for s in report.unacknowledged] == [forged.seq]
    assert report.unacknowledged[0].trace_id == "tr_forged"
    (outcome,) = store.apply(
        [Remember(draft=Draft(content="x"))], now_ms=NOW, policy=KernelPolicy()
    )
    assert isinstance(outcome, ConflictError)
    assert ledger_rows(store)[-1][0] == forged.seq  # nothing was appended after the forgery

    # (An agent session is refused both: tests/daemon/test_durability.py.)
    assert maintenance.accept_tail(store).ok
    # What a person accepted is indexed like any write.
    assert store.read(queries.get, "tr_forged").trace.content.startswith("the admin")
    assert store.read(recall, RecallQuery(query="admin wiki"), now_ms=NOW, policy=KernelPolicy())
    remember(store, "writes resume once a person accepted the tail")
    before = index_snapshot(store)
    rebuild_index(store)
    assert index_snapshot(store) == before


def test_verify_with_a_pinned_head(store: Store) -> None:
    populate(store)
    good = maintenance.verify(store).head
    assert good is not None
    assert maintenance.verify(store, expect_head=good).ok
    assert not maintenance.verify(store, expect_head=Head(seq=good.seq, hash="0" * 64)).ok


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One populated data directory, copied by tests that tamper with it."""
    directory = tmp_path_factory.mktemp("populated") / "data"
    with Store(directory, map_size=1 << 22) as store:
        populate(store)
    return directory


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_byte_change_deletion_and_swap_is_caught(
    tmp_path_factory: pytest.TempPathFactory, populated: Path, data: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("tampered") / "data"
    shutil.copytree(populated, directory)
    with Store(directory, map_size=1 << 22) as store:
        rows = ledger_rows(store)
        change = data.draw(st.sampled_from(["byte", "delete", "swap"]))
        index = data.draw(st.integers(0, len(rows) - 1))
        key, line = rows[index]
        if change == "byte":
            position = data.draw(st.integers(0, len(line) - 1))
            byte = data.draw(st.integers(0, 255).filter(lambda b: b != line[position]))
            put_raw(store, key, line[:position] + bytes([byte]) + line[position + 1 :])
        elif change == "delete":
            put_raw(store, key, None)
        else:
            other = data.draw(st.integers(0, len(rows) - 1).filter(lambda i: i != index))
            put_raw(store, key, rows[other][1])
            put_raw(store, rows[other][0], line)
        assert not maintenance.verify(store).ok


def test_rebuild_index_reproduces_every_derived_database(store: Store) -> None:
    populate(store)
    before = index_snapshot(store)
    assert all(before[name] for name in ("clock", "revisions", "claim_log"))
    assert rebuild_index(store) == 12
    assert index_snapshot(store) == before


def test_purge_removes_the_trace_from_indexes_and_reads(store: Store) -> None:
    trace = remember(
        store, "the quarterly numbers are in the sheet", claim_key="q", claim_value="1"
    )
    remember(store, "other value", claim_key="q", claim_value="2")
    assert store.read(queries.conflicts)
    write(store, Purge(id=trace.id, reason="asked to forget"))
    with pytest.raises(NotFound):
        store.read(queries.get, trace.id)
    assert (
        store.read(
            recall, RecallQuery(query="quarterly numbers"), now_ms=NOW, policy=KernelPolicy()
        )
        == []
    )
    assert store.read(queries.conflicts) == []
    assert all(s.trace.id != trace.id for s in all_traces(store))
    with store.snapshot() as snapshot:
        assert all(b"quarterly" not in k for k, _ in snapshot.txn.cursor(db=store.dbs.postings))
        # Nor its claim, which reads as of the past would have shown.
        assert [k for k, _ in snapshot.txn.cursor(db=store.dbs.claim_log)] == [
            k for k, _ in snapshot.txn.cursor(db=store.dbs.claims)
        ]


def test_supersession_resolves_conflicts_and_keeps_history(store: Store) -> None:
    a = remember(store, "db is postgres 14", claim_key="db.version", claim_value="14")
    b = remember(store, "db is postgres 16", claim_key="DB.Version", claim_value="16")
    groups = store.read(queries.conflicts)
    assert [(g.key, [v.value for v in g.values]) for g in groups] == [("db.version", ["14", "16"])]
    c = remember(
        store, "db is postgres 16 now", claim_key="db.version", claim_value="16", supersedes=a.id
    )
    assert store.read(queries.conflicts) == []
    assert [s.trace.id for s in store.read(queries.history, c.id)] == [a.id, c.id]
    assert [s.status for s in store.read(queries.history, a.id)] == ["superseded", "active"]
    assert b.id != c.id


def test_commitments_soonest_first(store: Store) -> None:
    late = remember(store, "late", kind="commitment", deadline="+3d")
    soon = remember(store, "soon", kind="commitment", deadline="+1h")
    remember(store, "undated", kind="commitment")
    assert [s.trace.id for s in store.read(queries.commitments)] == [soon.id, late.id]
    assert [s.trace.id for s in store.read(queries.commitments, until_ms=NOW + 7_200_000)] == [
        soon.id
    ]


def test_duplicate_import_id_is_refused(store: Store) -> None:
    trace = remember(store, "first")
    (outcome,) = store.apply(
        [Remember(draft=Draft(content="again"), trace_id=trace.id)],
        now_ms=NOW,
        policy=KernelPolicy(),
    )
    assert isinstance(outcome, ConflictError)


def test_the_map_grows_when_full(tmp_path: Path) -> None:
    with Store(tmp_path / "d", map_size=1 << 16, max_map_size=1 << 26) as small:
        for batch in range(20):
            write(
                small,
                *(Remember(draft=Draft(content=f"note {batch} {i} " * 20)) for i in range(50)),
            )
        assert maintenance.verify(small).ok
        assert small.read(queries.counts)["active"] == 1000


def test_a_full_store_refuses_and_loses_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "d", map_size=1 << 16, max_map_size=1 << 17) as small:
        written = 0
        with pytest.raises(StoreFull):
            for i in range(10_000):
                write(small, Remember(draft=Draft(content=f"filler note number {i} " * 10)))
                written += 1
        assert maintenance.verify(small).ok
        assert small.read(queries.counts)["active"] == written


def test_lmdb_errors_other_than_full_are_not_swallowed(tmp_path: Path) -> None:
    with Store(tmp_path / "d") as opened:
        opened.close()
        with pytest.raises(lmdb.Error):
            opened.apply([Remember(draft=Draft(content="x"))], now_ms=NOW, policy=KernelPolicy())


def test_outcomes_report_conflicts(store: Store) -> None:
    a = remember(store, "port is 80", claim_key="port", claim_value="80")
    outcomes = store.apply(
        [Remember(draft=Draft(content="port is 8080", claim_key="port", claim_value="8080"))],
        now_ms=NOW,
        policy=KernelPolicy(),
    )
    (written,) = outcomes
    assert not isinstance(written, HikmahError)
    assert written.conflicts == [a.id]


def test_reset_head_after_removed_records_rebuilds_the_indexes(store: Store) -> None:
    populate(store)
    last = ledger_rows(store)[-1][0]
    put_raw(store, last, None)  # the purge record disappears
    assert not maintenance.verify(store).ok
    assert maintenance.reset_head(store).ok
    # The purged trace is back, as the ledger now says.
    assert any("temporary note" in s.trace.content for s in all_traces(store))


def test_an_agent_fulfilling_is_attributed(store: Store) -> None:
    todo = remember(store, "ship it", kind="commitment")
    agent = AgentSession(host="cursor", session_id="c9", variables=("CURSOR_TRACE_ID",))
    write(store, Fulfill(id=todo.id, session=agent))
    line = ledger_rows(store)[-1][1]
    assert b'"by":"agent-session:cursor:c9"' in line


def test_an_agent_purging_an_unknown_id_is_restricted_first(store: Store) -> None:
    agent = AgentSession(host="codex", session_id="1", variables=("CODEX_SESSION_ID",))
    (outcome,) = store.apply(
        [Purge(id="tr_nope", reason="x", session=agent)], now_ms=NOW, policy=KernelPolicy()
    )
    assert isinstance(outcome, AgentRestricted)


def test_standing_rules_hold_in_their_scope_verified_first(store: Store) -> None:
    project = "project:/home/ana/app"
    unverified = remember(store, "prefer uv", kind="preference", scope=project, now=NOW + 2)
    verified = remember(store, "never force-push main", kind="constraint", verified=True, now=NOW)
    elsewhere = remember(store, "tabs", kind="preference", scope="project:/other")
    remember(store, "a passing note", kind="observation")
    old = remember(store, "use pip", kind="procedure", scope=project)
    remember(store, "use uv sync", kind="procedure", scope=project, supersedes=old.id)
    kinds = ("constraint", "preference", "procedure")

    found = [e.trace for e in store.read(queries.standing, kinds=kinds, scope=project, limit=10)]
    assert found[0] == verified  # verified first, then newest
    assert unverified in found and elsewhere not in found and old not in found
    assert {t.kind for t in found} <= set(kinds)
    assert [e.trace for e in store.read(queries.standing, kinds=kinds, scope=None, limit=10)] == [
        verified
    ]
    only = store.read(queries.standing, kinds=kinds, scope=project, verified_only=True, limit=10)
    assert [e.trace for e in only] == [verified]
    assert len(store.read(queries.standing, kinds=kinds, scope=project, limit=1)) == 1


def test_indexes_of_an_older_layout_are_rebuilt_on_open(tmp_path: Path) -> None:
    with Store(tmp_path / "data", map_size=1 << 24) as store:
        populate(store)
        before = index_snapshot(store)
        with store.env.begin(write=True) as txn:
            txn.put(b"layout", struct.pack(">Q", 1), db=store.dbs.meta)
            txn.drop(store.dbs.features, delete=False)  # as if rows had another shape
    with Store(tmp_path / "data", map_size=1 << 24) as reopened:
        assert index_snapshot(reopened) == before
        assert maintenance.verify(reopened).ok


def test_feedback_and_pins_need_a_visible_trace(store: Store) -> None:
    gone = remember(store, "short lived")
    write(store, Purge(id=gone.id, reason="test"))
    for operation in (Feedback(id=gone.id, outcome="good"), Pin(id="tr_nope", pinned=True)):
        (outcome,) = store.apply([operation], now_ms=NOW, policy=KernelPolicy())
        assert isinstance(outcome, NotFound)


def every_byte(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def test_compaction_removes_purged_text_from_every_file_and_rechains(tmp_path: Path) -> None:
    secret_text = b"the cellar door code is purple elephant"
    with Store(tmp_path / "data", map_size=1 << 24) as store:
        populate(store)
        gone = remember(store, secret_text.decode(), tags=("home",))
        kept = remember(store, "the cellar stays locked at night")
        write(store, Purge(id=gone.id, reason="asked to forget it"))
        old_head = store.head
        assert old_head is not None and secret_text in every_byte(tmp_path / "data")

        done = maintenance.compact(store, NOW)
        assert done.old_head == old_head and gone.id in done.redacted
        assert done.head == store.head and maintenance.verify(store).ok
        assert secret_text not in every_byte(tmp_path / "data")
        last = ledger_rows(store)[-1][1]
        assert b'"type":"compacted"' in last and old_head.hash.encode() in last
        assert [
            r.trace.id
            for r in store.read(
                recall, RecallQuery(query="cellar"), now_ms=NOW, policy=KernelPolicy()
            )
        ] == [kept.id]
        before = index_snapshot(store)
        rebuild_index(store)
        assert index_snapshot(store) == before
        assert maintenance.compact(store, NOW).redacted == []  # nothing left to redact
    with Store(tmp_path / "data", map_size=1 << 24) as reopened:
        assert maintenance.verify(reopened).ok and reopened.head == done.head
        with pytest.raises(NotFound):
            reopened.read(queries.get, gone.id)
        write(reopened, Remember(draft=Draft(content="writes go on after compaction")))


def test_compaction_refuses_an_unacknowledged_tail(store: Store) -> None:
    victim = remember(store, "to be purged")
    write(store, Purge(id=victim.id, reason="test"))
    head = store.head
    assert head is not None
    forged = encode_record(head.seq + 1, head.hash, b'{"type":"purge","id":"x","reason":"y"}')
    put_raw(store, forged.seq, forged.line)
    with pytest.raises(ConflictError, match="acknowledged"):
        maintenance.compact(store, NOW)
    assert store.head == head and ledger_rows(store)[-1][1] == forged.line


def test_a_batch_makes_the_previous_one_durable_before_the_head_file_acknowledges_it(
    tmp_path: Path,
) -> None:
    """The writer syncs batch N while it applies N+1; N+1's head-file write calls N
    acknowledged, so N's commit must be on disk by then (a power cut in between
    would otherwise leave a head naming records the store lost)."""
    with Store(tmp_path / "d", map_size=1 << 24) as store:
        durable_at_head_write: list[int] = []
        write_head = store.head_file.write

        def spy(acknowledged: Head | None, pending: Head | None) -> None:
            durable_at_head_write.append(store._synced_commits)
            write_head(acknowledged, pending)

        store.head_file.write = spy  # type: ignore[method-assign]
        for content in ("first batch", "second batch", "third batch"):
            store.apply(
                [Remember(draft=Draft(content=content))],
                now_ms=NOW,
                policy=KernelPolicy(),
                sync=False,
            )
    assert durable_at_head_write[:3] == [0, 1, 2]


SMALL_MAP = 1 << 20  # 1 MiB: 3,000 traces fill it, and a second copy of them needs it grown


def _kettles(store: Store, policy: KernelPolicy) -> list[str]:
    """3,000 traces "kettle note N, tea 7N" written to ``store``; their ids."""
    ids = []
    for start in range(0, 3000, 500):
        batch = [
            Remember(draft=Draft(content=f"kettle note {i}, tea {i * 7}", kind="observation"))
            for i in range(start, start + 500)
        ]
        ids += [outcome.id for outcome in store.apply(batch, now_ms=NOW + start, policy=policy)]
    return ids


def _first(store: Store, query: str, policy: KernelPolicy) -> list[str]:
    with store.snapshot() as snapshot:
        found = recall(snapshot, RecallQuery(query=query), now_ms=NOW + 9000, policy=policy)
    return [result.trace.content for result in found]


def test_a_rebuild_grows_the_map_as_writes_do(tmp_path: Path) -> None:
    # A rebuild (a layout upgrade at start, hikmahd --rebuild-index) writes every index
    # again in one transaction: a store as large as its map needs it grown, as a
    # write does, or an upgrade of a big store cannot start.
    policy = KernelPolicy()
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        _kettles(store, policy)
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        assert rebuild_index(store) == 3000
        assert _first(store, "kettle note 2999", policy)[0] == "kettle note 2999, tea 20993"


def test_accepting_a_cut_ledger_grows_the_map_as_writes_do(tmp_path: Path) -> None:
    # Records cut from the ledger's end, which the indexes reflect, leave only a rebuild
    # right when a person accepts what is left (verify-ledger --reset-head): the same one
    # transaction writing every index again as --rebuild-index, the same need to grow.
    policy = KernelPolicy()
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        _kettles(store, policy)
        with store.env.begin(write=True) as txn:
            cursor = txn.cursor(db=store.dbs.ledger)
            assert cursor.last()
            cursor.delete()  # the last record (kettle note 2999) is gone
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        store.acknowledge_ledger()
        assert maintenance.verify(store).ok
        assert _first(store, "kettle note 2998", policy)[0] == "kettle note 2998, tea 20986"
        assert "kettle note 2999, tea 20993" not in _first(store, "kettle note 2999", policy)


def test_compaction_grows_the_map_as_writes_do(tmp_path: Path) -> None:
    # Compaction writes the ledger and every index again in one transaction.
    policy = KernelPolicy()
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        ids = _kettles(store, policy)
        store.apply([Purge(id=ids[7], reason="test")], now_ms=NOW + 5000, policy=policy)
    with Store(tmp_path, durable=False, map_size=SMALL_MAP) as store:
        done = maintenance.compact(store, NOW + 6000)
        assert done.redacted == [ids[7]]
        assert done.records == 3002  # the remembers, the purge, the compacted record
        assert maintenance.verify(store).ok
