"""The store's side of sync: paired devices' chains, the roster, and this device's sync state.

A device's own ledger holds only the records it wrote; each paired device's
chain is kept beside it exactly as published (``chains``), so it verifies with
the same codec as the ledger and is never re-chained (docs/sync.md). This
module reads and writes what sync keeps in the store:

- ``chains``: the records of each paired device, by :func:`~hikmah.index.layout.chain_key`;
  a remember whose trace was purged is replaced by its redaction, which keeps
  the hashes, so the chain still verifies;
- ``peers``: each paired device's :class:`Paired` (its key, its name, how far
  its chain is applied, whether it was removed or halted);
- this device's id, what it last published, its open invitations, its
  ledger's epoch, and whether its own published chain is ahead of its ledger
  (``meta``).

The roster is a function of the records like the rest of memory
(:mod:`hikmah.index.effects`); applying a paired device's records is
:mod:`hikmah.store.receive`; the daemon does the folder's I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from hikmah.index.fates import this_device
from hikmah.index.layout import DEVICE_ID, SEQ, chain_key, decode_redaction, split_chain_key
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import Record, decode_record, link_problem
from hikmah.model.errors import ConflictError, LedgerError
from hikmah.model.head import Head
from hikmah.model.wire.ledger import ChainReport
from hikmah.sync.pairing import OpenInvitation
from hikmah.sync.plan import Peer, Published

_PUBLISHED = b"sync_published"  # meta: what this device last published (plan.Published)
_INVITES = b"sync_invites"  # meta: its open invitations (pairing.OpenInvitation)
_EPOCH = b"sync_epoch"  # meta: its ledger's epoch, 1 plus one per compaction
_AHEAD = b"sync_ahead"  # meta: the head of its own published chain, when ahead of its ledger
REMOVED_BY = b"sync_removed_by"  # meta: the paired device that removed this one


class Paired(msgspec.Struct, frozen=True, kw_only=True):
    """What this device keeps about a paired device.

    Attributes:
        name: its name when it was paired (its manifest says the current one).
        peer: its key and how far its chain is applied (:class:`hikmah.sync.plan.Peer`).
        opened: the last seq of its chain whose data keys were opened here (vault on).
    """

    name: str
    peer: Peer
    opened: int = 0


_PAIRED = msgspec.msgpack.Decoder(Paired)
_PUBLISHED_DECODER = msgspec.msgpack.Decoder(Published)
_INVITES_DECODER = msgspec.msgpack.Decoder(list[OpenInvitation])
_HEAD = msgspec.msgpack.Decoder(Head)
_ENCODER = msgspec.msgpack.Encoder()


# -- reading ---------------------------------------------------------------------------


def device(snapshot: Snapshot) -> str | None:
    """This device's id, once it syncs."""
    return this_device(snapshot) or None


def peers(snapshot: Snapshot) -> dict[str, Paired]:
    """Every paired device (removed ones too), by id."""
    return {
        bytes(key).decode(): _PAIRED.decode(value)
        for key, value in snapshot.txn.cursor(db=snapshot.dbs.peers)
    }


def paired(snapshot: Snapshot, device_id_: str) -> Paired | None:
    raw = snapshot.txn.get(device_id_.encode(), db=snapshot.dbs.peers)
    return None if raw is None else _PAIRED.decode(raw)


def published(snapshot: Snapshot) -> Published | None:
    raw = snapshot.txn.get(_PUBLISHED, db=snapshot.dbs.meta)
    return None if raw is None else _PUBLISHED_DECODER.decode(raw)


def invitations(snapshot: Snapshot) -> list[OpenInvitation]:
    raw = snapshot.txn.get(_INVITES, db=snapshot.dbs.meta)
    return [] if raw is None else _INVITES_DECODER.decode(raw)


def epoch(snapshot: Snapshot) -> int:
    raw = snapshot.txn.get(_EPOCH, db=snapshot.dbs.meta)
    return 1 if raw is None else int(SEQ.unpack(raw)[0])


def ahead(snapshot: Snapshot) -> Head | None:
    """The head of this device's own chain in the folder, when its ledger is behind it."""
    raw = snapshot.txn.get(_AHEAD, db=snapshot.dbs.meta)
    return None if raw is None else _HEAD.decode(raw)


def removed_by(snapshot: Snapshot) -> str | None:
    raw = snapshot.txn.get(REMOVED_BY, db=snapshot.dbs.meta)
    return None if raw is None else bytes(raw).decode()


def chain(snapshot: Snapshot, device_id_: str, start: int = 1) -> Iterator[tuple[int, bytes]]:
    """(seq, stored value) of ``device_id_``'s chain from ``start``: lines, or redactions."""
    cursor = snapshot.txn.cursor(db=snapshot.dbs.chains)
    prefix = device_id_.encode()
    if not cursor.set_range(chain_key(device_id_, start)):
        return
    for key, value in cursor:
        if not bytes(key).startswith(prefix):
            return
        yield split_chain_key(bytes(key))[1], bytes(value)


def stored_line(snapshot: Snapshot, device_id_: str, seq: int) -> bytes | None:
    """The line kept at ``seq`` of a chain, to compare a replay with (None: none kept, or
    only its redaction, whose chain position is checked by hash instead)."""
    value = snapshot.line_at(device_id_, seq)
    return None if value is None or decode_redaction(value) is not None else value


