"""What the records say about each trace besides its remember, folded by :mod:`hikmah.sync.merge`.

Records reach a store from its own ledger and from every paired device's
chain, in any order: a correction before the trace it corrects, a purge of a
trace whose segment is still on its way, two corrections of one trace written
on two machines at once. So the trace index keeps a trace's status, its
successors and its pin as a function of the *set* of records about it
(docs/sync.md, "Merge"): each supersede, fulfil, purge and pin record, and a
rival remember of the same id, is a fact kept here (``fates``), and the
trace's state is :func:`hikmah.sync.merge.fate` of those facts and of its
remember, read back from the record that wrote it (``origins``). A fact about
a trace not seen yet waits here until the trace arrives.

Feedback is the exception: each record is applied once (a chain is applied
once per position, a rebuild replays each record once), so feedback is
counted as it comes, and only waits here for a trace not seen yet.

A record is named by where it was written: :class:`~hikmah.sync.merge.RecordId`
of its device and seq, :data:`LOCAL` standing for this store's own ledger
(whose device id exists only once it syncs; it is filled in when folding).
"""

from __future__ import annotations

import blake3
import msgspec

from hikmah.index.layout import DEVICE_ID, chain_key, decode_redaction, split_chain_key, u32
from hikmah.index.snapshot import Snapshot
from hikmah.ledger import payloads
from hikmah.ledger.chain import decode_record
from hikmah.model.errors import LedgerError
from hikmah.model.trace import Trace, is_model_source, normalize_claim_key, normalize_claim_value
from hikmah.sync import merge
from hikmah.sync.merge import Fact, RecordId
from hikmah.vault.sealing import Sealed

LOCAL = ""  # the device of this store's own ledger records


def this_device(snapshot: Snapshot) -> str:
    """This store's device id (:data:`LOCAL` until it first syncs)."""
    raw = snapshot.txn.get(DEVICE_ID, db=snapshot.dbs.meta)
    return LOCAL if raw is None else bytes(raw).decode()


def resolve(snapshot: Snapshot, at: RecordId) -> RecordId:
    """``at`` with :data:`LOCAL` replaced by this device's id, as other devices name it."""
    return RecordId(this_device(snapshot), at.seq) if at.device == LOCAL else at


def record_name(at: RecordId) -> str:
    """``device:seq``, how a pin names the pins it overrides."""
    return f"{at.device}:{at.seq}"


def parse_record_name(name: str) -> RecordId | None:
    device, _, seq = name.rpartition(":")
    return RecordId(device, int(seq)) if device and seq.isdigit() else None


# -- the facts kept -------------------------------------------------------------------


def stored(snapshot: Snapshot, trace_id: str) -> list[Fact]:
    raw = snapshot.txn.get(trace_id.encode(), db=snapshot.dbs.fates)
    return [] if raw is None else merge.FACTS_DECODER.decode(raw)


def keep(snapshot: Snapshot, trace_id: str, facts: list[Fact]) -> None:
    key = trace_id.encode()
    if facts:
        snapshot.txn.put(key, merge.FACTS_ENCODER.encode(facts), db=snapshot.dbs.fates)
    else:
        snapshot.txn.delete(key, db=snapshot.dbs.fates)


def add(snapshot: Snapshot, fact: Fact) -> None:
    """Keep one more fact about its trace (a fact already kept is kept once)."""
    facts = stored(snapshot, fact.trace)
    if fact not in facts:
        keep(snapshot, fact.trace, [*facts, fact])


def take_feedback(snapshot: Snapshot, trace_id: str) -> list[merge.Feedback]:
    """The feedback that waited for ``trace_id``, no longer kept (it is counted now)."""
    facts = stored(snapshot, trace_id)
    waiting = [f for f in facts if isinstance(f, merge.Feedback)]
    if waiting:
        keep(snapshot, trace_id, [f for f in facts if not isinstance(f, merge.Feedback)])
    return waiting


def fact_for(snapshot: Snapshot, payload: payloads.TracePayload, at: RecordId) -> Fact:
    """The fact a record states about its trace."""
    if isinstance(payload, payloads.SupersedePayload):
        writer = _remembered_before(snapshot, at, payload.new_id)
        if writer is None:  # not written as a pair: judge by the trace as this store has it
            docno = snapshot.docno(payload.new_id)
            writer = None if docno is None else snapshot.bare_trace_at(docno)
        verified = writer is not None and writer.provenance.verified
        model = writer is not None and is_model_source(writer.provenance.source)
        return merge.Superseded(
            at=at, trace=payload.old_id, by=payload.new_id, by_verified=verified, by_model=model
        )
    if isinstance(payload, payloads.FulfillPayload):
        # An outcome's fulfil follows it in its chain; a plain fulfil's ``by`` is a locator.
        outcome = None if payload.by is None else _remembered_before(snapshot, at, payload.by)
        return merge.Fulfilled(
            at=at,
            trace=payload.id,
            by=None if outcome is None else outcome.id,
            by_model=outcome is not None and is_model_source(outcome.provenance.source),
        )
    if isinstance(payload, payloads.PurgePayload):
        return merge.Purged(at=at, trace=payload.id)
    if isinstance(payload, payloads.PinPayload):
        overrides = frozenset(
            found for name in payload.overrides if (found := parse_record_name(name)) is not None
        )
        return merge.Pinned(at=at, trace=payload.id, pinned=payload.pinned, overrides=overrides)
    assert isinstance(payload, payloads.FeedbackPayload)
    return merge.Feedback(at=at, trace=payload.id, good=payload.outcome == "good")


