"""Following another device's chain: what its manifest and segments let a receiver apply.

The receiver knows where it is in the device's chain (a :class:`Position`, kept
durably with the records it applied). Given a verified manifest and a way to
load that epoch's segments, :func:`follow` says one of:

- :class:`Advance`: these records, authenticated by the signed head, come next;
- :class:`Current`: nothing new;
- :class:`Waiting`: a segment, or the end of one, has not arrived yet;
- :class:`Refused`: something does not verify: a segment was altered, the chain
  does not end at the signed head, it contradicts records already applied (a
  fork), or a new epoch is not a compaction of the old one.

Only records up to the signed head are ever returned: a record past it is
unauthenticated (a publish that has not written its manifest yet, or a
forgery), and a partial chain is never returned either, since records are
authenticated only by a complete chain up to the head.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import msgspec

from hikmah.ledger.chain import GENESIS, Record, decode_record
from hikmah.model.errors import LedgerError
from hikmah.sync.device import Untrusted
from hikmah.sync.manifest import Manifest
from hikmah.sync.segment import read_segment, segment_name


class Position(msgspec.Struct, frozen=True):
    """A place in a device's chain: the last record applied (seq 0: none)."""

    epoch: int
    seq: int
    hash: str


START = Position(epoch=1, seq=0, hash=GENESIS)


class Advance(msgspec.Struct, frozen=True):
    records: tuple[Record, ...]
    position: Position


class Current(msgspec.Struct, frozen=True):
    pass


class Waiting(msgspec.Struct, frozen=True):
    why: str


class Refused(msgspec.Struct, frozen=True):
    why: str


Followed = Advance | Current | Waiting | Refused


class _Kind(msgspec.Struct):
    type: str = ""
    id: str | None = None
    old_seq: int | None = None
    old_hash: str | None = None


class _Remember(msgspec.Struct):
    trace: _Kind


_KIND = msgspec.json.Decoder(_Kind)
_REMEMBER = msgspec.json.Decoder(_Remember)
_REMEMBERS = ("remember", "sealed")


def follow(
    manifest: Manifest,
    load: Callable[[int], bytes | None],
    applied: Position,
    stored: Callable[[int], bytes | None],
    *,
    upto: int | None = None,
) -> Followed:
    """What ``manifest``'s chain lets a receiver at ``applied`` apply.

    Args:
        manifest: a manifest that verified under the device's paired key.
        load: the bytes of this epoch's segment starting at a seq (None when
            the folder does not have it).
        applied: where the receiver is in this device's chain (:data:`START`).
        stored: the line the receiver keeps at a seq of this device's old
            chain (None if it keeps none), to recognise replays and forks and
            to check a compaction.
        upto: apply nothing past this seq (the device was removed there).
    """
    device, epoch, head = manifest.device, manifest.epoch, manifest.head
    if epoch < applied.epoch:
        return Refused(f"{device} went back from epoch {applied.epoch} to {epoch}")
    rebase = epoch > applied.epoch and applied.seq > 0
    start = 0 if rebase else applied.seq
    if not rebase and head.seq <= start:
        if head.seq == start and head.hash == applied.hash:
            return Current()
        return Refused(f"{device}'s signed head contradicts seq {head.seq} already applied: a fork")
    target = head.seq if upto is None else min(head.seq, upto)
    if target <= start:
        return Current()
    # Read from the segment holding the record at ``start`` (it links to what was
    # applied); earlier segments were checked when their records were applied.
    segments = manifest.segments
    at = 0 if start == 0 else max(bisect.bisect_right(segments, start) - 1, 0)
    records: list[Record] = []
    prev = GENESIS if at == 0 else None
    for index in range(at, len(segments)):
        first = segments[index]
        end = segments[index + 1] - 1 if index + 1 < len(segments) else head.seq
        data = load(first)
        where = f"{device}/{segment_name(epoch, first)}"
        if data is None:
            return Waiting(f"{where} has not arrived")
        try:
            segment = read_segment(data, device=device, epoch=epoch, first=first)
        except Untrusted as exc:
            return Refused(str(exc))
        if prev is not None and segment.header.prev != prev:
            return Refused(f"{where} does not continue the segment before it")
        have = segment.records[: end - first + 1]
        if len(have) < end - first + 1:
            return Waiting(
                f"{where} holds records up to {first + len(segment.records) - 1} of {end}"
            )
        records.extend(have)
        prev = have[-1].hash
    # Read to the signed head even when applying stops earlier (``upto``): only a
    # chain that reaches it authenticates the records before it.
    if records[-1].hash != head.hash:
        return Refused(f"{device}'s chain does not end at its signed head (seq {head.seq})")
    problem = _compaction_problem(manifest, records, applied, stored) if rebase else None
    if problem is None and not rebase:
        problem = _replay_problem(device, records, applied, stored)
    if problem is not None:
        return Refused(problem)
    new = tuple(r for r in records if start < r.seq <= target)
    end_record = new[-1]
    return Advance(new, Position(epoch=epoch, seq=end_record.seq, hash=end_record.hash))


def _replay_problem(
    device: str, records: list[Record], applied: Position, stored: Callable[[int], bytes | None]
) -> str | None:
    for record in records:
        if record.seq > applied.seq:
            break
        mine = stored(record.seq)
        differs = mine is not None and mine != record.line
        if differs or (record.seq == applied.seq and record.hash != applied.hash):
            return f"{device}'s seq {record.seq} differs from the one already applied: a fork"
    return None


def _compaction_problem(
    manifest: Manifest,
    records: list[Record],
    applied: Position,
    stored: Callable[[int], bytes | None],
) -> str | None:
    """Why ``records`` (a whole new epoch) is not a compaction of the chain up to ``applied``."""
    what = f"{manifest.device}'s epoch {manifest.epoch}"
    closing = None
    for record in records:
        try:
            kind = _KIND.decode(record.payload)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return f"{what}: seq {record.seq} has a payload that is not a typed object"
        if kind.type == "compacted":
            closing = kind
        if record.seq > applied.seq:
            continue
        mine = stored(record.seq)
        if mine is None:
            continue
        try:
            old = decode_record(mine)
        except LedgerError:
            old = None
        # Re-chained, so only the payload can be compared.
        if old is not None and old.payload == record.payload:
            continue
        if old is None or not _redacts(record, old):
            return f"{what} rewrites seq {record.seq}, which is not a purged trace's text"
    if closing is None or closing.old_seq is None or closing.old_seq < applied.seq:
        return f"{what} does not close the chain already applied (up to seq {applied.seq})"
    next_epoch = manifest.epoch == applied.epoch + 1
    if next_epoch and closing.old_seq == applied.seq and closing.old_hash != applied.hash:
        return f"{what} closes another chain than the one applied (seq {applied.seq})"
    return None


def _redacts(new: Record, old: Record) -> bool:
    """Whether ``new``'s payload is the redacted stub of the trace ``old`` remembers
    (or both are stubs of one trace)."""
    try:
        new_kind = _KIND.decode(new.payload)
        old_kind = _KIND.decode(old.payload)
        old_id = old_kind.id
        if old_kind.type in _REMEMBERS:
            old_id = _REMEMBER.decode(old.payload).trace.id
        elif old_kind.type != "redacted":
            return False
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return new_kind.type == "redacted" and new_kind.id is not None and new_kind.id == old_id
