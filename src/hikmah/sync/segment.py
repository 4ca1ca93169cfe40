"""Segment files: a run of one device's ledger records, as that device's ledger holds them.

A segment is a header line and the records' own lines (:mod:`hikmah.ledger.chain`'s
codec, byte for byte), each ending in a newline::

    {"hikmah_segment":1,"device":"hd…","epoch":1,"first":1,"prev":"GENESIS"}
    {"seq":1,"prev_hash":"GENESIS","v":2,"payload":{…},"hash":"…"}

A segment carries no signature: the manifest signs the head, and the hash
chain authenticates every record behind it. Reading one tells a file still
arriving (its last line has no newline yet: ``torn``) from one that was
altered (:class:`~hikmah.sync.device.Untrusted`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from hikmah.ledger.chain import GENESIS, Record, decode_record, link_problem
from hikmah.model.errors import LedgerError
from hikmah.sync.device import Untrusted

FORMAT: Final = 1
SEGMENT_BYTES: Final = 1 << 20  # a tail takes records until it holds this many bytes
_NAME = re.compile(r"e([1-9][0-9]{0,8})/([0-9]{12})\.seg")


class SegmentHeader(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    hikmah_segment: int
    device: str
    epoch: int
    first: int
    prev: str


_HEADER = msgspec.json.Decoder(SegmentHeader)
_ENCODER = msgspec.json.Encoder()


class Segment(msgspec.Struct, frozen=True):
    """The complete records of a segment file, each linked to the one before.

    Attributes:
        header: what the first line says.
        records: every complete record, in order, from ``header.first``.
        torn: the file ends in a line without its newline (still arriving, or cut).
    """

    header: SegmentHeader
    records: tuple[Record, ...]
    torn: bool


def segment_name(epoch: int, first: int) -> str:
    """The file's path inside its device directory: names sort in chain order."""
    return f"e{epoch}/{first:012d}.seg"


def parse_segment_name(name: str) -> tuple[int, int] | None:
    """(epoch, first) of a segment's path inside its device directory, or None."""
    match = _NAME.fullmatch(name)
    if match is None or int(match[2]) < 1:
        return None
    return int(match[1]), int(match[2])


def encode_segment(device: str, epoch: int, records: Sequence[Record]) -> bytes:
    """The bytes of a segment holding ``records`` (consecutive, at least one)."""
    if not records:
        raise ValueError("a segment holds at least one record")
    header = SegmentHeader(
        hikmah_segment=FORMAT,
        device=device,
        epoch=epoch,
        first=records[0].seq,
        prev=records[0].prev_hash,
    )
    return b"".join([_ENCODER.encode(header), b"\n", *(r.line + b"\n" for r in records)])


def cut(records: Iterable[Record], limit: int = SEGMENT_BYTES) -> list[list[Record]]:
    """Records (starting where a segment starts) grouped into segments: a segment takes
    records while its record lines hold fewer than ``limit`` bytes.

    The cut depends only on the records, so a device rewriting its tail after a
    crash writes the same files it wrote before.
    """
    groups: list[list[Record]] = []
    size = limit
    for record in records:
        if size >= limit:
            groups.append([])
            size = 0
        groups[-1].append(record)
        size += len(record.line) + 1
    return groups


def read_segment(data: bytes, *, device: str, epoch: int, first: int) -> Segment:
    """Decode and check a segment read from ``devices/<device>/<segment_name(epoch, first)>``.

    Every complete record must decode and continue the chain from the
    header's ``prev`` (:func:`hikmah.ledger.chain.link_problem`); whether ``prev``
    itself is right is for the caller, who knows the record before.

    Raises:
        Untrusted: the header does not match the file's place, or a complete
            line is not the next record of the chain.
    """
    name = f"{device}/{segment_name(epoch, first)}"
    newline = data.find(b"\n")
    if newline < 0:
        raise Untrusted(f"segment {name} has no complete header line")
    try:
        header = _HEADER.decode(data[:newline])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Untrusted(f"segment {name} has a malformed header: {exc}") from None
    if header.hikmah_segment != FORMAT:
        raise Untrusted(
            f"segment {name} has format {header.hikmah_segment}; this Hikmah reads {FORMAT}"
        )
    if (header.device, header.epoch, header.first) != (device, epoch, first):
        raise Untrusted(f"segment {name} says it is {header.device} e{header.epoch}/{header.first}")
    if (first == 1) != (header.prev == GENESIS):
        raise Untrusted(f"segment {name}: only seq 1 follows GENESIS")
    lines = data[newline + 1 :].split(b"\n")
    torn = lines[-1] != b""
    records: list[Record] = []
    expected, prev = first, header.prev
    for line in lines[:-1]:
        try:
            record = decode_record(line)
            problem = link_problem(record, expected, prev)
        except LedgerError as exc:
            problem = str(exc)
        if problem is not None:
            raise Untrusted(f"segment {name}, record {expected}: {problem}")
        records.append(record)
        expected, prev = expected + 1, record.hash
    return Segment(header=header, records=tuple(records), torn=torn)
