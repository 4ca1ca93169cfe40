"""Segment files: the records as the ledger holds them, and every altered byte caught."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.ledger.chain import GENESIS
from hikmah.model.head import Head
from hikmah.sync.chain import START, Advance, Refused, Waiting, follow
from hikmah.sync.device import DeviceKey, Untrusted
from hikmah.sync.manifest import Manifest
from hikmah.sync.segment import (
    cut,
    encode_segment,
    parse_segment_name,
    read_segment,
    segment_name,
)
from tests.harness.sync_chains import notes

DEVICE = DeviceKey.generate()


def test_a_segment_holds_the_ledger_lines_byte_for_byte() -> None:
    records = notes(3)
    data = encode_segment(DEVICE.device_id, 1, records)
    assert all(r.line + b"\n" in data for r in records)
    segment = read_segment(data, device=DEVICE.device_id, epoch=1, first=1)
    assert segment.records == tuple(records) and not segment.torn
    assert segment.header.prev == GENESIS


def test_names_sort_in_chain_order_and_parse_back() -> None:
    assert segment_name(2, 15) == "e2/000000000015.seg"
    assert parse_segment_name("e2/000000000015.seg") == (2, 15)
    assert sorted([segment_name(1, 100), segment_name(1, 9)]) == [
        segment_name(1, 9),
        segment_name(1, 100),
    ]
    for bad in (
        "e0/000000000001.seg",
        "e1/000000000000.seg",
        "e1/1.seg",
        "e1/000000000001.seg.tmp",
    ):
        assert parse_segment_name(bad) is None


def test_a_file_still_arriving_is_torn_not_refused() -> None:
    records = notes(3)
    data = encode_segment(DEVICE.device_id, 1, records)
    cut_at = data.rfind(b"\n", 0, len(data) - 1) + 10  # inside the last record
    segment = read_segment(data[:cut_at], device=DEVICE.device_id, epoch=1, first=1)
    assert segment.torn and segment.records == tuple(records[:2])


def test_a_header_that_does_not_match_its_place_is_refused() -> None:
    data = encode_segment(DEVICE.device_id, 1, notes(2))
    with pytest.raises(Untrusted, match="says it is"):
        read_segment(data, device=DEVICE.device_id, epoch=2, first=1)
    with pytest.raises(Untrusted, match="says it is"):
        read_segment(data, device=DeviceKey.generate().device_id, epoch=1, first=1)
    with pytest.raises(Untrusted, match="no complete header"):
        read_segment(b'{"hikmah_segment":1', device=DEVICE.device_id, epoch=1, first=1)


def test_records_out_of_order_inside_a_segment_are_refused() -> None:
    records = notes(3)
    swapped = [records[0], records[2], records[1]]
    data = encode_segment(DEVICE.device_id, 1, records).split(b"\n")
    body = b"\n".join([data[0], *(r.line for r in swapped)]) + b"\n"
    with pytest.raises(Untrusted, match="record 2"):
        read_segment(body, device=DEVICE.device_id, epoch=1, first=1)


def test_the_cut_depends_only_on_the_records() -> None:
    records = notes(40)
    groups = cut(records, limit=1000)
    assert [r for g in groups for r in g] == records
    assert all(sum(len(r.line) + 1 for r in g[:-1]) < 1000 for g in groups)
    # Re-cutting from any boundary gives the same segments after it.
    start = groups[1][0].seq
    assert cut(records[start - 1 :], limit=1000) == groups[1:]
    assert cut([], limit=1000) == []


def _manifest(records: list, segments: tuple[int, ...]) -> Manifest:  # type: ignore[type-arg]
    last = records[-1]
    return Manifest(
        device=DEVICE.device_id,
        key=DEVICE.public.raw,
        name="laptop",
        epoch=1,
        generation=1,
        head=Head(seq=last.seq, hash=last.hash),
        segments=segments,
    )


RECORDS = notes(4)
FILES = {
    1: encode_segment(DEVICE.device_id, 1, RECORDS[:2]),
    3: encode_segment(DEVICE.device_id, 1, RECORDS[2:]),
}
MANIFEST = _manifest(RECORDS, (1, 3))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 3]), st.data())
def test_tampering_with_any_byte_of_a_segment_is_never_applied(
    which: int, data: st.DataObject
) -> None:
    original = FILES[which]
    at = data.draw(st.integers(0, len(original) - 1), label="at")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != original[at]), label="byte")
    files = dict(FILES)
    files[which] = original[:at] + bytes([byte]) + original[at + 1 :]
    result = follow(MANIFEST, files.get, START, lambda _seq: None)
    assert isinstance(result, Refused | Waiting), result


def test_every_single_byte_flip_of_a_segment_is_caught() -> None:
    assert isinstance(follow(MANIFEST, FILES.get, START, lambda _seq: None), Advance)
    for which, original in FILES.items():
        for at in range(len(original)):
            files = dict(FILES)
            files[which] = original[:at] + bytes([original[at] ^ 0x01]) + original[at + 1 :]
            result = follow(MANIFEST, files.get, START, lambda _seq: None)
            assert isinstance(result, Refused | Waiting), (which, at)