# -- writing (in the write transaction of a snapshot) -----------------------------------


def put_peer(snapshot: Snapshot, device_id_: str, entry: Paired) -> None:
    snapshot.txn.put(device_id_.encode(), _ENCODER.encode(entry), db=snapshot.dbs.peers)


def halt(snapshot: Snapshot, device_id_: str, why: str) -> None:
    """Stop applying a paired device's chain until a person looks (a fork)."""
    entry = paired(snapshot, device_id_)
    if entry is not None and entry.peer.halted is None:
        peer = msgspec.structs.replace(entry.peer, halted=why)
        put_peer(snapshot, device_id_, msgspec.structs.replace(entry, peer=peer))


def put_published(snapshot: Snapshot, value: Published | None) -> None:
    _put_meta(snapshot, _PUBLISHED, value)


def put_invitations(snapshot: Snapshot, value: list[OpenInvitation]) -> None:
    _put_meta(snapshot, _INVITES, value or None)


def put_ahead(snapshot: Snapshot, head: Head | None) -> None:
    _put_meta(snapshot, _AHEAD, head)


def next_epoch(snapshot: Snapshot) -> int:
    """Count one more compaction of this device's ledger; the new epoch."""
    new = epoch(snapshot) + 1
    snapshot.txn.put(_EPOCH, SEQ.pack(new), db=snapshot.dbs.meta)
    return new


def set_device(snapshot: Snapshot, device_id_: str) -> None:
    """Name this device (once: the id of its signing key).

    Raises:
        ConflictError: the store belongs to another device id.
    """
    known = device(snapshot)
    if known is not None and known != device_id_:
        raise ConflictError(
            f"this data directory syncs as device {known}, and the signing key given is"
            f" {device_id_}'s: restore that device's key, or sync from a new data directory"
        )
    snapshot.txn.put(DEVICE_ID, device_id_.encode(), db=snapshot.dbs.meta)


def _put_meta(snapshot: Snapshot, key: bytes, value: Any) -> None:
    if value is None:
        snapshot.txn.delete(key, db=snapshot.dbs.meta)
    else:
        snapshot.txn.put(key, _ENCODER.encode(value), db=snapshot.dbs.meta)


# -- verifying -----------------------------------------------------------------------------


def verify_chains(snapshot: Snapshot) -> tuple[list[ChainReport], list[str], list[str]]:
    """Check every paired device's chain as this store keeps it: each record decodes and
    links to the one before (a redaction by the hashes it kept), and the chain ends where
    the device is applied. A report per device, and the errors and warnings, as sentences."""
    reports: list[ChainReport] = []
    errors: list[str] = []
    warnings: list[str] = []
    for device_id_, entry in sorted(peers(snapshot).items()):
        peer = entry.peer
        expected, prev, redacted, count = 1, "GENESIS", 0, 0
        problem = None
        for seq, value in chain(snapshot, device_id_):
            count += 1
            if problem is not None:
                continue  # counted, as the ledger's records are, but not checked
            redaction = decode_redaction(value)
            if redaction is not None:
                redacted += 1
                if seq != expected or redaction.prev_hash != prev:
                    problem = f"record {seq} does not link to record {expected - 1}"
                digest = redaction.hash
            else:
                try:
                    record = decode_record(value)
                    problem = link_problem(record, expected, prev)
                except LedgerError as exc:
                    problem = str(exc)
                digest = record.hash if problem is None else ""
            if problem is None:
                expected, prev = seq + 1, digest
        if problem is None and (expected - 1, prev) != (peer.applied.seq, peer.applied.hash):
            problem = f"its chain ends at seq {expected - 1}, applied up to {peer.applied.seq}"
        reports.append(
            ChainReport(
                device=device_id_,
                name=entry.name,
                ok=problem is None and peer.halted is None,
                records=count,
                head=None if expected == 1 else Head(expected - 1, prev),
                stopped=problem,
                halted=peer.halted,
                removed_at=peer.upto,
                redacted=redacted,
            )
        )
        if problem is not None:
            errors.append(f"device {device_id_} ({entry.name}): {problem}")
        if redacted:
            warnings.append(
                f"device {device_id_} ({entry.name}): {redacted} record(s) redacted after a purge"
            )
        if peer.halted is not None:
            errors.append(f"device {device_id_} ({entry.name}) is halted: {peer.halted}")
    return reports, errors, warnings


def take_back(snapshot: Snapshot, records: list[Record]) -> int:
    """Append this device's own published records past its ledger's last one, as an
    unacknowledged tail (a person accepts it with ``verify-ledger --accept-tail``)."""
    last = snapshot.last_record()
    seq, prev = (0, "GENESIS") if last is None else (last.seq, last.hash)
    count = 0
    for record in records:
        if record.seq <= seq:
            continue
        if link_problem(record, seq + 1, prev) is not None:
            break
        snapshot.txn.put(SEQ.pack(record.seq), record.line, db=snapshot.dbs.ledger, append=True)
        seq, prev, count = record.seq, record.hash, count + 1
    return count