def _remembered_before(snapshot: Snapshot, at: RecordId, trace_id: str) -> Trace | None:
    """The trace ``trace_id`` as remembered by one of the two records before ``at`` in its
    chain (a correction's remember, then its supersede, then an outcome's fulfil)."""
    for back in (1, 2):
        if at.seq - back < 1:
            break
        found = _remember_at(snapshot, RecordId(at.device, at.seq - back))
        if isinstance(found, payloads.RememberPayload | Sealed) and found.trace.id == trace_id:
            return found.trace
    return None


def _remember_at(snapshot: Snapshot, at: RecordId) -> payloads.Remembering | None:
    line = snapshot.line_at(at.device, at.seq)
    if line is None:
        return None
    redaction = decode_redaction(line)
    if redaction is not None:
        return payloads.RedactedPayload(
            id=redaction.id, kind=redaction.kind, created_at=redaction.created_at
        )
    try:
        payload = payloads.decode_payload(decode_record(line))
    except LedgerError:
        return None
    return payload if isinstance(payload, payloads.Remembering) else None


# -- where a trace was remembered ---------------------------------------------------------


def set_origin(snapshot: Snapshot, docno: int, at: RecordId) -> None:
    snapshot.txn.put(u32(docno), chain_key(at.device, at.seq), db=snapshot.dbs.origins)


def origin(snapshot: Snapshot, docno: int) -> RecordId:
    """The record that remembered the document (as kept: :data:`LOCAL` for this device)."""
    raw = snapshot.txn.get(u32(docno), db=snapshot.dbs.origins)
    if raw is None:
        return RecordId(LOCAL, 0)  # indexed before origins were kept: rebuilt on open
    return RecordId(*split_chain_key(bytes(raw)))


def remembered_record(snapshot: Snapshot, at: RecordId) -> tuple[str | None, int]:
    """The hash of the record at ``at`` and when it says it was written (0: it does not)."""
    line = snapshot.line_at(at.device, at.seq)
    if line is None:
        return None, 0
    redaction = decode_redaction(line)
    if redaction is not None:
        return redaction.hash, redaction.created_at
    record = decode_record(line)
    try:
        when = payloads.written_at(payloads.decode_payload(record))
    except LedgerError:
        when = None
    return record.hash, when or 0


def digest(snapshot: Snapshot, at: RecordId) -> str:
    """What tells two remembers of one id apart: a digest of the record's payload bytes."""
    line = snapshot.line_at(at.device, at.seq)
    if line is None or decode_redaction(line) is not None:
        return ""
    return blake3.blake3(decode_record(line).payload).hexdigest()[:32]


def remembered(snapshot: Snapshot, trace_id: str, at: RecordId) -> merge.Remembered:
    """The remember fact of the record at ``at`` (as kept) about ``trace_id``."""
    found = _remember_at(snapshot, at)
    if not isinstance(found, payloads.RememberPayload | Sealed):
        docno = snapshot.docno(trace_id)
        kind = found.kind if found is not None else "observation"
        if found is None and docno is not None:
            kind = snapshot.bare_trace_at(docno).kind
        return merge.Remembered(at=at, trace=trace_id, digest="", kind=kind, redacted=True)
    trace = found.trace  # sealed: the blank keeps kind, provenance and deadline
    return merge.Remembered(
        at=at,
        trace=trace_id,
        digest=digest(snapshot, at),
        kind=trace.kind,
        verified=trace.provenance.verified,
        model=is_model_source(trace.provenance.source),
        claim_key=None if trace.claim_key is None else normalize_claim_key(trace.claim_key),
        claim_value=None if trace.claim_value is None else normalize_claim_value(trace.claim_value),
        deadline=trace.deadline,
    )


def fold(snapshot: Snapshot, trace_id: str, docno: int) -> merge.Fate:
    """The trace's fate: its remember and every fact kept about it, folded.

    Record ids are resolved (:func:`resolve`) so that the fold here is the fold
    every other device makes of the same records.
    """
    facts: list[Fact] = [remembered(snapshot, trace_id, origin(snapshot, docno))]
    facts.extend(f for f in stored(snapshot, trace_id) if not isinstance(f, merge.Feedback))
    me = this_device(snapshot)
    return merge.fate(_resolved(f, me) for f in facts)


def _resolved(fact: Fact, me: str) -> Fact:
    if fact.at.device != LOCAL:
        return fact
    return msgspec.structs.replace(fact, at=RecordId(me, fact.at.seq))


def pins_in_force(snapshot: Snapshot, trace_id: str) -> tuple[str, ...]:
    """The pins of other devices' chains in force on ``trace_id``, as a new pin or unpin
    written here names them (``overrides``)."""
    me = this_device(snapshot)
    pins = [
        msgspec.structs.replace(f, at=RecordId(me, f.at.seq)) if f.at.device == LOCAL else f
        for f in stored(snapshot, trace_id)
        if isinstance(f, merge.Pinned)
    ]
    return tuple(sorted(record_name(p.at) for p in merge.pins_in_force(pins) if p.at.device != me))
