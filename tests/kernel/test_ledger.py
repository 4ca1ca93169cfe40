"""Tests of the ledger codec, hashes, head file and verifier."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.ledger.chain import (
    DOMAIN_V2,
    GENESIS,
    Record,
    chain_tail,
    compute_hash,
    decode_record,
    encode_record,
    summarise,
    verify,
)
from hikmah.model.errors import LedgerError
from hikmah.model.head import Head

# The reference implementation's own ledgers, copied from shared/fixtures.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

Rows = list[tuple[int, bytes]]

# A hand-written v2 ledger: pins the exact line format and hash independently of
# encode_record. The first payload holds raw UTF-8 ("Café").
V2_FIXTURE: Rows = [
    (
        1,
        b'{"seq":1,"prev_hash":"GENESIS","v":2,"payload":{"type":"remember","trace":'
        b'{"id":"t1","kind":"belief","content":"Caf\xc3\xa9 opens at 8","created_at":1,'
        b'"provenance":{"source":"human:amina","verified":true},"claim_key":"cafe.opens",'
        b'"claim_value":"8"}},'
        b'"hash":"1cf4c1c46db862126abdc082736aa9c0f7bed1c55e516e2f2e8b64fe0cde27e8"}',
    ),
    (
        2,
        b'{"seq":2,"prev_hash":"1cf4c1c46db862126abdc082736aa9c0f7bed1c55e516e2f2e8b64fe0cde27e8",'
        b'"v":2,"payload":{"type":"fulfill","id":"t1"},'
        b'"hash":"7ebe12c99cdd576679a52a85a1107eb6d724058cd7202c30b7610b928de4d476"}',
    ),
]

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"


def load_fixture(name: str) -> Rows:
    lines = (FIXTURES / name).read_bytes().splitlines()
    return [(i, line) for i, line in enumerate(lines, start=1)]


def remember(n: int, content: str | None = None, **trace: object) -> bytes:
    body = {
        "id": f"tr_{n}",
        "kind": "observation",
        "content": content if content is not None else f"observation number {n}",
        "created_at": 1_790_000_000_000 + n,
        "provenance": {"source": "human:amina", "verified": False},
        **trace,
    }
    return msgspec.json.encode({"type": "remember", "trace": body})


def build_chain(payloads: list[bytes]) -> Rows:
    rows: Rows = []
    prev = GENESIS
    for seq, payload in enumerate(payloads, start=1):
        record = encode_record(seq, prev, payload)
        rows.append((seq, record.line))
        prev = record.hash
    return rows


def head_of(rows: Rows) -> Head:
    last = decode_record(rows[-1][1])
    return Head(seq=last.seq, hash=last.hash)


CHAIN5 = build_chain([remember(n) for n in range(1, 5)] + [b'{"type":"fulfill","id":"tr_1"}'])
HEAD5 = head_of(CHAIN5)


# --- reference (v1) fixtures ---------------------------------------------------------


def test_v1_fixture_hashes_recompute() -> None:
    rows = load_fixture("reference-ledger-v1.jsonl")
    assert len(rows) == 4
    for _, line in rows:
        record = decode_record(line)
        assert record.version == 1
        assert compute_hash(record) == record.hash


def test_v1_fixture_verifies_with_its_head() -> None:
    rows = load_fixture("reference-ledger-v1.jsonl")
    report = verify(rows, head_of(rows))
    assert report.ok, report.errors
    assert report.records == 4
    assert report.head == head_of(rows)
    assert report.unacknowledged == []
    assert any("version-1" in w for w in report.warnings)


def test_bricked_fixture_chain_verifies() -> None:
    # Its supersede of a missing trace is the store's concern, not the chain's.
    rows = load_fixture("reference-ledger-v1-bricked.jsonl")
    report = verify(rows, head_of(rows))
    assert report.ok, report.errors
    assert report.records == 3


def v1_line(seq: int, prev_hash: str, payload_text: str, digest: str) -> bytes:
    return (
        f'{{"seq":{seq},"prev_hash":"{prev_hash}","payload":{payload_text},"hash":"{digest}"}}'
    ).encode()


def test_v1_byte_form_is_serde_json_compact() -> None:
    # No spaces, keys in file order, non-ASCII as raw UTF-8, control characters escaped.
    payload = {"type": "purge", "reason": 'Café \u2603 \x01 tab\t "q" / back\\', "id": "tr_x"}
    material = json.dumps(
        {"seq": 7, "prev_hash": "a" * 64, "payload": payload},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
    assert b"Caf\xc3\xa9" in material and b"\\u0001" in material and b"\\t" in material
    digest = blake3.blake3(material).hexdigest()
    compact = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    spaced = json.dumps(payload, ensure_ascii=True, indent=2)  # escapes \u00e9 too
    for text in (compact, spaced):
        record = decode_record(v1_line(7, "a" * 64, text, digest))
        assert compute_hash(record) == digest


def test_v1_spaced_payload_of_fixture_record_verifies() -> None:
    rows = load_fixture("reference-ledger-v1.jsonl")
    record = decode_record(rows[1][1])
    spaced = json.dumps(json.loads(record.payload), indent=4)
    respaced = decode_record(v1_line(record.seq, record.prev_hash, spaced, record.hash))
    assert respaced.payload != record.payload
    assert compute_hash(respaced) == record.hash


def test_v1_numbers_hash_as_written() -> None:
    # The reference writes numbers in one canonical form; any other form is an edit.
    rows = load_fixture("reference-ledger-v1.jsonl")
    record = decode_record(rows[0][1])
    altered = record.line.replace(b'"authority":0.5', b'"authority":0.50')
    assert altered != record.line
    assert compute_hash(decode_record(altered)) != record.hash


# --- version 2 -----------------------------------------------------------------------


def test_v2_fixture_verifies() -> None:
    report = verify(V2_FIXTURE, head_of(V2_FIXTURE))
    assert report.ok, report.errors
    assert report.warnings == []
    for _, line in V2_FIXTURE:
        record = decode_record(line)
        assert record.version == 2
        assert compute_hash(record) == record.hash
        assert encode_record(record.seq, record.prev_hash, record.payload) == record


def test_v2_round_trip_and_exact_line() -> None:
    payload = b'{"type":"supersede","old_id":"tr_1","new_id":"tr_2"}'
    prev = "b" * 64
    record = encode_record(3, prev, payload)
    expected_hash = blake3.blake3(DOMAIN_V2 + b"3\n" + prev.encode() + b"\n" + payload).hexdigest()
    assert record.hash == expected_hash
    assert record.line == (
        b'{"seq":3,"prev_hash":"'
        + prev.encode()
        + b'","v":2,"payload":'
        + payload
        + b',"hash":"'
        + expected_hash.encode()
        + b'"}'
    )
    assert decode_record(record.line) == record
    assert decode_record(record.line + b"\n").payload == payload


@pytest.mark.parametrize(
    ("seq", "prev", "payload"),
    [
        (0, GENESIS, b"{}"),
        (1, "not-a-hash", b"{}"),
        (1, GENESIS, b" {}"),
        (1, GENESIS, b"[1]"),
        (1, GENESIS, b'{"a":}'),
    ],
)
def test_encode_record_refuses_bad_input(seq: int, prev: str, payload: bytes) -> None:
    with pytest.raises(LedgerError):
        encode_record(seq, prev, payload)


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"not json",
        b'{"seq":1,"prev_hash":"GENESIS","payload":{}}',
        b'{"seq":1,"prev_hash":"GENESIS","v":3,"payload":{},"hash":"x"}',
        b'{"seq":0,"prev_hash":"GENESIS","v":2,"payload":{},"hash":"x"}',
        b'{"seq":1,"prev_hash":"GENESIS","v":2,"payload":[],"hash":"x"}',
        b'{"seq":1,"prev_hash":"GENESIS","v":2,"payload":{},"hash":"x","extra":1}',
        b'{"seq":"1","prev_hash":"GENESIS","v":2,"payload":{},"hash":"x"}',
        b'{"seq":1,"prev_hash":"GENESIS","v":2,"payload":{"a":"\xff"},"hash":"x"}',
    ],
)
def test_decode_record_refuses_malformed_lines(line: bytes) -> None:
    with pytest.raises(LedgerError):
        decode_record(line)


# --- tampering (property tests) ------------------------------------------------------

CHAINS = {"v2": CHAIN5, "v1": load_fixture("reference-ledger-v1.jsonl")}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_untouched_chains_verify(name: str) -> None:
    rows = CHAINS[name]
    assert verify(rows, head_of(rows)).ok
    assert chain_tail(rows) == head_of(rows)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(CHAINS)))
def test_every_single_byte_change_is_caught(data: st.DataObject, name: str) -> None:
    rows = CHAINS[name]
    index = data.draw(st.integers(0, len(rows) - 1), label="record")
    key, line = rows[index]
    position = data.draw(st.integers(0, len(line) - 1), label="position")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != line[position]), label="byte")
    changed = line[:position] + bytes([byte]) + line[position + 1 :]
    tampered = [*rows[:index], (key, changed), *rows[index + 1 :]]
    report = verify(tampered, head_of(rows))
    assert not report.ok
    assert report.records == len(rows)


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("flip", [0x01, 0x20, 0x80])
def test_every_position_flipped_is_caught(name: str, flip: int) -> None:
    # Exhaustive over positions, complementing the random bytes above.
    rows = CHAINS[name]
    head = head_of(rows)
    for index, (key, line) in enumerate(rows):
        for position in range(len(line)):
            changed = bytearray(line)
            changed[position] ^= flip
            tampered = [*rows[:index], (key, bytes(changed)), *rows[index + 1 :]]
            assert not verify(tampered, head).ok, (index, position)


@given(index=st.integers(0, len(CHAIN5) - 1))
def test_every_deleted_record_is_caught(index: int) -> None:
    tampered = CHAIN5[:index] + CHAIN5[index + 1 :]
    report = verify(tampered, HEAD5)
    assert not report.ok
    assert any("removed" in e for e in report.errors)


@given(pair=st.lists(st.integers(0, len(CHAIN5) - 1), min_size=2, max_size=2, unique=True))
def test_every_swap_is_caught(pair: list[int]) -> None:
    i, j = pair
    # Lines swapped under their keys (a rewrite of the values) ...
    lines = [line for _, line in CHAIN5]
    lines[i], lines[j] = lines[j], lines[i]
    assert not verify(list(enumerate(lines, start=1)), HEAD5).ok
    # ... and whole rows swapped (records handed over out of key order).
    rows = list(CHAIN5)
    rows[i], rows[j] = rows[j], rows[i]
    assert not verify(rows, HEAD5).ok


def test_first_break_is_reported_once() -> None:
    rows = list(CHAIN5)
    rows[1] = (2, rows[1][1].replace(b"number 2", b"number X"))
    report = verify(rows, HEAD5)
    assert report.errors == ["seq 2 was altered: its stored hash does not match its contents"]
    assert report.records == 5
    assert report.head == head_of(CHAIN5[:1])
    assert "3 records after the break were not checked" in report.warnings


# --- head ----------------------------------------------------------------------------


def test_truncation_with_head_pinned() -> None:
    report = verify(CHAIN5[:3], HEAD5)
    assert not report.ok
    assert report.records == 3
    assert any("records removed after the acknowledged head" in e for e in report.errors)
    assert not verify([], HEAD5).ok


def test_rewritten_record_at_head() -> None:
    report = verify(CHAIN5, Head(seq=5, hash="c" * 64))
    assert not report.ok
    assert any(e.startswith("ledger rewritten: record 5") for e in report.errors)


def test_unacknowledged_tail_is_listed_with_credentials_withheld() -> None:
    rows = CHAIN5[:3]
    prev = head_of(rows).hash
    forged = encode_record(
        4,
        prev,
        remember(
            4,
            content=f"token {TOKEN}",
            provenance={"source": "human:mallory", "verified": True},
            claim_key="deploy.allowed",
            claim_value="fridays",
        ),
    )
    purge = encode_record(5, forged.hash, b'{"type":"purge","id":"tr_1","reason":"cleanup"}')
    rows = [*rows, (4, forged.line), (5, purge.line)]
    report = verify(rows, head_of(CHAIN5[:3]))
    assert not report.ok
    assert any(e.startswith("2 unacknowledged records past the head") for e in report.errors)
    assert [s.seq for s in report.unacknowledged] == [4, 5]
    first, second = report.unacknowledged
    assert first.event == "remember"
    assert first.trace_id == "tr_4"
    assert first.source == "human:mallory"
    assert first.verified is True
    assert first.claim == "deploy.allowed = fridays"
    assert first.preview is not None
    assert "[withheld]" in first.preview and TOKEN not in first.preview
    assert second.event == "purge" and second.trace_id == "tr_1" and second.preview == "cleanup"
    # The chain itself is intact: a person may accept the tail.
    assert report.head == Head(seq=5, hash=purge.hash)


def test_one_unacknowledged_record() -> None:
    report = verify(CHAIN5, head_of(CHAIN5[:4]))
    assert report.errors[0].startswith("1 unacknowledged record past the head (seq 4)")


def test_head_at_seq_zero_acknowledges_nothing() -> None:
    report = verify(CHAIN5[:2], Head(seq=0, hash=GENESIS))
    assert [s.seq for s in report.unacknowledged] == [1, 2]


def test_expect_head() -> None:
    pinned = head_of(CHAIN5[:2])
    assert verify(CHAIN5, HEAD5, expect_head=pinned).ok
    report = verify(CHAIN5, HEAD5, expect_head=Head(seq=2, hash="d" * 64))
    assert not report.ok
    assert any("the pinned head" in e for e in report.errors)
    report = verify(CHAIN5[:1], head_of(CHAIN5[:1]), expect_head=pinned)
    assert any("records removed after the pinned head" in e for e in report.errors)


def test_missing_or_unreadable_head() -> None:
    report = verify(CHAIN5, None)
    assert not report.ok
    assert any("head is missing" in e for e in report.errors)
    assert verify([], None).ok
    report = verify(CHAIN5, HEAD5, head_error="bad bytes")
    assert not report.ok
    assert any("head is unreadable (bad bytes)" in e for e in report.errors)


# --- summaries -----------------------------------------------------------------------


def test_summaries_of_reference_records() -> None:
    rows = load_fixture("reference-ledger-v1.jsonl")
    belief = summarise(decode_record(rows[1][1]))
    assert belief.event == "remember"
    assert belief.kind == "belief"
    assert belief.source == "config-a"
    assert belief.verified is False
    assert belief.claim == "service.region = us-east-1"
    assert belief.preview == "Service region is us-east-1"
    supersede = summarise(decode_record(rows[3][1]))
    assert supersede.event == "supersede"
    assert supersede.trace_id == "tr_0e21be5e8ff62671"
    assert supersede.preview == "superseded by tr_8964e9fa774af32f"


def record_with(payload: bytes) -> Record:
    return encode_record(1, GENESIS, payload)


def test_summaries_of_other_events() -> None:
    fulfill = summarise(record_with(b'{"type":"fulfill","id":"tr_9"}'))
    assert (fulfill.event, fulfill.trace_id) == ("fulfill", "tr_9")
    unknown = summarise(record_with(b'{"type":"promote","id":"p_1"}'))
    assert (unknown.event, unknown.trace_id) == ("promote", "p_1")
    assert summarise(record_with(b'{"no":"type"}')).event == "unreadable"
    odd = summarise(record_with(b'{"type":"remember","trace":{"content":7,"provenance":1}}'))
    assert odd.event == "remember" and odd.preview is None and odd.source is None


def test_preview_is_one_short_line() -> None:
    summary = summarise(record_with(remember(1, content="line one\nline two " + "x" * 200)))
    assert summary.preview is not None
    assert len(summary.preview) == 80
    assert "\n" not in summary.preview
    assert summary.preview.startswith("line one line two")
    bidi = summarise(record_with(remember(1, content="abc\u202edef")))
    assert bidi.preview == "abc def"
