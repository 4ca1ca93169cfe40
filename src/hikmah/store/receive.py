"""Applying a paired device's records: the checks a receiver can make, then the same path
as a local write.

A step (:class:`~hikmah.rules.operations.ApplyRemote`) holds records the planner
authenticated (their hash chain reaches the device's signed head). Before any
of it is applied, every rule that is a function of the records alone is
checked again (docs/sync.md, "Which rules are checked where"): each payload
decodes, each trace obeys :func:`hikmah.rules.checks.check_trace` (over its opened
text when its key came with it), a sensitive trace is sealed, a correction's
supersede follows its own remember in the chain, a device a record adds has
the id of its key. A record that fails refuses the whole step and halts the
device's chain until a person looks: applying the rest around a hole would
make the merged memory depend on where the hole is.

Then each record is kept as published (``chains``; the remember of a trace
purged here as its redaction), its data key wrapped under this device's
master, and it goes through the derived indexes and the record's effects like
a record of this device's own ledger. Nothing is appended to the ledger.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from hikmah.access.person import attestation, granted, person_only
from hikmah.index import derived
from hikmah.index.effects import Effects, effects, redaction_of
from hikmah.index.fates import stored
from hikmah.index.layout import ARRIVAL, SEALED_MARK, SEQ, chain_key, decode_redaction
from hikmah.index.replicas import chain, paired, peers, put_peer
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import Record, decode_record
from hikmah.ledger.payloads import (
    DeviceAddedPayload,
    DeviceRemovedPayload,
    FulfillPayload,
    Payload,
    PresencePayload,
    PurgePayload,
    RedactedPayload,
    RememberPayload,
    SupersedePayload,
    decode_payload,
)
from hikmah.model.device_id import is_device_id
from hikmah.model.errors import HikmahError, LedgerError, PolicyError
from hikmah.model.trace import Trace
from hikmah.rules.checks import check_trace
from hikmah.rules.operations import Applied, ApplyRemote
from hikmah.sync.device import KEY_BYTES, device_id
from hikmah.sync.manifest import valid_name
from hikmah.sync.merge import Purged, RecordId
from hikmah.vault.crypto import DataKey, DecryptionFailed
from hikmah.vault.sealing import Sealed, open_with, wrapped_entry

_ARRIVALS = b"sync_arrivals"  # meta: how many paired devices' records have arrived


class Refused(HikmahError):
    """A paired device's record breaks a rule a receiver checks; its chain halts."""

    reason = "ledger"


def apply_step(
    snapshot: Snapshot, operation: ApplyRemote, dirty: set[int], seq: int
) -> tuple[Applied, Effects]:
    """Apply one step in the write transaction of ``snapshot``; its records count from
    this ledger's record ``seq`` (the next one: reads as of the past see them from
    there, never before they arrived).

    A step of a new epoch (the device compacted its ledger) holds its whole
    re-chained chain: the kept records are replaced by it, and of the records
    already applied only the redacted ones change anything.

    Returns:
        What was applied (or why the device halted: then only the halt was
        written), and the records' effects beyond the indexes.

    Raises:
        Refused: the device is not paired here, or is halted.
    """
    step = operation.step
    entry = paired(snapshot, step.device)
    if entry is None or entry.peer.halted is not None:
        why = "is not paired here" if entry is None else f"is halted: {entry.peer.halted}"
        raise Refused(f"device {step.device} {why}")
    peer = entry.peer
    rebase = step.position.epoch > peer.applied.epoch and peer.applied.seq > 0
    # A new epoch's step holds its whole chain: its person records are read from the start.
    person = _Person(None, ()) if rebase else _Person(peer.person, peer.invites)
    try:
        payloads = _checked(snapshot, step.device, step.records, operation.keys)
        person = _attested(step.device, person, step.records, payloads)
    except HikmahError as exc:
        halted = msgspec.structs.replace(peer, halted=str(exc))
        put_peer(snapshot, step.device, msgspec.structs.replace(entry, peer=halted))
        applied = Applied(device=step.device, records=0, position=peer.applied, halted=str(exc))
        return applied, Effects()
    done = Effects()
    count = _arrivals(snapshot)
    for record, payload in zip(step.records, payloads, strict=True):
        _keep(snapshot, step.device, record, payload, operation.keys)
        if rebase and record.seq <= peer.applied.seq and not isinstance(payload, RedactedPayload):
            continue  # the compaction re-chained a record already applied
        at = chain_key(step.device, record.seq)
        snapshot.txn.put(at, ARRIVAL.pack(seq, count), db=snapshot.dbs.arrivals)
        count += 1
        derived.apply_payload(snapshot, seq, payload, dirty, at=RecordId(step.device, record.seq))
        done |= effects(snapshot, payload, step.device)
    snapshot.txn.put(_ARRIVALS, SEQ.pack(count), db=snapshot.dbs.meta)
    now = paired(snapshot, step.device)  # its own records may have cut it off
    assert now is not None
    moved = msgspec.structs.replace(
        now.peer,
        applied=step.position,
        accepted=step.accepted,
        person=person.key,
        invites=person.invites,
    )
    opened = now.opened if operation.opened is None else max(now.opened, operation.opened)
    put_peer(snapshot, step.device, msgspec.structs.replace(now, peer=moved, opened=opened))
    return Applied(device=step.device, records=len(step.records), position=step.position), done


