"""Signed manifests, rollbacks and forks, and following a chain from what was applied."""

from __future__ import annotations

import msgspec
import pytest

from hikmah.ledger.chain import GENESIS, Record, encode_record
from hikmah.model.head import Head
from hikmah.sync.chain import START, Advance, Current, Position, Refused, Waiting, follow
from hikmah.sync.device import DeviceKey, Untrusted
from hikmah.sync.manifest import (
    Manifest,
    Seen,
    Signed,
    accepted,
    decode_manifest,
    encode_manifest,
    judge,
)
from hikmah.sync.segment import cut, encode_segment
from tests.harness.sync_chains import chain, notes

KEY = DeviceKey.generate()
ME = KEY.device_id


def manifest_of(
    records: list[Record], segments: tuple[int, ...], *, generation: int = 1, epoch: int = 1
) -> Manifest:
    head = (
        Head(seq=records[-1].seq, hash=records[-1].hash) if records else Head(seq=0, hash=GENESIS)
    )
    return Manifest(
        device=ME,
        key=KEY.public.raw,
        name="laptop",
        epoch=epoch,
        generation=generation,
        head=head,
        segments=segments,
    )


def files_of(
    records: list[Record], limit: int = 600, epoch: int = 1
) -> tuple[dict[int, bytes], tuple[int, ...]]:
    groups = cut(records, limit)
    files = {g[0].seq: encode_segment(ME, epoch, g) for g in groups}
    return files, tuple(files)


def test_a_manifest_round_trips_and_names_its_body() -> None:
    records = notes(3)
    manifest = manifest_of(records, (1,))
    manifest = msgspec.structs.replace(
        manifest, seen={DeviceKey.generate().device_id: Seen(1, 2, 3)}
    )
    signed = decode_manifest(encode_manifest(KEY, manifest), ME)
    assert signed.manifest == manifest and len(signed.digest) == 64


def test_a_manifest_is_refused_for_another_directory_key_or_any_altered_byte() -> None:
    data = encode_manifest(KEY, manifest_of(notes(2), (1,)))
    with pytest.raises(Untrusted, match="another device"):
        decode_manifest(data, DeviceKey.generate().device_id)
    for at in range(len(data)):
        tampered = data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]
        with pytest.raises(Untrusted):
            decode_manifest(tampered, ME)
    with pytest.raises(ValueError, match="own manifest"):
        encode_manifest(DeviceKey.generate(), manifest_of(notes(1), (1,)))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"segments": (2,)}, "cover seq 1"),
        ({"segments": (1, 1)}, "ascending"),
        ({"generation": 0}, "start at 1"),
        ({"name": "a\nb"}, "printable"),
        ({"head": Head(seq=0, hash="ab" * 32)}, "position"),
    ],
)
def test_a_manifest_that_is_not_a_chain_position_is_refused(
    change: dict[str, object], match: str
) -> None:
    manifest = msgspec.structs.replace(manifest_of(notes(2), (1,)), **change)
    with pytest.raises(Untrusted, match=match):
        encode_manifest(KEY, manifest)


def test_generations_tell_newer_same_rolled_back_and_fork() -> None:
    records = notes(3)
    first = decode_manifest(encode_manifest(KEY, manifest_of(records[:2], (1,), generation=1)), ME)
    second = decode_manifest(encode_manifest(KEY, manifest_of(records, (1,), generation=2)), ME)
    twin = decode_manifest(encode_manifest(KEY, manifest_of(records[:1], (1,), generation=2)), ME)
    assert judge(None, first) == "newer"
    assert judge(accepted(first), second) == "newer"
    assert judge(accepted(second), second) == "same"
    assert judge(accepted(second), first) == "rolled_back"
    assert judge(accepted(second), twin) == "fork"
    backwards = decode_manifest(
        encode_manifest(KEY, manifest_of(records[:1], (1,), generation=3)), ME
    )
    assert judge(accepted(second), backwards) == "fork"


def test_following_from_the_start_then_incrementally() -> None:
    records = notes(12)
    files, segments = files_of(records[:7])
    result = follow(manifest_of(records[:7], segments), files.get, START, lambda _s: None)
    assert isinstance(result, Advance) and result.records == tuple(records[:7])
    at = result.position
    assert at == Position(1, 7, records[6].hash)
    assert isinstance(
        follow(manifest_of(records[:7], segments), files.get, at, lambda _s: None), Current
    )
    files, segments = files_of(records)
    loads: list[int] = []

    def load(first: int) -> bytes | None:
        loads.append(first)
        return files.get(first)

    result = follow(manifest_of(records, segments), load, at, lambda _s: None)
    assert isinstance(result, Advance) and result.records == tuple(records[7:])
    assert min(loads) > 1  # earlier segments are not read again


def test_a_missing_segment_or_a_short_tail_waits_and_applies_nothing() -> None:
    records = notes(10)
    files, segments = files_of(records)
    manifest = manifest_of(records, segments)
    partial = {k: v for k, v in files.items() if k != segments[1]}
    assert isinstance(follow(manifest, partial.get, START, lambda _s: None), Waiting)
    last = segments[-1]
    short = dict(files)
    short[last] = files[last][: files[last].rfind(b"\n", 0, len(files[last]) - 1) + 1]
    assert isinstance(follow(manifest, short.get, START, lambda _s: None), Waiting)


def test_records_past_the_signed_head_are_not_applied() -> None:
    records = notes(6)
    files, segments = files_of(records, limit=10_000)
    result = follow(manifest_of(records[:4], segments), files.get, START, lambda _s: None)
    assert isinstance(result, Advance) and result.records == tuple(records[:4])


