"""Tests of import and export mapping: JSON Lines of traces and reference ledgers, over a
real store."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import msgspec
import pytest

from hikmah.index import queries
from hikmah.ledger.chain import GENESIS, decode_record, encode_record
from hikmah.migration.transfer import (
    SupersedeCheck,
    already_done,
    check_chain,
    export_line,
    exported,
    reference_operation,
    settle,
    supersede_problem,
    trace_operation,
)
from hikmah.model.errors import HikmahError, InvalidInput, NotFound, SecretDetected
from hikmah.model.head import Head
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Fulfill, Operation, Purge, Remember, Written
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, remember, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V2 = "reference-ledger-v2.jsonl"
KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id
ID = "tr_5a0c0f3e9d2b7a0"  # the v2 fixture's ids: ID + 1..7


def rows(name: str) -> list[tuple[int, bytes]]:
    lines = (FIXTURES / name).read_bytes().splitlines()
    return list(enumerate(lines, start=1))


def apply(store: Store, operations: list[Operation]) -> list[Written | HikmahError]:
    """Apply operations one by one, as the daemon's writer may batch them."""
    outcomes: list[Written | HikmahError] = []
    for operation in operations:
        outcomes += store.apply([operation], now_ms=NOW, policy=KernelPolicy())
    return outcomes


# --- the v2 fixtures ---------------------------------------------------------------------


def test_v2_fixture_hashes_match_an_independent_computation() -> None:
    # From REFERENCE.md alone: BLAKE3 of the domain, the decimal seq, the previous hash and
    # the payload's exact bytes as they stand in the line, sliced out by hand here.
    prev = "GENESIS"
    for number, line in rows(V2):
        fields = json.loads(line)
        start = line.index(b'"payload":') + len(b'"payload":')
        end = line.rindex(b',"hash":"')
        material = b"hikmah-ledger-v2\n%d\n%s\n" % (number, prev.encode()) + line[start:end]
        assert fields["v"] == 2 and fields["seq"] == number and fields["prev_hash"] == prev
        assert blake3.blake3(material).hexdigest() == fields["hash"]
        prev = fields["hash"]
    assert number == 9


def test_v2_fixture_lines_are_the_form_the_kernel_writes() -> None:
    for _, line in rows(V2):
        record = decode_record(line)
        assert encode_record(record.seq, record.prev_hash, record.payload).line == line
    assert "Zürich".encode() in rows(V2)[1][1]  # raw UTF-8, hashed as written


# --- the chain ---------------------------------------------------------------------------


def test_reference_ledgers_verify_v1_and_v2() -> None:
    for name, count in (("reference-ledger-v1.jsonl", 4), (V2, 9)):
        check = check_chain(rows(name))
        last = decode_record(rows(name)[-1][1])
        assert check.broken is None
        assert (check.checked, check.tail) == (count, Head(seq=count, hash=last.hash))


def test_a_chain_is_checked_across_calls() -> None:
    records = rows(V2)
    first = check_chain(records[:4])
    second = check_chain(records[4:], after=first.tail)
    assert (first.checked, second.checked) == (4, 5)
    assert second.tail == check_chain(records).tail
    assert check_chain(records[4:]).broken is not None  # without its start it does not chain


def test_an_edited_record_breaks_the_chain_where_it_is() -> None:
    check = check_chain(rows("reference-ledger-v2-broken.jsonl"))
    assert check.checked == 2 and check.tail is not None and check.tail.seq == 2
    assert check.broken is not None
    assert (check.broken.line, check.broken.seq) == (3, 3)
    assert "seq 3 was altered" in check.broken.reason


def test_a_forged_tail_is_where_the_chain_stops() -> None:
    check = check_chain(rows("reference-ledger-v2-forged-tail.jsonl"))
    assert check.checked == 9
    assert check.broken is not None and (check.broken.line, check.broken.seq) == (10, 10)


def test_removed_relinked_and_unreadable_records_are_named() -> None:
    records = rows(V2)
    removed = check_chain(records[:3] + records[4:]).broken
    assert removed is not None and "seq 4 is missing" in removed.reason
    relinked = encode_record(5, "0" * 64, decode_record(records[4][1]).payload).line
    broken = check_chain([*records[:4], (5, relinked)]).broken
    assert broken is not None and "broken link at seq 5" in broken.reason
    garbage = check_chain([records[0], (2, b"not a record")]).broken
    assert garbage is not None and (garbage.line, garbage.seq) == (2, None)
    assert "malformed" in garbage.reason