def _keep(
    snapshot: Snapshot,
    device: str,
    record: Record,
    payload: Payload,
    keys: dict[str, bytes],
) -> None:
    """Keep the record as published (redacted when its trace is purged here), and the
    data key of a sealed trace wrapped under this device's master."""
    txn, dbs = snapshot.txn, snapshot.dbs
    value = record.line
    if isinstance(payload, RememberPayload | Sealed):
        trace_id = payload.trace.id
        if _purged_here(snapshot, trace_id):
            value = redaction_of(record.line) or value
        elif (
            isinstance(payload, Sealed)
            and trace_id in keys
            and dbs.vault is not None
            and txn.get(trace_id.encode(), db=dbs.keys) is None
        ):
            entry = wrapped_entry(dbs.vault, DataKey(keys[trace_id]))
            txn.put(trace_id.encode(), entry, db=dbs.keys)
            txn.put(SEALED_MARK, b"", db=dbs.meta)
    txn.put(chain_key(device, record.seq), value, db=dbs.chains)


def _purged_here(snapshot: Snapshot, trace_id: str) -> bool:
    docno = snapshot.docno(trace_id)
    if docno is not None:
        return snapshot.status_of(docno) == "purged"
    return any(isinstance(fact, Purged) for fact in stored(snapshot, trace_id))


# -- the checks -------------------------------------------------------------------------


def _checked(
    snapshot: Snapshot, device: str, records: tuple[Record, ...], keys: dict[str, bytes]
) -> list[Payload]:
    """The payloads of ``records``, each checked against every record-only rule.

    Raises:
        Refused, and the errors of :func:`hikmah.rules.checks.check_trace`: naming the seq.
    """
    payloads: list[Payload] = []
    for record in records:
        try:
            payloads.append(decode_payload(record))
        except LedgerError as exc:
            raise Refused(
                f"seq {record.seq}: {exc}; if another device runs a newer Hikmah, upgrade this one"
            ) from None
    for position, record in enumerate(records):
        try:
            _check(snapshot, device, records, payloads, position, keys)
        except HikmahError as exc:
            raise Refused(f"seq {record.seq}: {exc}") from None
    return payloads


def _check(
    snapshot: Snapshot,
    device: str,
    records: tuple[Record, ...],
    payloads: list[Payload],
    position: int,
    keys: dict[str, bytes],
) -> None:
    payload = payloads[position]
    if isinstance(payload, RememberPayload | Sealed):
        trace = _readable(payload, keys)
        check_trace(trace or payload.trace, sealed=trace is None)
        if isinstance(payload, RememberPayload) and payload.trace.privacy == "sensitive":
            raise PolicyError("a sensitive trace arrived unsealed: its text is kept only sealed")
        _check_followers(payload.trace, payloads[position + 1 :])
    elif isinstance(payload, SupersedePayload):
        before = (
            payloads[position - 1]
            if position
            else _stored_payload(snapshot, device, records[0].seq - 1)
        )
        if not (
            isinstance(before, RememberPayload | Sealed)
            and before.trace.id == payload.new_id
            and before.trace.supersedes == payload.old_id
        ):
            raise Refused("a supersede record does not follow the correction that makes it")
    elif isinstance(payload, DeviceAddedPayload):
        if len(payload.key) != KEY_BYTES or device_id(payload.key) != payload.device:
            raise Refused(f"device {payload.device} is not the id of the key it is added with")
        if not valid_name(payload.name):
            raise Refused("a device is added with a name that is not 1 to 64 printable characters")
    elif isinstance(payload, DeviceRemovedPayload) and not is_device_id(payload.device):
        raise Refused("a device is removed by a name that is not a device id")


class _Person(NamedTuple):
    """A device's person as its chain says so far: the key in force, and the invitations
    its grants have used."""

    key: bytes | None
    invites: tuple[str, ...]


