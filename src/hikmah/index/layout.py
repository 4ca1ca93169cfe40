"""How the store lays memory out in LMDB: the named databases, their keys and values.

The ledger is the source of truth; every other database but two is a derived
index, a function of the ledger (:mod:`hikmah.index.derived` writes them,
:mod:`hikmah.index.snapshot` reads them). The layout keeps recall cheap as memory
grows:

- ``ledger``: sequence number (big-endian u64) → record line (:mod:`hikmah.ledger.chain`).
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

- ``fates``: trace id → what records other than its remember say about it
  (supersessions, fulfilments, purges, pins, rival remembers: the facts of
  :mod:`hikmah.sync.merge`, as one msgpack list), including facts about a
  trace not seen yet, which wait for it (:mod:`hikmah.index.fates`).
- ``origins``: docno → the record that remembered the trace
  (:func:`chain_key` of its device, ``""`` for this one, and its seq).

What reads as of a point in the past need (:mod:`hikmah.index.past`):

- the ``seq_*`` features: the ledger sequence number of the record that wrote
  the document, and of those that superseded, fulfilled and purged it, and of
  the last feedback or pin on it (0: none), so the state of any candidate as
  of any record is a comparison, not a replay (a paired device's record counts
  from the next record of this ledger after it arrived: ``arrivals``);
- ``clock``: seq → when the record was written (epoch ms, u64 each), never
  decreasing along the ledger (:func:`hikmah.ledger.payloads.written_at`; a record
  that does not say takes its predecessor's time);
- ``revisions``: ``docno seq`` (u32, u64) → the ``feedback`` and ``pinned``
  features after a feedback or pin record (f32, u8);
- ``claim_log``: as ``claims``, but a claim stays when its trace is
  superseded or fulfilled (only a purge takes it out, with the text).

``reminders`` and ``keys`` are not derived: ``reminders`` records which
reminder stages the daemon delivered, which the ledger does not know, and
``keys`` holds the vault's wrapped data keys (:mod:`hikmah.vault.sealing`). Nor are
the two databases of sync (docs/sync.md, :mod:`hikmah.index.replicas`):

- ``chains``: :func:`chain_key` (device id ‖ seq) → a paired device's record
  line exactly as it published it, or, once the trace it remembers is
  purged, a redaction (:data:`REDACTED` and the hashes that keep the chain
  verifiable): the source of truth of what other devices wrote.
- ``peers``: device id → what this device keeps about a paired device
  (its key, name, how far its chain is applied).
- ``arrivals``: :func:`chain_key` → when a paired device's record arrived
  here: the next record of this ledger then, and a count of arrivals (u64,
  u64), so that a rebuild replays every chain in the order it came.

**Under the vault** (``Databases.vault`` set) nothing here holds a writer's
text: ``docs`` keeps the sealed trace (behind a 0x00 byte, which no msgpack
map starts with), and every term, claim key and claim value is replaced by
its blind form (an HMAC under the index key), so lookups blind the query's
terms the same way. A trace whose data key is gone is indexed as a stub.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.model.trace import Trace, normalize_claim_key, normalize_claim_value
from hikmah.model.vocabulary import KINDS, PRIVACIES, SOURCE_CLASSES, STATUSES
from hikmah.vault.sealing import Keys, Sealed, blind_claim, blind_claim_value, blind_term

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
        ("seq_written", "<u8"),
        ("seq_superseded", "<u8"),
        ("seq_fulfilled", "<u8"),
        ("seq_purged", "<u8"),
        ("seq_touched", "<u8"),
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
        ("source", "u1"),  # SOURCE_CODE of hikmah.model.trace.source_class
        ("screened", "u1"),  # an agent's trace the screen quarantines (hikmah.index.review)
        ("_pad", "<u1", (2,)),
    ]
)
# Bumped whenever FEATURES or a derived database changes shape: a store whose
# indexes were built with another layout rebuilds them from the ledger on open.
LAYOUT = 5
FeatureArray = npt.NDArray[np.void]
DocArray = npt.NDArray[np.uint32]

KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
STATUS_CODE: dict[str, int] = {status: code for code, status in enumerate(STATUSES)}
PRIVACY_CODE: dict[str, int] = {privacy: code for code, privacy in enumerate(PRIVACIES)}
SOURCE_CODE: dict[str, int] = {source: code for code, source in enumerate(SOURCE_CLASSES)}

SEQ = struct.Struct(">Q")  # ledger keys, and the store's meta values
INDEX_VERSION = b"index_version"  # meta: commits that changed the derived indexes
SEALED_MARK = b"sealed"  # meta: some trace was sealed: the store never opens without its keys
DEVICE_ID = b"sync_device"  # meta: this device's id, once it syncs (docs/sync.md)
_U32 = struct.Struct(">I")
_DEADLINE_KEY = struct.Struct(">QI")
_REVISION_KEY = struct.Struct(">IQ")
REVISION = struct.Struct("<fB")  # the feedback and pinned features after a record
ARRIVAL = struct.Struct(">QQ")  # the local seq a paired device's record counts from, its count
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
    clock: Any
    revisions: Any
    claim_log: Any
    # Not derived: which reminder stages were delivered (trace id \0 stage -> ms).
    reminders: Any
    # Not derived: the vault's wrapped data keys (trace id -> key id + wrapped key).
    keys: Any
    # Not derived: paired devices' records as published (chain_key -> line or redaction).
    chains: Any
    # Not derived: the paired devices (device id -> hikmah.index.replicas.Paired).
    peers: Any
    # Not derived: when each of those records arrived (chain_key -> ARRIVAL).
    arrivals: Any
    # Derived: the facts about each trace besides its remember (trace id -> msgpack facts).
    fates: Any
    # Derived: where each document's remember was written (docno -> chain_key).
    origins: Any
    # The vault's keys when it is in use: terms are blinded, sealed docs opened.
    vault: Keys | None = None

    @staticmethod
    def names() -> list[str]:
        """The names of the LMDB databases (every field but ``vault``)."""
        return [field.name for field in fields(Databases) if field.name != "vault"]


def stub(trace_id: str, kind: str, created_at: int) -> Trace:
    """A purged trace as the indexes keep it: its id, kind and time, no text."""
    return Trace(id=trace_id, kind=kind, content="", created_at=created_at)  # type: ignore[arg-type]


def u32(value: int) -> bytes:
    return _U32.pack(value)


def unpack_u32(raw: bytes) -> int:
    return int(_U32.unpack(raw)[0])


def deadline_key(deadline: int, docno: int) -> bytes:
    return _DEADLINE_KEY.pack(deadline, docno)


def split_deadline_key(key: bytes) -> tuple[int, int]:
    deadline, docno = _DEADLINE_KEY.unpack(key)
    return int(deadline), int(docno)


def chain_key(device: str, seq: int) -> bytes:
    """Where a record of ``device``'s chain is kept (``""``: this device's own ledger)."""
    return device.encode() + SEQ.pack(seq)


def split_chain_key(key: bytes) -> tuple[str, int]:
    return key[:-8].decode(), int(SEQ.unpack(key[-8:])[0])


# A chain record whose remembered trace was purged: this byte, then a Redaction.
REDACTED = b"\x00"


class Redaction(msgspec.Struct, frozen=True, array_like=True):
    """What a purge leaves of a paired device's remember record: the hashes that keep
    its chain verifiable, and the trace's id, kind and time (its stub)."""

    prev_hash: str
    hash: str
    id: str
    kind: str
    created_at: int


