"""What a record does to the store besides the derived indexes, whichever chain it is in.

The derived indexes are :mod:`hikmah.index.derived`; a record also changes what is
not derived, the same way on every path (a local write, a paired device's
record, a rebuild replaying both), and doing it again changes nothing:

- a purge (or a compaction's redaction) destroys the trace's data key and
  turns a paired device's record of its text into a redaction (:func:`redact`);
- a commitment leaving the queue needs no delivery records any more;
- the roster's records add and cut off devices: a ``device_added`` record of a
  trusted chain makes its device trusted, a ``device_removed`` record cuts its
  chain off at the lowest cutoff any device named (docs/sync.md, "Removing a
  device").
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from hikmah.index.fates import LOCAL, origin, stored
from hikmah.index.layout import (
    Redaction,
    chain_key,
    decode_redaction,
    encode_redaction,
    reminder_key,
)
from hikmah.index.replicas import REMOVED_BY, Paired, chain, device, paired, put_peer, removed_by
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import decode_record
from hikmah.ledger.payloads import (
    DeviceAddedPayload,
    DeviceRemovedPayload,
    FulfillPayload,
    Payload,
    PurgePayload,
    RedactedPayload,
    SupersedePayload,
)
from hikmah.sync.chain import Position
from hikmah.sync.merge import Remembered
from hikmah.sync.plan import Peer
from hikmah.working.promises import STAGES


class Effects(NamedTuple):
    """What applying a record did beyond the derived indexes."""

    destroyed: bool = False  # a data key was destroyed
    redacted: bool = False  # a paired device's text left the store
    rebuild: bool = False  # records already applied no longer count (a device was removed)

    def __or__(self, other: object) -> Effects:
        assert isinstance(other, Effects)
        return Effects(*(a or b for a, b in zip(self, other, strict=True)))


def effects(snapshot: Snapshot, payload: Payload, at_device: str) -> Effects:
    """What a record of ``at_device``'s chain (:data:`~hikmah.index.fates.LOCAL`: this
    device's ledger) does besides the derived indexes (they reflect it already)."""
    if isinstance(payload, SupersedePayload | FulfillPayload | PurgePayload):
        gone = payload.old_id if isinstance(payload, SupersedePayload) else payload.id
        for stage in STAGES:
            snapshot.txn.delete(reminder_key(gone, stage), db=snapshot.dbs.reminders)
    if isinstance(payload, PurgePayload | RedactedPayload):
        # A redacted remember (a compaction's) is a purge, whoever purged it.
        return redact(snapshot, payload.id)
    if isinstance(payload, DeviceAddedPayload):
        _add_device(snapshot, payload)
    elif isinstance(payload, DeviceRemovedPayload):
        return Effects(rebuild=_remove_device(snapshot, payload, at_device))
    return Effects()


def redact(snapshot: Snapshot, trace_id: str) -> Effects:
    """A purged trace's text leaves the store: its data key is destroyed, and each paired
    device's record of its text (the trace's, and its rivals') becomes a redaction; this
    device's own ledger keeps its record until compaction."""
    txn, dbs = snapshot.txn, snapshot.dbs
    destroyed = bool(txn.delete(trace_id.encode(), db=dbs.keys))
    docno = snapshot.docno(trace_id)
    if docno is None:
        # Not arrived: its remember is stored redacted (hikmah.store.receive).
        return Effects(destroyed=destroyed)
    places = [origin(snapshot, docno)]
    places += [f.at for f in stored(snapshot, trace_id) if isinstance(f, Remembered)]
    redacted = False
    for at in places:
        value = None if at.device == LOCAL else snapshot.line_at(at.device, at.seq)
        redaction = None if value is None else redaction_of(value)
        if redaction is not None:
            txn.put(chain_key(at.device, at.seq), redaction, db=dbs.chains)
            redacted = True
    return Effects(destroyed=destroyed, redacted=redacted)


def redaction_of(value: bytes) -> bytes | None:
    """The redaction of a kept remember record (its hashes, its trace's id, kind, time);
    None when the value holds no text (a redaction already, a compaction's stub)."""
    if decode_redaction(value) is not None:
        return None
    record = decode_record(value)
    try:
        trace = _REMEMBERED.decode(record.payload).trace
    except msgspec.ValidationError:
        return None
    return encode_redaction(
        Redaction(record.prev_hash, record.hash, trace.id, trace.kind, trace.created_at)
    )


class _Stub(msgspec.Struct):
    id: str
    kind: str
    created_at: int


class _Remembered(msgspec.Struct, tag_field="type", tag="remember"):
    trace: _Stub


class _SealedStub(msgspec.Struct, tag_field="type", tag="sealed"):
    trace: _Stub


_REMEMBERED = msgspec.json.Decoder(_Remembered | _SealedStub)


def _add_device(snapshot: Snapshot, payload: DeviceAddedPayload) -> None:
    if payload.device == device(snapshot) or paired(snapshot, payload.device) is not None:
        return
    put_peer(snapshot, payload.device, Paired(name=payload.name, peer=Peer(key=payload.key)))


def _remove_device(snapshot: Snapshot, payload: DeviceRemovedPayload, at_device: str) -> bool:
    """Cut ``payload.device``'s chain off at the lowest cutoff any device named; whether
    records already applied here fall past it (then the indexes are rebuilt)."""
    if payload.device == device(snapshot):
        if removed_by(snapshot) is None:
            by = at_device or payload.device
            snapshot.txn.put(REMOVED_BY, by.encode(), db=snapshot.dbs.meta)
        return False
    entry = paired(snapshot, payload.device)
    if entry is None:
        return False
    peer = entry.peer
    cutoff = payload.seq if peer.upto is None else min(peer.upto, payload.seq)
    past = peer.applied.seq > cutoff
    if past:
        for seq, _value in list(chain(snapshot, payload.device, cutoff + 1)):
            snapshot.txn.delete(chain_key(payload.device, seq), db=snapshot.dbs.chains)
            snapshot.txn.delete(chain_key(payload.device, seq), db=snapshot.dbs.arrivals)
        last = snapshot.line_at(payload.device, cutoff) if cutoff else None
        applied = _position_of(peer.applied.epoch, cutoff, last)
        peer = msgspec.structs.replace(peer, applied=applied)
    peer = msgspec.structs.replace(peer, upto=cutoff)
    put_peer(snapshot, payload.device, msgspec.structs.replace(entry, peer=peer))
    return past


def _position_of(epoch_: int, seq: int, value: bytes | None) -> Position:
    if value is None:
        return Position(epoch=epoch_, seq=0, hash="GENESIS")
    redaction = decode_redaction(value)
    digest = redaction.hash if redaction is not None else decode_record(value).hash
    return Position(epoch=epoch_, seq=seq, hash=digest)
