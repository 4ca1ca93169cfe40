"""Derived indexes over LMDB, rebuildable from the ledger.

Every structure here is a function of the ledger; :func:`apply_payload` is
the one place a ledger payload changes them, used both by live writes and by
``rebuild``. The layout keeps recall cheap as memory grows:

- ``docs``: document number (dense u32, in write order) → msgpack trace.
- ``ids``: trace id → document number.
- ``features``: chunks of :data:`CHUNK` fixed-size rows (numpy structured
  array bytes), one row per document: what scoring needs, read in bulk.
- ``postings``: ``term \\0 window`` → packed sorted u32 document numbers, one
  key per window of :data:`WINDOW` documents, so that an append rewrites at
  most one small value and a term is read with a few cursor steps. Tags are
  terms prefixed with ``\\x01``.
- ``claims``: ``normalised key \\0 docno`` → normalised value, active traces only.
- ``deadlines``: ``deadline ms (u64) docno`` → empty, active commitments only.
- ``links``: superseded docno → id of the trace that superseded it.
- ``scopes``: scope → u32 id (``global`` is 0).
- ``feedback``: docno → good and bad outcome counts (u32, u32), from
  ``feedback`` records; the ``feedback`` feature is computed from them.

``reminders`` and ``keys`` are not derived: ``reminders`` records which
reminder stages the daemon delivered, which the ledger does not know, and
``keys`` holds the vault's wrapped data keys (:mod:`hikmah.sealing`).

**Under the vault** (``Databases.vault`` set) nothing here holds a writer's
text: ``docs`` keeps the sealed trace (behind a 0x00 byte, which no msgpack
map starts with), and every term, claim key and claim value is replaced by
its blind form (an HMAC under the index key), so lookups blind the query's
terms the same way. A trace whose data key is gone is indexed as a stub.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.payloads import (
    CompactedPayload,
    FeedbackPayload,
    FulfillPayload,
    Payload,
    PinPayload,
    RedactedPayload,
    RememberPayload,
    SupersedePayload,
)
from hikmah.sealing import Keys, Sealed, blind_claim, blind_claim_value, blind_term, open_trace
from hikmah.tokenizer import terms
from hikmah.trace import Trace, normalize_claim_key, normalize_claim_value
from hikmah.vault import KeyDestroyed, VaultLocked
from hikmah.vocabulary import KINDS, PRIVACIES, STATUSES, Status

CHUNK = 256
MAX_KEY = 511  # LMDB's key size limit, in bytes
WINDOW = 4096
TAG_PREFIX = "\x01"
NO_DEADLINE = -1
GLOBAL_SCOPE_ID = 0

FEATURES = np.dtype(
    [
        ("created", "<i8"),
        ("deadline", "<i8"),
        ("salience", "<f4"),
        ("confidence", "<f4"),
        ("authority", "<f4"),
        ("feedback", "<f4"),
        ("scope", "<u4"),
        ("nterms", "<u2"),
        ("kind", "u1"),
        ("status", "u1"),
        ("verified", "u1"),
        ("privacy", "u1"),
        ("present", "u1"),
        ("pinned", "u1"),
        ("_pad", "<u4"),
    ]
)
# Bumped whenever FEATURES or a derived database changes shape: a store whose
# indexes were built with another layout rebuilds them from the ledger on open.
LAYOUT = 2
# Outcome feedback of a trace: (good - bad) / (good + bad + prior), in (-1, 1).
# The prior keeps one report from swinging it to an extreme (one good → 1/3).
FEEDBACK_PRIOR = 2
FeatureArray = npt.NDArray[np.void]
DocArray = npt.NDArray[np.uint32]

KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
STATUS_CODE: dict[str, int] = {status: code for code, status in enumerate(STATUSES)}
PRIVACY_CODE: dict[str, int] = {privacy: code for code, privacy in enumerate(PRIVACIES)}

_U32 = struct.Struct(">I")
_DEADLINE_KEY = struct.Struct(">QI")
_COUNTS = struct.Struct(">II")
_TRACE_ENCODER = msgspec.msgpack.Encoder()
_TRACE_DECODER = msgspec.msgpack.Decoder(Trace)
_SEALED_DOC = b"\x00"
_SEALED_DECODER = msgspec.msgpack.Decoder(Sealed)


@dataclass(frozen=True)
class Databases:
    """The named LMDB sub-databases of one environment."""

    meta: Any
    ledger: Any
    docs: Any
    ids: Any
    features: Any
    postings: Any
    claims: Any
    deadlines: Any
    links: Any
    scopes: Any
    feedback: Any
    # Not derived: which reminder stages were delivered (trace id \0 stage -> ms).
    reminders: Any
    # Not derived: the vault's wrapped data keys (trace id -> key id + wrapped key).
    keys: Any
    # The vault's keys when it is in use: terms are blinded, sealed docs opened.
    vault: Keys | None = None

    @staticmethod
    def names() -> list[str]:
        """The names of the LMDB databases (every field but ``vault``)."""
        return [field.name for field in fields(Databases) if field.name != "vault"]

    def derived(self) -> Iterator[Any]:
        """Every database that a rebuild recreates from the ledger."""
        yield from (
            self.docs,
            self.ids,
            self.features,
            self.postings,
            self.claims,
            self.deadlines,
            self.links,
            self.scopes,
            self.feedback,
        )


def stub(trace_id: str, kind: str, created_at: int) -> Trace:
    """A purged trace as the indexes keep it: its id, kind and time, no text."""
    return Trace(id=trace_id, kind=kind, content="", created_at=created_at)  # type: ignore[arg-type]


def u32(value: int) -> bytes:
    return _U32.pack(value)


def deadline_key(deadline: int, docno: int) -> bytes:
    return _DEADLINE_KEY.pack(deadline, docno)


def split_deadline_key(key: bytes) -> tuple[int, int]:
    deadline, docno = _DEADLINE_KEY.unpack(key)
    return int(deadline), int(docno)


def encode_trace(trace: Trace) -> bytes:
    return _TRACE_ENCODER.encode(trace)


def decode_trace(data: bytes) -> Trace:
    return _TRACE_DECODER.decode(data)


def docno_of(txn: Any, dbs: Databases, trace_id: str) -> int | None:
    key = trace_id.encode()
    if not 0 < len(key) <= MAX_KEY:
        return None  # no id can be empty or that long
    raw = txn.get(key, db=dbs.ids)
    return None if raw is None else int(_U32.unpack(raw)[0])


def trace_at(txn: Any, dbs: Databases, docno: int) -> Trace:
    return load_trace(txn, dbs, bytes(txn.get(u32(docno), db=dbs.docs)))


def bare_trace_at(txn: Any, dbs: Databases, docno: int) -> Trace:
    """The trace at ``docno`` without its writer's text when it is sealed: for ids,
    kinds and times, which need no decryption."""
    doc = _decode_doc(bytes(txn.get(u32(docno), db=dbs.docs)))
    return doc.trace if isinstance(doc, Sealed) else doc


def load_trace(txn: Any, dbs: Databases, stored: bytes) -> Trace:
    """The trace a ``docs`` value holds, opened when it is sealed."""
    doc = _decode_doc(stored)
    return open_sealed(txn, dbs, doc) if isinstance(doc, Sealed) else doc


def _decode_doc(stored: bytes) -> Trace | Sealed:
    if stored[:1] == _SEALED_DOC:
        return _SEALED_DECODER.decode(stored[1:])
    return decode_trace(stored)


def open_sealed(txn: Any, dbs: Databases, sealed: Sealed) -> Trace:
    """The plaintext of a sealed trace.

    Raises:
        KeyDestroyed: its data key was destroyed (purged).
        VaultLocked: the vault's keys were not given to the store.
        DecryptionFailed: the stored key or text does not open.
    """
    trace_id = sealed.trace.id
    entry = txn.get(trace_id.encode(), db=dbs.keys)
    if entry is None:
        raise KeyDestroyed(f"the data key of {trace_id} was destroyed; its text is gone")
    if dbs.vault is None:
        raise VaultLocked(
            f"{trace_id} is encrypted and the vault is off: set [vault] enabled = true in the"
            " policy and restart hikmahd with the keyring that holds its keys"
        )
    return open_trace(dbs.vault, sealed, bytes(entry))


def read_chunk(txn: Any, dbs: Databases, chunk: int) -> FeatureArray:
    """The feature rows of one chunk (a writable copy), zeroed where never written."""
    raw = txn.get(u32(chunk), db=dbs.features)
    if raw is None:
        return np.zeros(CHUNK, dtype=FEATURES)
    return np.frombuffer(raw, dtype=FEATURES).copy()


def status_of(txn: Any, dbs: Databases, docno: int) -> Status:
    raw = txn.get(u32(docno // CHUNK), db=dbs.features)
    row = np.frombuffer(raw, dtype=FEATURES, count=1, offset=(docno % CHUNK) * FEATURES.itemsize)
    status: Status = STATUSES[int(row["status"][0])]
    return status


def successor(txn: Any, dbs: Databases, docno: int) -> str | None:
    """The id of the trace that superseded this document, if any."""
    link = txn.get(u32(docno), db=dbs.links)
    return None if link is None else bytes(link).decode()


def term_key(dbs: Databases, term: str) -> bytes:
    """How the postings database spells ``term`` (blind under the vault)."""
    return (term if dbs.vault is None else blind_term(dbs.vault, term)).encode()


def postings(txn: Any, dbs: Databases, term: str) -> DocArray:
    """Every document number holding ``term``, ascending."""
    prefix = term_key(dbs, term) + b"\x00"
    if len(prefix) + 4 > MAX_KEY:
        return np.zeros(0, dtype=np.uint32)  # never indexed (see doc_terms)
    cursor = txn.cursor(db=dbs.postings)
    parts: list[DocArray] = []
    if cursor.set_range(prefix):
        for key, value in cursor:
            if not key.startswith(prefix):
                break
            parts.append(np.frombuffer(value, dtype=">u4"))
    if not parts:
        return np.empty(0, dtype=np.uint32)
    return np.concatenate(parts).astype(np.uint32)


def doc_terms(trace: Trace) -> list[str]:
    """The index terms of a trace: its content terms and its tags.

    A term too long for an LMDB key (a 500-letter "word" is pasted data, not a
    word) is left out of the index; the text keeps it.
    """
    found = [*terms(trace.content), *(TAG_PREFIX + tag for tag in trace.tags)]
    return [term for term in found if len(term.encode()) + 5 <= MAX_KEY]


def scope_id(txn: Any, dbs: Databases, scope: str, *, create: bool) -> int | None:
    if scope == "global":
        return GLOBAL_SCOPE_ID
    if not 0 < len(scope.encode()) <= MAX_KEY:
        return None  # the write rules never let such a scope in
    raw = txn.get(scope.encode(), db=dbs.scopes)
    if raw is not None:
        return int(_U32.unpack(raw)[0])
    if not create:
        return None
    new = int(txn.stat(dbs.scopes)["entries"]) + 1
    txn.put(scope.encode(), u32(new), db=dbs.scopes)
    return new


def next_docno(txn: Any, dbs: Databases) -> int:
    raw = txn.get(b"next_doc", db=dbs.meta)
    return 0 if raw is None else int(_U32.unpack(raw)[0])


def apply_payload(
    txn: Any, dbs: Databases, payload: Payload, dirty: set[int], *, plain: Trace | None = None
) -> None:
    """Make the derived indexes reflect one more ledger record.

    Args:
        txn: an open write transaction.
        dbs: the databases.
        payload: the record's decoded payload.
        dirty: collects the feature chunks this changed (for caches).
        plain: for a live write of a sealed trace, the trace it sealed (saves
            opening it again).
    """
    if isinstance(payload, RememberPayload):
        _add(txn, dbs, payload.trace, encode_trace(payload.trace), dirty)
        return
    if isinstance(payload, Sealed):
        if plain is None:
            _add_sealed(txn, dbs, payload, dirty)
        else:
            _add(txn, dbs, plain, encode_sealed(payload), dirty)
        return
    if isinstance(payload, RedactedPayload):
        _add_stub(txn, dbs, payload.id, payload.kind, payload.created_at, dirty)
        return
    if isinstance(payload, CompactedPayload):
        return
    target = payload.old_id if isinstance(payload, SupersedePayload) else payload.id
    docno = docno_of(txn, dbs, target)
    if docno is None:
        # A reference ledger may name a trace that never existed; the importer
        # reports it, and the index has nothing to change.
        return
    if isinstance(payload, FeedbackPayload):
        _add_feedback(txn, dbs, docno, payload.outcome, dirty)
        return
    if isinstance(payload, PinPayload):
        _set_feature(txn, dbs, docno, "pinned", int(payload.pinned), dirty)
        return
    trace = trace_at(txn, dbs, docno)
    if isinstance(payload, SupersedePayload):
        _set_status(txn, dbs, docno, "superseded", dirty)
        txn.put(u32(docno), payload.new_id.encode(), db=dbs.links)
    elif isinstance(payload, FulfillPayload):
        _set_status(txn, dbs, docno, "fulfilled", dirty)
    else:
        _set_status(txn, dbs, docno, "purged", dirty)
        _remove_postings(txn, dbs, trace, docno)
        # Nothing of its text stays in the indexes; only the ledger holds it
        # until compaction (or the vault destroys its key).
        txn.put(u32(docno), encode_trace(stub(trace.id, trace.kind, trace.created_at)), db=dbs.docs)
    _leave_active_indexes(txn, dbs, trace, docno)


def encode_sealed(sealed: Sealed) -> bytes:
    return _SEALED_DOC + _TRACE_ENCODER.encode(sealed)


def _add_sealed(txn: Any, dbs: Databases, sealed: Sealed, dirty: set[int]) -> None:
    try:
        trace = open_sealed(txn, dbs, sealed)
    except KeyDestroyed:
        # Replaying a trace purged since: its text is gone, its tombstone follows.
        blank = sealed.trace
        _add_stub(txn, dbs, blank.id, blank.kind, blank.created_at, dirty)
        return
    _add(txn, dbs, trace, encode_sealed(sealed), dirty)


def _add_stub(
    txn: Any, dbs: Databases, trace_id: str, kind: str, created_at: int, dirty: set[int]
) -> None:
    blank = stub(trace_id, kind, created_at)
    _add(txn, dbs, blank, encode_trace(blank), dirty)


def _add(txn: Any, dbs: Databases, trace: Trace, stored: bytes, dirty: set[int]) -> None:
    docno = next_docno(txn, dbs)
    txn.put(b"next_doc", u32(docno + 1), db=dbs.meta)
    txn.put(u32(docno), stored, db=dbs.docs)
    txn.put(trace.id.encode(), u32(docno), db=dbs.ids)

    chunk = read_chunk(txn, dbs, docno // CHUNK)
    row = chunk[docno % CHUNK]
    row["created"] = trace.created_at
    row["deadline"] = NO_DEADLINE if trace.deadline is None else trace.deadline
    row["salience"] = trace.salience
    row["confidence"] = trace.confidence
    row["authority"] = trace.provenance.authority
    row["scope"] = scope_id(txn, dbs, trace.scope, create=True)
    row["nterms"] = min(len(terms(trace.content)), 0xFFFF)
    row["kind"] = KIND_CODE[trace.kind]
    row["status"] = STATUS_CODE["active"]
    row["verified"] = trace.provenance.verified
    row["privacy"] = PRIVACY_CODE[trace.privacy]
    row["present"] = 1
    txn.put(u32(docno // CHUNK), chunk.tobytes(), db=dbs.features)
    dirty.add(docno // CHUNK)

    window = u32(docno // WINDOW)
    mine = np.array([docno], dtype=">u4").tobytes()
    for term in doc_terms(trace):
        key = term_key(dbs, term) + b"\x00" + window
        old = txn.get(key, db=dbs.postings)
        txn.put(key, mine if old is None else bytes(old) + mine, db=dbs.postings)

    if trace.claim_key is not None and trace.claim_value is not None:
        txn.put(
            _claim_key(dbs, trace.claim_key, docno),
            claim_value_key(dbs, trace.claim_value),
            db=dbs.claims,
        )
    if trace.kind == "commitment" and trace.deadline is not None:
        txn.put(deadline_key(trace.deadline, docno), b"", db=dbs.deadlines)


def _set_status(txn: Any, dbs: Databases, docno: int, status: Status, dirty: set[int]) -> None:
    _set_feature(txn, dbs, docno, "status", STATUS_CODE[status], dirty)


def _set_feature(
    txn: Any, dbs: Databases, docno: int, name: str, value: float, dirty: set[int]
) -> None:
    chunk = read_chunk(txn, dbs, docno // CHUNK)
    chunk[docno % CHUNK][name] = value
    txn.put(u32(docno // CHUNK), chunk.tobytes(), db=dbs.features)
    dirty.add(docno // CHUNK)


def feedback_counts(txn: Any, dbs: Databases, docno: int) -> tuple[int, int]:
    """How many good and bad outcomes were reported for a document."""
    raw = txn.get(u32(docno), db=dbs.feedback)
    return (0, 0) if raw is None else _COUNTS.unpack(raw)


def _add_feedback(txn: Any, dbs: Databases, docno: int, outcome: str, dirty: set[int]) -> None:
    good, bad = feedback_counts(txn, dbs, docno)
    good, bad = (good + 1, bad) if outcome == "good" else (good, bad + 1)
    txn.put(u32(docno), _COUNTS.pack(good, bad), db=dbs.feedback)
    term = (good - bad) / (good + bad + FEEDBACK_PRIOR)
    _set_feature(txn, dbs, docno, "feedback", term, dirty)


def _leave_active_indexes(txn: Any, dbs: Databases, trace: Trace, docno: int) -> None:
    if trace.claim_key is not None:
        txn.delete(_claim_key(dbs, trace.claim_key, docno), db=dbs.claims)
    if trace.deadline is not None:
        txn.delete(deadline_key(trace.deadline, docno), db=dbs.deadlines)


def _remove_postings(txn: Any, dbs: Databases, trace: Trace, docno: int) -> None:
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


def _claim_name(dbs: Databases, key: str) -> bytes:
    name = normalize_claim_key(key)
    return (name if dbs.vault is None else blind_claim(dbs.vault, name)).encode()


def _claim_key(dbs: Databases, key: str, docno: int) -> bytes:
    return _claim_name(dbs, key) + b"\x00" + u32(docno)


def claim_value_key(dbs: Databases, value: str) -> bytes:
    """How the claims database spells a claim value (blind under the vault)."""
    normal = normalize_claim_value(value)
    return (normal if dbs.vault is None else blind_claim_value(dbs.vault, normal)).encode()


def claim_entries(
    txn: Any, dbs: Databases, key: str | None = None
) -> Iterable[tuple[bytes, int, bytes]]:
    """(key, docno, value) of active claims, for one key or all, as the claims
    database spells them (normalised, or blind under the vault): compare them,
    and read the trace for the text."""
    prefix = b"" if key is None else _claim_name(dbs, key) + b"\x00"
    cursor = txn.cursor(db=dbs.claims)
    if not cursor.set_range(prefix):
        return
    for raw_key, value in cursor:
        if not raw_key.startswith(prefix):
            break
        name, docno = raw_key[:-5], _U32.unpack(raw_key[-4:])[0]
        yield bytes(name), int(docno), bytes(value)