_REDACTION_DECODER = msgspec.json.Decoder(Redaction)


def encode_redaction(redaction: Redaction) -> bytes:
    return REDACTED + msgspec.json.encode(redaction)


def decode_redaction(stored: bytes) -> Redaction | None:
    """The redaction a ``chains`` value holds, or None when it holds the record's line."""
    if stored[:1] != REDACTED:
        return None
    return _REDACTION_DECODER.decode(stored[1:])


def revision_key(docno: int, seq: int) -> bytes:
    return _REVISION_KEY.pack(docno, seq)


def split_revision_key(key: bytes) -> tuple[int, int]:
    docno, seq = _REVISION_KEY.unpack(key)
    return int(docno), int(seq)


def reminder_key(trace_id: str, stage: str) -> bytes:
    return f"{trace_id}\0{stage}".encode()


def encode_trace(trace: Trace) -> bytes:
    return _TRACE_ENCODER.encode(trace)


def encode_sealed(sealed: Sealed) -> bytes:
    return _SEALED_DOC + _TRACE_ENCODER.encode(sealed)


def decode_doc(stored: bytes) -> Trace | Sealed:
    """What a ``docs`` value holds: a trace, or a sealed one."""
    if stored[:1] == _SEALED_DOC:
        return _SEALED_DECODER.decode(stored[1:])
    return _TRACE_DECODER.decode(stored)


def term_key(dbs: Databases, term: str) -> bytes:
    """How the postings database spells ``term`` (blind under the vault)."""
    return (term if dbs.vault is None else blind_term(dbs.vault, term)).encode()


def claim_name(dbs: Databases, key: str) -> bytes:
    """How the claims database spells a claim key (normalised; blind under the vault)."""
    name = normalize_claim_key(key)
    return (name if dbs.vault is None else blind_claim(dbs.vault, name)).encode()


def claim_key(dbs: Databases, key: str, docno: int) -> bytes:
    return claim_name(dbs, key) + b"\x00" + u32(docno)


def claim_value_key(dbs: Databases, value: str) -> bytes:
    """How the claims database spells a claim value (normalised; blind under the vault)."""
    normal = normalize_claim_value(value)
    return (normal if dbs.vault is None else blind_claim_value(dbs.vault, normal)).encode()