def _attested(
    device: str, person: _Person, records: tuple[Record, ...], payloads: list[Payload]
) -> _Person:
    """Check every person-only record of ``device`` against its person key, in chain
    order from ``person``; the person after them.

    While presence is on there (its key in force), such a record must carry that key's
    attestation; a change of presence too, and where none is in force a new key signs
    its own record. A pairing the daemon wrote on a join may carry the person's grant of
    the invitation instead, each invitation good once.

    Raises:
        Refused: naming the seq and what a copy of the device's files cannot do.
    """
    key, invites = person
    for record, payload in zip(records, payloads, strict=True):
        if not person_only(payload):
            continue
        found = attestation(record.payload)
        if isinstance(payload, PresencePayload) and payload.action == "reset":
            if key is not None:
                raise Refused(
                    f"seq {record.seq}: {device}'s passphrase was reset without the old one;"
                    " a copy of its files can do that, so nothing more of it is taken here."
                    f" If it was you, remove {device} here (hikmah sync remove) and pair that"
                    " device again as a new one"
                )
            continue
        if isinstance(payload, PresencePayload):
            signer = key if key is not None else payload.key
            if signer is not None and (found is None or not found.by(signer)):
                raise Refused(
                    f"seq {record.seq}: a change of {device}'s presence without its person's"
                    " signature: a copy of its files cannot sign one"
                )
            key = payload.key if payload.hash is not None else None
            continue
        if key is None:
            continue  # presence is off there: nothing tells the person from a copy
        if found is not None and found.by(key):
            continue
        if isinstance(payload, DeviceAddedPayload) and _granted(device, key, invites, payload):
            assert payload.invite is not None
            invites = (*invites, payload.invite)
            continue
        raise Refused(
            f"seq {record.seq}: {_what(payload)} without the signature of {device}'s person,"
            " whose presence is on there: it was not made by them (a copy of the device's"
            " files?)"
        )
    return _Person(key, invites)


def _granted(
    device: str, key: bytes, invites: tuple[str, ...], payload: DeviceAddedPayload
) -> bool:
    return (
        payload.invite is not None
        and payload.grant is not None
        and payload.invite not in invites
        and granted(key, payload.grant, device, payload.invite)
    )


def _what(payload: Payload) -> str:
    if isinstance(payload, PurgePayload):
        return "a purge"
    if isinstance(payload, DeviceAddedPayload | DeviceRemovedPayload):
        return "a change of who is paired"
    return "a verified trace"


def _check_followers(trace: Trace, after: list[Payload]) -> None:
    """A correction's supersede, then an outcome's fulfil, follow its remember (when the
    step holds the records after it)."""
    expected: list[tuple[type, tuple[str, str | None]]] = []
    if trace.supersedes is not None:
        expected.append((SupersedePayload, (trace.supersedes, trace.id)))
    if trace.fulfills is not None:
        expected.append((FulfillPayload, (trace.fulfills, trace.id)))
    for (kind, names), found in zip(expected, after, strict=False):
        ids = (
            (found.old_id, found.new_id)
            if isinstance(found, SupersedePayload)
            else (found.id, found.by)
            if isinstance(found, FulfillPayload)
            else None
        )
        if not isinstance(found, kind) or ids != names:
            raise Refused(f"the remember of {trace.id} is not followed by its {kind.__name__}")


def _readable(payload: RememberPayload | Sealed, keys: dict[str, bytes]) -> Trace | None:
    """The trace with its text: a plain remember's, or a sealed one opened with the key that
    came with it (None: it stays sealed here).

    Raises:
        Refused: the key sent for it does not open it.
    """
    if isinstance(payload, RememberPayload):
        return payload.trace
    key = keys.get(payload.trace.id)
    if key is None:
        return None
    try:
        return open_with(payload, DataKey(key))
    except DecryptionFailed:
        raise Refused(f"the data key sent for {payload.trace.id} does not open it") from None


def _stored_payload(snapshot: Snapshot, device: str, seq: int) -> Payload | None:
    value = snapshot.line_at(device, seq) if seq >= 1 else None
    if value is None or decode_redaction(value) is not None:
        return None
    try:
        return decode_payload(decode_record(value))
    except LedgerError:
        return None


# -- rebuilding ---------------------------------------------------------------------------


class Arrived(NamedTuple):
    """A kept record of a paired device, where it arrived: before this ledger's record
    ``seq`` (and after the one before), the ``order``-th record to arrive."""

    seq: int
    order: int
    device: str
    chain_seq: int
    payload: Payload


def arrived(snapshot: Snapshot) -> list[Arrived]:
    """Every kept record of every paired device, in the order they arrived (what a
    rebuild replays among this ledger's own records)."""
    found: list[Arrived] = []
    for device in peers(snapshot):
        for seq, value in chain(snapshot, device):
            raw = snapshot.txn.get(chain_key(device, seq), db=snapshot.dbs.arrivals)
            at, count = (0, 0) if raw is None else ARRIVAL.unpack(raw)
            found.append(Arrived(int(at), int(count), device, seq, _kept_payload(value)))
    found.sort(key=lambda a: (a.seq, a.order, a.device, a.chain_seq))
    return found


def replay(snapshot: Snapshot, found: Arrived, dirty: set[int]) -> None:
    """Apply one kept record to fresh indexes (a rebuild)."""
    where = RecordId(found.device, found.chain_seq)
    derived.apply_payload(snapshot, found.seq, found.payload, dirty, at=where)
    effects(snapshot, found.payload, found.device)


def _kept_payload(value: bytes) -> Payload:
    redaction = decode_redaction(value)
    if redaction is None:
        return decode_payload(decode_record(value))
    return RedactedPayload(id=redaction.id, kind=redaction.kind, created_at=redaction.created_at)


def _arrivals(snapshot: Snapshot) -> int:
    raw = snapshot.txn.get(_ARRIVALS, db=snapshot.dbs.meta)
    return 0 if raw is None else int(SEQ.unpack(raw)[0])
