"""The derived indexes: how each record changes them, registered in one place.

Every derived database (:mod:`hikmah.index.layout`) is a function of the records
(this device's ledger and the chains of the devices it syncs with):
:func:`apply_payload` is the one place a payload changes them, used by live
writes, by other devices' records and by rebuilding alike, and :data:`INDEXES` lists
every derived index with the databases it owns, so that a rebuild knows what
to empty. A new derived index (say, vectors for a semantic channel) is one
more entry there: its databases and its ``apply``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from hikmah.index import fates
from hikmah.index.layout import (
    CHUNK,
    FEATURES,
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
from hikmah.index.review import screened
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.payloads import (
    Payload,
    RedactedPayload,
    Remembering,
    RememberPayload,
    TracePayload,
    written_at,
)
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Trace, source_class
from hikmah.model.vocabulary import Status
from hikmah.sync.merge import Feedback, Pinned, RecordId
from hikmah.vault.crypto import KeyDestroyed
from hikmah.vault.sealing import Sealed

# Outcome feedback of a trace: (good - bad) / (good + bad + prior), in (-1, 1).
# The prior keeps one report from swinging it to an extreme (one good → 1/3).
FEEDBACK_PRIOR = 2
_COUNTS = struct.Struct(">II")
_NEXT_DOC = b"next_doc"  # meta: the next document number


class DerivedIndex(NamedTuple):
    """Databases rebuilt from the records, and how one record changes them.

    ``apply(snapshot, seq, payload, plain, dirty, at)`` runs in the write
    transaction of ``snapshot`` for a record that counts from this ledger's
    record ``seq`` (its own, or, for a paired device's record, the next of
    this ledger after it arrived: what reads as of the past go by); ``plain``
    is the trace a live write sealed (None on replay), ``dirty`` collects the
    feature chunks it changed, and ``at`` names the record: this device's
    ledger (:data:`hikmah.index.fates.LOCAL`) or a paired device's chain, and its seq
    there. Records arrive from several chains in any order, so what an index
    derives must not depend on that order (docs/sync.md, "Merge").
    """

    databases: tuple[str, ...]
    apply: Callable[[Snapshot, int, Payload, Trace | None, set[int], RecordId], None]


def apply_payload(
    snapshot: Snapshot,
    seq: int,
    payload: Payload,
    dirty: set[int],
    *,
    at: RecordId | None = None,
    plain: Trace | None = None,
) -> None:
    """Make every derived index reflect one more record, of this device's ledger or of a
    paired device's chain.

    Args:
        snapshot: a snapshot of an open write transaction.
        seq: the record of this ledger it counts from (its own sequence number).
        payload: the record's decoded payload.
        dirty: collects the feature chunks this changed (for the column cache).
        at: where the record was written, when not this ledger's record ``seq``
            (the line is already stored there).
        plain: for a live write of a sealed trace, the trace it sealed (saves
            opening it again).
    """
    where = RecordId(fates.LOCAL, seq) if at is None else at
    for derived in INDEXES:
        derived.apply(snapshot, seq, payload, plain, dirty, where)


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
    return _index_terms(terms(trace.content), trace.tags)


def _index_terms(words: Iterable[str], tags: Iterable[str]) -> list[str]:
    """:func:`doc_terms` of a trace whose content has the terms ``words``."""
    found = [*words, *(TAG_PREFIX + tag for tag in tags)]
    return [t for t in found if len(t) <= _ALWAYS_FITS or len(t.encode()) + 5 <= MAX_KEY]


# A term of at most this many characters fits a key whatever they are (UTF-8 spends at
# most four bytes on one): only a longer one is encoded to be measured.
_ALWAYS_FITS = (MAX_KEY - 5) // 4


# --- the trace index: documents, features, postings, claims, deadlines, links ------------


class _Arrival(NamedTuple):
    """A remember record as it arrives: its payload, where it was written, and for a
    live write of a sealed trace the trace it sealed."""

    payload: Remembering
    at: RecordId
    plain: Trace | None
    seq: int  # the record of this ledger it counts from

    @property
    def trace_id(self) -> str:
        payload = self.payload
        return payload.id if isinstance(payload, RedactedPayload) else payload.trace.id


def _apply_traces(
    snapshot: Snapshot,
    seq: int,
    payload: Payload,
    plain: Trace | None,
    dirty: set[int],
    at: RecordId,
) -> None:
    if isinstance(payload, Remembering):
        _remember(snapshot, _Arrival(payload, at, plain, seq), dirty)
    elif isinstance(payload, TracePayload):
        _fact(snapshot, seq, payload, dirty, at)
    # A compaction's last record, the roster's and presence's records change no trace
    # (presence is the store's own state: hikmah.access.presence).


def _remember(snapshot: Snapshot, arrival: _Arrival, dirty: set[int]) -> None:
    trace_id = arrival.trace_id
    docno = snapshot.docno(trace_id)
    if docno is not None:
        _rival(snapshot, arrival, docno, dirty)
        return
    docno = snapshot.next_docno()
    snapshot.txn.put(_NEXT_DOC, u32(docno + 1), db=snapshot.dbs.meta)
    _write_doc(snapshot, docno, arrival, dirty)
    fates.set_origin(snapshot, docno, arrival.at)
    waiting = fates.take_feedback(snapshot, trace_id)
    for feedback in waiting:
        _add_feedback(snapshot, docno, feedback.good, dirty)
    if isinstance(arrival.payload, RedactedPayload) or fates.stored(snapshot, trace_id):
        _settle(snapshot, arrival.seq, trace_id, docno, dirty)
    if waiting or fates.stored(snapshot, trace_id):
        _revise(snapshot, arrival.seq, docno, dirty)


def _rival(snapshot: Snapshot, arrival: _Arrival, docno: int, dirty: set[int]) -> None:
    """A second remember of an id: identical bytes are one trace; otherwise the record
    with the lowest (device, seq) is the trace, everywhere, and the other is a rival.
    The record already applied again (a compaction redacted it) folds anew."""
    at, kept = arrival.at, fates.origin(snapshot, docno)
    trace_id = arrival.trace_id
    new_wins = fates.resolve(snapshot, at) < fates.resolve(snapshot, kept)
    digest = fates.digest(snapshot, at)
    if at != kept and digest and digest == fates.digest(snapshot, kept):
        if new_wins:  # which device it came from, decided like a rival
            fates.set_origin(snapshot, docno, at)
        return
    if at != kept:
        loser = kept if new_wins else at
        fates.add(snapshot, fates.remembered(snapshot, trace_id, loser))
    if new_wins:
        old = snapshot.trace_at(docno)
        status = snapshot.status_of(docno)
        if status != "purged":
            _remove_postings(snapshot, old, docno)
        if status == "active":
            _leave_active_indexes(snapshot, old, docno)
        _write_doc(snapshot, docno, arrival, dirty)
        fates.set_origin(snapshot, docno, at)
    _settle(snapshot, arrival.seq, trace_id, docno, dirty)


def _fact(
    snapshot: Snapshot, seq: int, payload: TracePayload, dirty: set[int], at: RecordId
) -> None:
    fact = fates.fact_for(snapshot, payload, at)
    docno = snapshot.docno(fact.trace)
    if isinstance(fact, Feedback) and docno is not None:
        _add_feedback(snapshot, docno, fact.good, dirty)
        _revise(snapshot, seq, docno, dirty)
        return
    # Kept even when the trace is here: its state is a function of all its facts.
    fates.add(snapshot, fact)
    if docno is not None:
        _settle(snapshot, seq, fact.trace, docno, dirty)
        if isinstance(fact, Pinned):
            _revise(snapshot, seq, docno, dirty)


def _settle(snapshot: Snapshot, seq: int, trace_id: str, docno: int, dirty: set[int]) -> None:
    """Give the document the status, successor and pin its facts fold to (a change of
    status counting from this ledger's record ``seq``)."""
    txn, dbs = snapshot.txn, snapshot.dbs
    fate = fates.fold(snapshot, trace_id, docno)
    old = snapshot.status_of(docno)
    if fate.status != old:
        # Facts only accumulate, and every status outranks the ones it replaces
        # (a rival that wins is written afresh as active first), so a trace
        # only ever leaves the active indexes, and a purge is final.
        trace = snapshot.trace_at(docno)
        if old == "active":
            _leave_active_indexes(snapshot, trace, docno)
        if fate.status == "purged":
            _remove_postings(snapshot, trace, docno)
            if trace.claim_key is not None:
                txn.delete(claim_key(dbs, trace.claim_key, docno), db=dbs.claim_log)
            # Nothing of its text stays in the indexes; only the ledger holds it
            # until compaction (or the vault destroys its key).
            blank = stub(trace.id, trace.kind, trace.created_at)
            txn.put(u32(docno), encode_trace(blank), db=dbs.docs)
            snapshot.wrote(docno, blank)
            _set_features(snapshot, docno, dirty, nterms=0)  # as its stub has
        _set_status(snapshot, seq, docno, fate.status, dirty)
    successor = fate.successors[0].encode() if fate.successors else None
    if successor != snapshot.txn.get(u32(docno), db=dbs.links):
        if successor is None:
            txn.delete(u32(docno), db=dbs.links)
        else:
            txn.put(u32(docno), successor, db=dbs.links)
    pinned = int(fate.pinned)
    if int(snapshot.chunk(docno // CHUNK)[docno % CHUNK]["pinned"]) != pinned:
        _set_features(snapshot, docno, dirty, pinned=pinned)


def _write_doc(snapshot: Snapshot, docno: int, arrival: _Arrival, dirty: set[int]) -> None:
    """Index the trace a remember record holds at ``docno``, active (a document rewritten
    by a rival keeps the record it was first written at: documents stay in that order)."""
    row = snapshot.chunk(docno // CHUNK)[docno % CHUNK]
    seq = int(row["seq_written"]) if row["present"] else arrival.seq
    payload = arrival.payload
    if isinstance(payload, RememberPayload):
        _add(snapshot, docno, seq, payload.trace, encode_trace(payload.trace), dirty)
    elif isinstance(payload, RedactedPayload):
        _add_stub(snapshot, docno, seq, payload.id, payload.kind, payload.created_at, dirty)
    elif arrival.plain is not None:
        _add(snapshot, docno, seq, arrival.plain, encode_sealed(payload), dirty)
    else:
        _add_sealed(snapshot, docno, seq, payload, dirty)


def _add_sealed(snapshot: Snapshot, docno: int, seq: int, sealed: Sealed, dirty: set[int]) -> None:
    blank = sealed.trace
    try:
        trace = snapshot.open_sealed(sealed)
    except KeyDestroyed:
        # Replaying a trace purged since (its tombstone follows), or another
        # device's sealed trace on a device without the vault, which has no
        # key to open it: indexed without its text, and hidden when unreadable.
        readable = snapshot.dbs.vault is not None
        _add_stub(snapshot, docno, seq, blank.id, blank.kind, blank.created_at, dirty, readable)
        return
    _add(snapshot, docno, seq, trace, encode_sealed(sealed), dirty)


def _add_stub(
    snapshot: Snapshot,
    docno: int,
    seq: int,
    trace_id: str,
    kind: str,
    created_at: int,
    dirty: set[int],
    present: bool = True,
) -> None:
    blank = stub(trace_id, kind, created_at)
    _add(snapshot, docno, seq, blank, encode_trace(blank), dirty, present)


def _add(
    snapshot: Snapshot,
    docno: int,
    seq: int,
    trace: Trace,
    stored: bytes,
    dirty: set[int],
    present: bool = True,
) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    txn.put(u32(docno), stored, db=dbs.docs)
    txn.put(trace.id.encode(), u32(docno), db=dbs.ids)
    snapshot.wrote(docno, trace)

    words = terms(trace.content)
    _set_features(
        snapshot,
        docno,
        dirty,
        created=trace.created_at,
        deadline=NO_DEADLINE if trace.deadline is None else trace.deadline,
        seq_written=seq,
        salience=trace.salience,
        confidence=trace.confidence,
        authority=trace.provenance.authority,
        scope=_scope_id(snapshot, trace.scope),
        nterms=min(len(words), 0xFFFF),
        kind=KIND_CODE[trace.kind],
        status=STATUS_CODE["active"],
        verified=trace.provenance.verified,
        privacy=PRIVACY_CODE[trace.privacy],
        present=int(present),
        source=SOURCE_CODE[source_class(trace)],
        screened=screened(trace),
    )

    window = b"\x00" + u32(docno // WINDOW)
    keys = [term_key(dbs, term) + window for term in _index_terms(words, trace.tags)]
    snapshot.append_postings(keys, u32(docno))

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


_FIELD = {name: number for number, name in enumerate(FEATURES.names or ())}


def _set_features(snapshot: Snapshot, docno: int, dirty: set[int], **values: float) -> None:
    chunk = snapshot.chunk(docno // CHUNK)
    # The row is assigned whole, once: setting a field of a structured row costs about a
    # microsecond each, and a new document sets fifteen.
    row = list(chunk[docno % CHUNK].tolist())
    for name, value in values.items():
        row[_FIELD[name]] = value
    chunk[docno % CHUNK] = tuple(row)
    snapshot.put_chunk(docno // CHUNK, chunk)
    dirty.add(docno // CHUNK)


def _revise(snapshot: Snapshot, seq: int, docno: int, dirty: set[int]) -> None:
    """After a feedback or pin record: the revision kept for reads as of an earlier record
    (the ``feedback`` and ``pinned`` features from this ledger's record ``seq`` on)."""
    row = snapshot.chunk(docno // CHUNK)[docno % CHUNK]
    revision = REVISION.pack(float(row["feedback"]), int(row["pinned"]))
    snapshot.txn.put(revision_key(docno, seq), revision, db=snapshot.dbs.revisions)
    _set_features(snapshot, docno, dirty, seq_touched=seq)


def _add_feedback(snapshot: Snapshot, docno: int, is_good: bool, dirty: set[int]) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    raw = txn.get(u32(docno), db=dbs.feedback)
    good, bad = (0, 0) if raw is None else _COUNTS.unpack(raw)
    good, bad = (good + 1, bad) if is_good else (good, bad + 1)
    txn.put(u32(docno), _COUNTS.pack(good, bad), db=dbs.feedback)
    term = (good - bad) / (good + bad + FEEDBACK_PRIOR)
    _set_features(snapshot, docno, dirty, feedback=term)


def _leave_active_indexes(snapshot: Snapshot, trace: Trace, docno: int) -> None:
    txn, dbs = snapshot.txn, snapshot.dbs
    if trace.claim_key is not None:
        txn.delete(claim_key(dbs, trace.claim_key, docno), db=dbs.claims)
    if trace.deadline is not None:
        txn.delete(deadline_key(trace.deadline, docno), db=dbs.deadlines)


def _remove_postings(snapshot: Snapshot, trace: Trace, docno: int) -> None:
    snapshot.write_back()  # the lists as this batch left them so far
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
    snapshot: Snapshot,
    seq: int,
    payload: Payload,
    plain: Trace | None,
    dirty: set[int],
    at: RecordId,
) -> None:
    if at.device != fates.LOCAL:
        return  # this ledger's clock: another device's record counts from one of its records
    # Never decreasing, so that a time maps to one prefix of the ledger: a clock that
    # stepped back, or a record that does not say, takes its predecessor's time.
    before = snapshot.written_at(seq - 1)
    own = written_at(payload)
    when = before if own is None else max(own, before)
    snapshot.txn.put(SEQ.pack(seq), SEQ.pack(when), db=snapshot.dbs.clock)


# The trace index owns every database of hikmah.index.layout but meta, ledger, clock, reminders,
# keys, chains, peers and arrivals.
_TRACE_DATABASES = (
    "docs", "ids", "features", "postings", "claims", "deadlines", "links", "scopes", "feedback",
    "revisions", "claim_log", "fates", "origins",
)  # fmt: skip
# Every derived index.
INDEXES: tuple[DerivedIndex, ...] = (
    DerivedIndex(_TRACE_DATABASES, _apply_traces),
    DerivedIndex(("clock",), _apply_clock),
)