def test_a_rechained_tail_is_caught_only_by_a_pinned_head() -> None:
    records = rows(V2)
    last = decode_record(records[-1][1])
    forged = encode_record(10, last.hash, b'{"type":"purge","id":"tr_5a0c0f3e9d2b7a06"}')
    tampered = [*records, (10, forged.line)]
    assert check_chain(tampered).broken is None  # the chain is unkeyed
    pinned = Head(seq=9, hash=last.hash)
    broken = check_chain(tampered, pinned=pinned).broken
    assert broken is not None and broken.seq == 10 and "past the pinned head" in broken.reason
    rewritten = check_chain(records, pinned=Head(seq=9, hash="f" * 64)).broken
    assert rewritten is not None and "ledger rewritten" in rewritten.reason


# --- mapping reference records ----------------------------------------------------------


def mapped(name: str) -> list[tuple[int, object]]:
    return [
        (decode_record(line).seq, reference_operation(decode_record(line))[0])
        for _, line in rows(name)
    ]


def test_reference_records_map_to_write_operations() -> None:
    ops = dict(mapped(V2))
    first = ops[1]
    assert isinstance(first, Remember)
    assert (first.trace_id, first.created_at) == (f"{ID}1", 1_790_100_000_000)
    assert first.draft.verified and first.draft.source == "runbook"
    assert first.draft.tags == ("database",) and first.draft.salience == 0.9
    correction = ops[3]
    assert isinstance(correction, Remember) and correction.draft.supersedes == f"{ID}1"
    assert ops[4] == SupersedeCheck(f"{ID}1", f"{ID}3")
    commitment = ops[5]
    assert isinstance(commitment, Remember)
    assert commitment.draft.deadline == 1_790_100_000_000 + 7 * DAY
    assert ops[6] == Fulfill(id=f"{ID}4")
    assert ops[8] == Purge(id=f"{ID}5", reason="recorded by mistake")


def test_a_reference_ledger_lands_with_its_statuses(store: Store) -> None:
    ops = mapped(V2)
    outcomes = apply(store, [op for _, op in ops if not isinstance(op, SupersedeCheck)])
    assert all(isinstance(o, Written) for o in outcomes), outcomes
    statuses = {n: store.read(queries.lookup, f"{ID}{n}") for n in range(1, 7)}
    assert {n: s.status for n, s in statuses.items() if s} == {
        1: "superseded",
        2: "active",
        3: "active",
        4: "fulfilled",
        5: "purged",
        6: "active",
    }
    link = next(op for _, op in ops if isinstance(op, SupersedeCheck))
    assert (
        supersede_problem(
            link, store.read(queries.lookup, link.old_id), store.read(queries.lookup, link.new_id)
        )
        is None
    )
    trace = store.read(queries.get, f"{ID}2").trace
    assert trace.content.endswith("Zürich is the fallback")
    assert (trace.claim_key, trace.created_at) == ("cache.region", 1_790_100_000_000 + 60_000)
    assert trace.provenance.observed_at == trace.created_at


def test_the_bricked_ledger_is_reported_and_nothing_is_invented(store: Store) -> None:
    ops = mapped("reference-ledger-v1-bricked.jsonl")
    remembers = [op for _, op in ops if isinstance(op, Remember)]
    first, correction = apply(store, remembers)  # type: ignore[misc]
    assert isinstance(first, Written)
    assert isinstance(correction, NotFound) and "tr_doesnotexist" in str(correction)
    (link,) = [op for _, op in ops if isinstance(op, SupersedeCheck)]
    problem = supersede_problem(
        link, store.read(queries.lookup, link.old_id), store.read(queries.lookup, link.new_id)
    )
    assert problem is not None and "never existed" in problem and "nothing was invented" in problem
    assert store.read(queries.lookup, "tr_doesnotexist") is None
    assert store.read(queries.lookup, "tr_6a69eb329cdb71b5") is None


def test_a_supersede_record_that_contradicts_the_trace_is_not_applied(store: Store) -> None:
    old = remember(store, "the build runs on Jenkins")
    other = remember(store, "the build runs on Buildkite", supersedes=old.id)
    third = remember(store, "the build runs on GitHub Actions")
    link = SupersedeCheck(old.id, third.id)
    problem = supersede_problem(
        link, store.read(queries.lookup, old.id), store.read(queries.lookup, third.id)
    )
    assert problem is not None and f"superseded by {other.id}" in problem