def test_a_chain_that_does_not_reach_the_signed_head_is_refused() -> None:
    records = notes(4)
    other = notes(4, prefix="x")
    files, segments = files_of(records, limit=10_000)
    result = follow(manifest_of(other, segments), files.get, START, lambda _s: None)
    assert isinstance(result, Refused) and "signed head" in result.why


def test_a_replayed_segment_with_other_records_is_a_fork() -> None:
    records = notes(5)
    files, segments = files_of(records, limit=10_000)
    stored = {r.seq: r.line for r in records}
    at = Position(1, 3, records[2].hash)
    forked = notes(3, after=records[:2], prefix="fork")
    forked_files, _ = files_of(forked, limit=10_000)
    result = follow(manifest_of(forked, segments), forked_files.get, at, stored.get)
    assert isinstance(result, Refused) and "fork" in result.why
    # The honest chain continues from the same place.
    result = follow(manifest_of(records, segments), files.get, at, stored.get)
    assert isinstance(result, Advance) and [r.seq for r in result.records] == [4, 5]


def test_a_removed_device_is_applied_up_to_its_cutoff_only() -> None:
    records = notes(6)
    files, segments = files_of(records)
    result = follow(manifest_of(records, segments), files.get, START, lambda _s: None, upto=4)
    assert isinstance(result, Advance) and result.position.seq == 4
    at = result.position
    assert isinstance(
        follow(manifest_of(records, segments), files.get, at, lambda _s: None, upto=4), Current
    )


def _compacted(records: list[Record], purged: str) -> list[Record]:
    bodies = []
    for record in records:
        payload = msgspec.json.decode(record.payload)
        if payload.get("type") == "remember" and payload["trace"]["id"] == purged:
            stub = {"type": "redacted", "id": purged, "kind": "observation", "created_at": 1}
            bodies.append(msgspec.json.encode(stub))
        else:
            bodies.append(record.payload)
    last = records[-1]
    closing = {
        "type": "compacted",
        "old_seq": last.seq,
        "old_hash": last.hash,
        "redacted": 1,
        "at": 5,
    }
    return chain([*bodies, msgspec.json.encode(closing)])


def test_a_new_epoch_that_compacts_the_old_chain_is_accepted() -> None:
    purge = msgspec.json.encode({"type": "purge", "id": "t1", "reason": "r"})
    records = chain([purge], after=notes(4))
    stored = {r.seq: r.line for r in records}
    at = Position(1, records[-1].seq, records[-1].hash)
    new = _compacted(records, "t1")
    files, segments = files_of(new, epoch=2)
    result = follow(manifest_of(new, segments, epoch=2, generation=5), files.get, at, stored.get)
    assert isinstance(result, Advance), result
    assert result.position == Position(2, new[-1].seq, new[-1].hash)


def test_a_new_epoch_that_rewrites_other_text_is_refused() -> None:
    records = notes(4)
    stored = {r.seq: r.line for r in records}
    at = Position(1, 4, records[-1].hash)
    rewritten = chain(
        [records[0].payload, b'{"type":"remember","trace":{"id":"t1","content":"other"}}']
    )
    closing = {
        "type": "compacted",
        "old_seq": 4,
        "old_hash": records[-1].hash,
        "redacted": 0,
        "at": 1,
    }
    new = chain(
        [records[2].payload, records[3].payload, msgspec.json.encode(closing)], after=rewritten
    )
    files, segments = files_of(new, epoch=2)
    result = follow(manifest_of(new, segments, epoch=2, generation=2), files.get, at, stored.get)
    assert isinstance(result, Refused) and "rewrites seq 2" in result.why
    # No compacted record at all: a new epoch that does not close the old one.
    bare = notes(5)
    files, segments = files_of(bare, epoch=2)
    result = follow(manifest_of(bare, segments, epoch=2, generation=2), files.get, at, stored.get)
    assert isinstance(result, Refused) and "does not close" in result.why


def test_going_back_an_epoch_is_refused() -> None:
    records = notes(2)
    files, segments = files_of(records)
    result = follow(
        manifest_of(records, segments), files.get, Position(2, 1, "ab" * 32), lambda _s: None
    )
    assert isinstance(result, Refused)


def test_records_are_what_encode_record_made() -> None:
    record = encode_record(1, GENESIS, b'{"type":"remember","trace":{"id":"a"}}')
    files, segments = files_of([record])
    result = follow(manifest_of([record], segments), files.get, START, lambda _s: None)
    assert isinstance(result, Advance) and result.records[0].line == record.line


def test_a_manifest_that_only_acknowledges_is_not_acknowledged_back() -> None:
    # Two devices acknowledging each other's acknowledgements would publish for ever
    # (and an engine pulling a file that keeps changing keeps failing).
    records = notes(2)
    other = DeviceKey.generate().device_id

    def signed(generation: int, upto: int, seen: dict[str, Seen]) -> Signed:
        body = msgspec.structs.replace(
            manifest_of(records[:upto], (1,), generation=generation), seen=seen
        )
        return decode_manifest(encode_manifest(KEY, body), ME)

    first = accepted(signed(1, 1, {}))
    assert first.acknowledged == 1
    acknowledging = accepted(signed(2, 1, {other: Seen(1, 4, 7)}), first)
    assert acknowledging.generation == 2 and acknowledging.acknowledged == 1
    news = accepted(signed(3, 2, {other: Seen(1, 5, 8)}), acknowledging)
    assert news.acknowledged == 3
    assert accepted(signed(4, 2, {}), None).acknowledged == 4  # nothing kept before
