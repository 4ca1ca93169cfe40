"""The derived indexes: how each ledger record changes them, registered in one place.

Every derived database (:mod:`hikmah.layout`) is a function of the ledger:
:func:`apply_payload` is the one place a payload changes them, used by live
writes and by rebuilding from the ledger alike, and :data:`INDEXES` lists
every derived index with the databases it owns, so that a rebuild knows what
to empty. A new derived index (say, vectors for a semantic channel) is one
more entry there: its databases and its ``apply``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from hikmah.layout import (
    CHUNK,
    KIND_CODE,
    MAX_KEY,
    NO_DEADLINE,
    PRIVACY_CODE,
    REVISION,
    SEQ,
    SOURCE_CODE,
    STATUS_CODE,
    TAG_PREFIX,
    WINDOW,
    Databases,
    claim_key,
    claim_value_key,
    deadline_key,
    encode_sealed,
    encode_trace,
    revision_key,
    stub,
    term_key,
    u32,
)
from hikmah.payloads import (
    CompactedPayload,
    FeedbackPayload,
    FulfillPayload,
    Payload,
    PinPayload,
    RedactedPayload,
    RememberPayload,
    SupersedePayload,
    written_at,
)
from hikmah.sealing import Sealed
from hikmah.snapshot import Snapshot
from hikmah.tokenizer import terms
from hikmah.trace import Trace, source_class
from hikmah.vault import KeyDestroyed
from hikmah.vocabulary import Status

# Outcome feedback of a trace: (good - bad) / (good + bad + prior), in (-1, 1).
# The prior keeps one report from swinging it to an extreme (one good → 1/3).
FEEDBACK_PRIOR = 2
_COUNTS = struct.Struct(">II")
_NEXT_DOC = b"next_doc"  # meta: the next document number


class DerivedIndex(NamedTuple):
    """Databases rebuilt from the ledger, and how one record changes them.

    ``apply(snapshot, seq, payload, plain, dirty)`` runs in the write
    transaction of ``snapshot`` for the record ``seq``; ``plain`` is the trace a
    live write sealed (None on replay), and ``dirty`` collects the feature
    chunks it changed.
    """

    databases: tuple[str, ...]
    apply: Callable[[Snapshot, int, Payload, Trace | None, set[int]], None]


def apply_payload(
    snapshot: Snapshot, seq: int, payload: Payload, dirty: set[int], *, plain: Trace | None = None
) -> None:
    """Make every derived index reflect one more ledger record.

    Args:
        snapshot: a snapshot of an open write transaction.
        seq: the record's sequence number.
        payload: the record's decoded payload.
        dirty: collects the feature chunks this changed (for the column cache).
        plain: for a live write of a sealed trace, the trace it sealed (saves
            opening it again).
    """
    for derived in INDEXES:
        derived.apply(snapshot, seq, payload, plain, dirty)


def clear(snapshot: Snapshot) -> None:
    """Empty every derived index (before replaying the whole ledger into them)."""
    for derived in INDEXES:
        for name in derived.databases:
            snapshot.txn.drop(getattr(snapshot.dbs, name), delete=False)
    snapshot.txn.delete(_NEXT_DOC, db=snapshot.dbs.meta)


def derived_databases(dbs: Databases) -> Iterator[Any]:
    """Every database a rebuild recreates from the ledger."""
    for derived in INDEXES:
        yield from (getattr(dbs, name) for name in derived.databases)


def doc_terms(trace: Trace) -> list[str]:
    """The index terms of a trace: its content terms and its tags.

    A term too long for an LMDB key (a 500-letter "word" is pasted data, not a
    word) is left out of the index; the text keeps it.
    """
    found = [*terms(trace.content), *(TAG_PREFIX + tag for tag in trace.tags)]
    return [term for term in found if len(term.encode()) + 5 <= MAX_KEY]


# --- the trace index: documents, features, postings, claims, deadlines, links ------------


def _apply_traces(
    snapshot: Snapshot, seq: int, payload: Payload, plain: Trace | None, dirty: set[int]
) -> None:
    if isinstance(payload, RememberPayload):
        _add(snapshot, seq, payload.trace, encode_trace(payload.trace), dirty)
        return
    if isinstance(payload, Sealed):
        if plain is None:
            _add_sealed(snapshot, seq, payload, dirty)
        else:
            _add(snapshot, seq, plain, encode_sealed(payload), dirty)
        return
    if isinstance(payload, RedactedPayload):
        _add_stub(snapshot, seq, payload.id, payload.kind, payload.created_at, dirty)
        return
    if isinstance(payload, CompactedPayload):
        return
    target = payload.old_id if isinstance(payload, SupersedePayload) else payload.id
    docno = snapshot.docno(target)
    if docno is None:
        # A reference ledger may name a trace that never existed; the importer
        # reports it, and the index has nothing to change.
        return
    if isinstance(payload, FeedbackPayload | PinPayload):
        _revise(snapshot, seq, docno, payload, dirty)
        return
    txn, dbs = snapshot.txn, snapshot.dbs
    trace = snapshot.trace_at(docno)
    if isinstance(payload, SupersedePayload):
        _set_status(snapshot, seq, docno, "superseded", dirty)
        txn.put(u32(docno), payload.new_id.encode(), db=dbs.links)
    elif isinstance(payload, FulfillPayload):
        _set_status(snapshot, seq, docno, "fulfilled", dirty)
    else:
        _set_status(snapshot, seq, docno, "purged", dirty)
        _remove_postings(snapshot, trace, docno)
        if trace.claim_key is not None:
            txn.delete(claim_key(dbs, trace.claim_key, docno), db=dbs.claim_log)
        # Nothing of its text stays in the indexes; only the ledger holds it
        # until compaction (or the vault destroys its key).
        txn.put(u32(docno), encode_trace(stub(trace.id, trace.kind, trace.created_at)), db=dbs.docs)
    _leave_active_indexes(snapshot, trace, docno)


def _add_sealed(snapshot: Snapshot, seq: int, sealed: Sealed, dirty: set[int]) -> None:
    try:
        trace = snapshot.open_sealed(sealed)
    except KeyDestroyed:
        # Replaying a trace purged since: its text is gone, its tombstone follows.
        blank = sealed.trace
        _add_stub(snapshot, seq, blank.id, blank.kind, blank.created_at, dirty)
        return
    _add(snapshot, seq, trace, encode_sealed(sealed), dirty)


def _add_stub(
    snapshot: Snapshot, seq: int, trace_id: str, kind: str, created_at: int, dirty: set[int]
) -> None:
    blank = stub(trace_id, kind, created_at)
    _add(snapshot, seq, blank, encode_trace(blank), dirty)


def _add(snapshot: Snapshot, seq: int, trace: Trace, stored: bytes, dirty: set[int]) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    docno = snapshot.next_docno()
    txn.put(_NEXT_DOC, u32(docno + 1), db=dbs.meta)
    txn.put(u32(docno), stored, db=dbs.docs)
    txn.put(trace.id.encode(), u32(docno), db=dbs.ids)

    chunk = snapshot.chunk(docno // CHUNK)
    row = chunk[docno % CHUNK]
    row["created"] = trace.created_at
    row["deadline"] = NO_DEADLINE if trace.deadline is None else trace.deadline
    row["seq_written"] = seq
    row["salience"] = trace.salience
    row["confidence"] = trace.confidence
    row["authority"] = trace.provenance.authority
    row["scope"] = _scope_id(snapshot, trace.scope)
    row["nterms"] = min(len(terms(trace.content)), 0xFFFF)
    row["kind"] = KIND_CODE[trace.kind]
    row["status"] = STATUS_CODE["active"]
    row["verified"] = trace.provenance.verified
    row["privacy"] = PRIVACY_CODE[trace.privacy]
    row["present"] = 1
    row["source"] = SOURCE_CODE[source_class(trace)]
    txn.put(u32(docno // CHUNK), chunk.tobytes(), db=dbs.features)
    dirty.add(docno // CHUNK)

    window = u32(docno // WINDOW)
    mine = np.array([docno], dtype=">u4").tobytes()
    for term in doc_terms(trace):
        key = term_key(dbs, term) + b"\x00" + window
        old = txn.get(key, db=dbs.postings)
        txn.put(key, mine if old is None else bytes(old) + mine, db=dbs.postings)

    if trace.claim_key is not None and trace.claim_value is not None:
        key = claim_key(dbs, trace.claim_key, docno)
        value = claim_value_key(dbs, trace.claim_value)
        txn.put(key, value, db=dbs.claims)
        txn.put(key, value, db=dbs.claim_log)
    if trace.kind == "commitment" and trace.deadline is not None:
        txn.put(deadline_key(trace.deadline, docno), b"", db=dbs.deadlines)


def _scope_id(snapshot: Snapshot, scope: str) -> int:
    """The number of ``scope``, given it now if it has none."""
    found = snapshot.scope_id(scope)
    if found is not None:
        return found
    new = int(snapshot.txn.stat(snapshot.dbs.scopes)["entries"]) + 1
    snapshot.txn.put(scope.encode(), u32(new), db=snapshot.dbs.scopes)
    return new


def _set_status(snapshot: Snapshot, seq: int, docno: int, status: Status, dirty: set[int]) -> None:
    _set_features(snapshot, docno, dirty, status=STATUS_CODE[status], **{f"seq_{status}": seq})


def _set_features(snapshot: Snapshot, docno: int, dirty: set[int], **values: float) -> None:
    chunk = snapshot.chunk(docno // CHUNK)
    row = chunk[docno % CHUNK]
    for name, value in values.items():
        row[name] = value
    snapshot.txn.put(u32(docno // CHUNK), chunk.tobytes(), db=snapshot.dbs.features)
    dirty.add(docno // CHUNK)


def _revise(
    snapshot: Snapshot,
    seq: int,
    docno: int,
    payload: FeedbackPayload | PinPayload,
    dirty: set[int],
) -> None:
    """A feedback or pin record: the feature it changes, and the revision kept for reads
    as of an earlier record."""
    txn, dbs = snapshot.txn, snapshot.dbs
    row = snapshot.chunk(docno // CHUNK)[docno % CHUNK]
    feedback, pinned = float(row["feedback"]), int(row["pinned"])
    if isinstance(payload, PinPayload):
        pinned = int(payload.pinned)
    else:
        raw = txn.get(u32(docno), db=dbs.feedback)
        good, bad = (0, 0) if raw is None else _COUNTS.unpack(raw)
        good, bad = (good + 1, bad) if payload.outcome == "good" else (good, bad + 1)
        txn.put(u32(docno), _COUNTS.pack(good, bad), db=dbs.feedback)
        feedback = (good - bad) / (good + bad + FEEDBACK_PRIOR)
    txn.put(revision_key(docno, seq), REVISION.pack(feedback, pinned), db=dbs.revisions)
    _set_features(snapshot, docno, dirty, feedback=feedback, pinned=pinned, seq_touched=seq)


def _leave_active_indexes(snapshot: Snapshot, trace: Trace, docno: int) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    if trace.claim_key is not None:
        txn.delete(claim_key(dbs, trace.claim_key, docno), db=dbs.claims)
    if trace.deadline is not None:
        txn.delete(deadline_key(trace.deadline, docno), db=dbs.deadlines)


def _remove_postings(snapshot: Snapshot, trace: Trace, docno: int) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    window = u32(docno // WINDOW)
    for term in doc_terms(trace):
        key = term_key(dbs, term) + b"\x00" + window
        old = txn.get(key, db=dbs.postings)
        if old is None:
            continue
        docs = np.frombuffer(old, dtype=">u4")
        kept = docs[docs != docno]
        if len(kept):
            txn.put(key, kept.tobytes(), db=dbs.postings)
        else:
            txn.delete(key, db=dbs.postings)


# --- the ledger's clock: when each record was written --------------------------------------


def _apply_clock(
    snapshot: Snapshot, seq: int, payload: Payload, plain: Trace | None, dirty: set[int]
) -> None:
    # Never decreasing, so that a time maps to one prefix of the ledger: a clock that
    # stepped back, or a record that does not say, takes its predecessor's time.
    before = snapshot.written_at(seq - 1)
    own = written_at(payload)
    at = before if own is None else max(own, before)
    snapshot.txn.put(SEQ.pack(seq), SEQ.pack(at), db=snapshot.dbs.clock)


# The trace index owns every database of hikmah.layout but meta, ledger, clock, reminders
# and keys.
_TRACE_DATABASES = (
    "docs", "ids", "features", "postings", "claims", "deadlines", "links", "scopes", "feedback",
    "revisions", "claim_log",
)  # fmt: skip
# Every derived index.
INDEXES: tuple[DerivedIndex, ...] = (
    DerivedIndex(_TRACE_DATABASES, _apply_traces),
    DerivedIndex(("clock",), _apply_clock),
)