def test_unknown_and_malformed_payloads_are_refused_without_echo() -> None:
    pin = encode_record(1, GENESIS, b'{"type":"pin","id":"tr_1","pinned":true}')
    with pytest.raises(InvalidInput, match="not one Hikmah maps"):
        reference_operation(pin)
    leaky = encode_record(1, GENESIS, b'{"type":"fulfill","id":"%s"}' % KEY.encode())
    with pytest.raises(SecretDetected) as refused:
        reference_operation(leaky)
    assert KEY not in str(refused.value)
    broken = encode_record(1, GENESIS, b'{"type":"remember","trace":{"id":"tr_1"}}')
    with pytest.raises(InvalidInput, match="malformed remember payload"):
        reference_operation(broken)


def test_a_purge_without_a_reason_names_its_record() -> None:
    record = encode_record(4, "a" * 64, b'{"type":"purge","id":"tr_1"}')
    operation, _ = reference_operation(record)
    assert isinstance(operation, Purge) and "seq 4" in operation.reason


# --- JSON Lines of traces ----------------------------------------------------------------


def test_a_minimal_line_takes_the_write_defaults(store: Store) -> None:
    planned = trace_operation({"kind": "observation", "content": "the printer jams on A3"})
    assert isinstance(planned.operation, Remember) and planned.note is None
    (written,) = write(store, planned.operation)
    assert written.trace is not None
    assert (written.trace.salience, written.trace.privacy) == (0.5, "private")
    assert written.trace.provenance.source == "unknown"


def test_an_exported_trace_imports_as_the_same_trace(tmp_path: Path, store: Store) -> None:
    commitment = remember(
        store,
        "Send the report",
        kind="commitment",
        deadline=NOW + DAY,
        tags=("finance",),
        scope="project:/srv/books",
        source="human:ana",
        verified=True,
        claim_key="report.owner",
        claim_value="ana",
    )
    outcome = remember(store, "report sent", kind="outcome", fulfills=commitment.id)
    forecast = Remember(
        draft=Draft(
            kind="prediction",
            content="Will CI be green?",
            family="ci.green",
            prediction_type="noul",
            probability=0.8,
        ),
        allow_prediction=True,
    )
    (predicted,) = write(store, forecast)
    lines = [
        export_line(entry, keep_supersedes=True)
        for entry in store.read(queries.export_page, None, 10, include_superseded=True)[0]
    ]
    assert [line.status for line in lines] == ["fulfilled", "active", "active"]
    with Store(tmp_path / "other", map_size=1 << 24) as other:
        for line in lines:
            write(
                other,
                trace_operation(json.loads(msgspec.json.encode(line))).operation,
                now=NOW + DAY,
            )
        assert other.read(queries.get, commitment.id).trace == commitment
        assert other.read(queries.get, commitment.id).status == "fulfilled"  # by the outcome line
        assert other.read(queries.get, outcome.id).trace == outcome
        assert (
            predicted.trace is not None
            and other.read(queries.get, predicted.id).trace == predicted.trace
        )


def test_bad_lines_are_refused_naming_the_field_never_the_value() -> None:
    with pytest.raises(InvalidInput, match="unknown field `colour`"):
        trace_operation({"content": "x", "colour": "red"})
    with pytest.raises(InvalidInput) as bad_kind:
        trace_operation({"content": "x", "kind": KEY})
    assert "$.kind" in str(bad_kind.value) and KEY not in str(bad_kind.value)
    with pytest.raises(InvalidInput, match="not a trace id"):
        trace_operation({"content": "x", "supersedes": "two words"})
    with pytest.raises(InvalidInput, match="purged"):
        trace_operation({"content": "x", "status": "purged"})
    with pytest.raises(InvalidInput, match="content"):
        trace_operation({"kind": "observation"})


def test_a_secret_in_the_content_is_refused_by_the_write_rules(store: Store) -> None:
    planned = trace_operation({"content": f"deploy key {KEY}", "id": "tr_leak"})
    (outcome,) = store.apply([planned.operation], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(outcome, SecretDetected) and KEY not in str(outcome)
    assert store.read(queries.lookup, "tr_leak") is None


@pytest.mark.parametrize(
    ("field", "line"),
    [
        ("id", {"content": "x", "id": KEY}),
        ("supersedes", {"content": "x", "supersedes": KEY}),
        ("fulfills", {"kind": "outcome", "content": "x", "fulfills": KEY}),
        ("provenance.evidence[1]", {"content": "x", "provenance": {"evidence": ["tr_a", KEY]}}),
    ],
)
def test_a_secret_in_an_id_field_is_refused_by_the_write_rules_naming_the_field(
    store: Store, field: str, line: dict[str, object]
) -> None:
    """An id field is checked for its shape when the line is read and for credentials
    by the write rules, before anything (a missing target's error) could name it."""
    planned = trace_operation(line)
    (outcome,) = store.apply([planned.operation], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(outcome, SecretDetected) and KEY not in str(outcome)
    assert str(outcome).startswith(f"{field} looks like it holds a credential")
    assert sum(store.read(queries.counts).values()) == 0


def test_a_different_observation_time_is_noted() -> None:
    line = {"content": "x", "created_at": 5, "provenance": {"observed_at": 4}}
    assert trace_operation(line).note is not None
    assert trace_operation({**line, "provenance": {"observed_at": 5}}).note is None


def test_statuses_are_settled_after_the_whole_file(store: Store) -> None:
    done = remember(store, "call the bank", kind="commitment")
    assert settle(
        done.id, "fulfilled", store.read(queries.lookup, done.id), session=None
    ) == Fulfill(id=done.id)
    write(store, Fulfill(id=done.id))
    assert settle(done.id, "fulfilled", store.read(queries.lookup, done.id), session=None) is None
    lone = remember(store, "the office is on floor 3")
    note = settle(lone.id, "superseded", store.read(queries.lookup, lone.id), session=None)
    assert isinstance(note, str) and "active here" in note
    assert settle("tr_missing", "fulfilled", None, session=None) is None


def test_an_import_never_brings_back_what_was_purged(store: Store) -> None:
    gone = remember(store, "recorded by mistake")
    write(store, Purge(id=gone.id, reason="mistake"))
    again = trace_operation({"content": "recorded by mistake", "id": gone.id}).operation
    assert already_done(again, store.read(queries.lookup, gone.id))
    assert already_done(Purge(id=gone.id, reason="again"), store.read(queries.lookup, gone.id))
    assert not already_done(Fulfill(id=gone.id), store.read(queries.lookup, gone.id))


# --- export ------------------------------------------------------------------------------


def test_export_pages_in_write_order_without_purged_or_history(store: Store) -> None:
    first = remember(store, "the office is on floor 3")
    moved = remember(store, "the office is on floor 5", supersedes=first.id)
    ids = [remember(store, f"note {n}").id for n in range(5)]
    write(store, Purge(id=ids[2], reason="mistake"))
    page, after = store.read(queries.export_page, None, 3, include_superseded=False)
    assert [e.trace.id for e in page] == [moved.id, ids[0], ids[1]]
    rest, end = store.read(queries.export_page, after, 3, include_superseded=False)
    assert [e.trace.id for e in rest] == [ids[3], ids[4]] and end is None
    everything, _ = store.read(queries.export_page, None, 100, include_superseded=True)
    assert [e.trace.id for e in everything][:2] == [first.id, moved.id]
    assert everything[0].superseded_by == moved.id
    with pytest.raises(NotFound):
        store.read(queries.export_page, "tr_unknown", 3, include_superseded=False)


def test_a_link_to_a_trace_left_out_is_dropped_from_the_line(store: Store) -> None:
    first = remember(store, "the office is on floor 3")
    moved = remember(store, "the office is on floor 5", supersedes=first.id)
    entry = store.read(queries.get, moved.id)
    assert export_line(entry, keep_supersedes=True).supersedes == first.id
    assert export_line(entry, keep_supersedes=False).supersedes is None
    assert exported("superseded", include_superseded=True)
    assert not exported("superseded", include_superseded=False)
    assert not exported("purged", include_superseded=True)


def test_fields_a_newer_reference_adds_are_named_not_lost_quietly() -> None:
    payload = json.loads(decode_record(rows(V2)[0][1]).payload)
    payload["trace"]["scope"] = "project:/srv/app"
    payload["trace"]["provenance"]["signer"] = "ops"
    record = encode_record(1, GENESIS, json.dumps(payload, separators=(",", ":")).encode())
    operation, note = reference_operation(record)
    assert isinstance(operation, Remember)
    assert note is not None and "scope" in note and "provenance.signer" in note
