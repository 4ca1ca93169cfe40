"""One consistent view of the store, and the lookups every read is made of.

A :class:`Snapshot` is an LMDB transaction with the databases (and the
vault's keys) it reads: the one thing a read query takes
(:mod:`hikmah.index.queries`, :mod:`hikmah.recall.ranking`, the proposals of
:mod:`hikmah.learning.consolidation`), so that several reads agree with each other and
a later version can carry more of what a read needs (a point in time to read
as of). The writer reads through a snapshot of its own write transaction
while it validates and indexes a batch, and so sees the batch's own writes.

The feature columns are shared by every read snapshot of a store
(:class:`FeatureCache`): a copy of one index version (every commit that
changes the indexes, a local batch or another device's records, counts one),
patched forward to a newer snapshot's version by the chunks each commit
changed. A snapshot of a write transaction reads its own (the batch's writes
are not committed yet).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from hikmah.index.columns import Columns, FeatureColumns
from hikmah.index.layout import (
    CHUNK,
    FEATURES,
    INDEX_VERSION,
    KIND_CODE,
    MAX_KEY,
    NO_DEADLINE,
    SEQ,
    STATUS_CODE,
    Databases,
    DocArray,
    FeatureArray,
    chain_key,
    claim_name,
    decode_doc,
    split_deadline_key,
    term_key,
    u32,
    unpack_u32,
)
from hikmah.ledger.chain import decode_record
from hikmah.model.head import Head
from hikmah.model.moment import Moment
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import STATUSES, Status
from hikmah.vault.crypto import KeyDestroyed, VaultLocked
from hikmah.vault.sealing import Sealed, open_trace

# Commits remembered for patching the columns; past it, the next read reloads them.
_MAX_LOGGED_COMMITS = 4096


class Added(NamedTuple):
    """A document a batch wrote: its number, its trace id and the text to embed (empty:
    it holds no vector, purged or unreadable here)."""

    docno: int
    trace_id: str
    text: str


class Snapshot:
    """A transaction of the store with its databases: what every read goes through.

    It reads the present; :class:`hikmah.index.past.Past` reads as of a record.
    """

    def __init__(
        self,
        txn: Any,
        dbs: Databases,
        cache: FeatureCache | None = None,
    ) -> None:
        self.txn = txn
        self.dbs = dbs
        self._cache = cache
        self._own: Columns | None = None  # without a cache: the columns of this transaction
        # In a batch's write transaction: the documents whose text it changed, by number,
        # whichever chain their records came from (the vectors follow them).
        self.written: dict[int, Added] | None = None
        self.point: Moment | None = None  # the record read as of (None: the present)
        # In a batch's write transaction: the feature chunks it changed, written back
        # once at its end (a chunk holds 256 documents, and an import writes them one
        # after another: each copied and put whole per document was a fifth of a write).
        self._chunks: dict[int, FeatureArray] | None = None
        # And the document numbers it appended to each posting list (one window's
        # list of a common word grows to 16 KiB: copied whole for every append).
        self._appended: dict[bytes, list[bytes]] = {}

    @property
    def features(self) -> FeatureColumns:
        """Every document's features as columns indexed by document number."""
        if self._cache is not None:
            return self._cache.at(self)
        if self._own is None:
            self.write_back()
            self._own = _load_columns(self)
        return self._own

    def dated(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
        """Active commitments with a deadline as (deadlines, docnos), soonest first."""
        if self._cache is not None:
            return self._cache.dated(self)
        return dated_commitments(self.features)

    def overdue(self, now_ms: int) -> npt.NDArray[np.uint32]:
        """Document numbers of active commitments whose deadline has passed, ascending."""
        deadlines, docs = self.dated()
        return np.sort(docs[: int(np.searchsorted(deadlines, now_ms, side="right"))])

    def wrote(self, docno: int, trace: Trace) -> None:
        """Note that this transaction gave ``docno`` the text of ``trace`` (a stub's is
        empty), when it collects what it wrote."""
        if self.written is not None:
            self.written[docno] = Added(docno, trace.id, trace.content)

    # -- documents --------------------------------------------------------------

    def docno(self, trace_id: str) -> int | None:
        """The document number of ``trace_id``; None if no trace ever had that id."""
        key = trace_id.encode()
        if not 0 < len(key) <= MAX_KEY:
            return None  # no id can be empty or that long
        raw = self.txn.get(key, db=self.dbs.ids)
        return None if raw is None else unpack_u32(raw)

    def trace_at(self, docno: int) -> Trace:
        return self.load_trace(bytes(self.txn.get(u32(docno), db=self.dbs.docs)))

    def bare_trace_at(self, docno: int) -> Trace:
        """The trace at ``docno`` without its writer's text when it is sealed: for ids,
        kinds and times, which need no decryption."""
        doc = decode_doc(bytes(self.txn.get(u32(docno), db=self.dbs.docs)))
        return doc.trace if isinstance(doc, Sealed) else doc

    def load_trace(self, stored: bytes) -> Trace:
        """The trace a ``docs`` value holds, opened when it is sealed."""
        doc = decode_doc(stored)
        return self.open_sealed(doc) if isinstance(doc, Sealed) else doc

    def open_sealed(self, sealed: Sealed) -> Trace:
        """The plaintext of a sealed trace.

        Raises:
            KeyDestroyed: its data key was destroyed (purged).
            VaultLocked: the vault's keys were not given to the store.
            DecryptionFailed: the stored key or text does not open.
        """
        trace_id = sealed.trace.id
        entry = self.txn.get(trace_id.encode(), db=self.dbs.keys)
        if entry is None:
            raise KeyDestroyed(f"the data key of {trace_id} was destroyed; its text is gone")
        if self.dbs.vault is None:
            raise VaultLocked(
                f"{trace_id} is encrypted and the vault is off: set [vault] enabled = true in"
                " the policy and restart hikmahd with the keyring that holds its keys"
            )
        return open_trace(self.dbs.vault, sealed, bytes(entry))

    def documents(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(document number, stored value) of every document from ``start``, in write order."""
        cursor = self.txn.cursor(db=self.dbs.docs)
        if not cursor.set_range(u32(start)):
            return
        for key, value in cursor:
            yield unpack_u32(key), bytes(value)

    def next_docno(self) -> int:
        raw = self.txn.get(b"next_doc", db=self.dbs.meta)
        return 0 if raw is None else unpack_u32(raw)

    # -- features and links -------------------------------------------------------

    def chunk(self, number: int) -> FeatureArray:
        """The feature rows of one chunk (a writable copy, or under :meth:`hold_chunks`
        the one the batch changes), zeroed where never written."""
        if self._chunks is not None and (held := self._chunks.get(number)) is not None:
            return held
        raw = self.txn.get(u32(number), db=self.dbs.features)
        rows = (
            np.zeros(CHUNK, dtype=FEATURES)
            if raw is None
            else np.frombuffer(raw, dtype=FEATURES).copy()
        )
        if self._chunks is not None:
            self._chunks[number] = rows
        return rows

    def put_chunk(self, number: int, rows: FeatureArray) -> None:
        """Store a chunk's rows (under :meth:`hold_chunks`, at :meth:`write_back`)."""
        if self._chunks is not None:
            self._chunks[number] = rows
        else:
            self.txn.put(u32(number), rows.tobytes(), db=self.dbs.features)

    def append_postings(self, keys: Iterable[bytes], docno: bytes) -> None:
        """Add the document ``docno`` (4 bytes, big-endian) at the end of each posting
        list of ``keys`` (under :meth:`hold_chunks`, at :meth:`write_back`)."""
        if self._chunks is not None:
            for key in keys:
                self._appended.setdefault(key, []).append(docno)
            return
        txn, postings = self.txn, self.dbs.postings
        for key in keys:
            old = txn.get(key, db=postings)
            txn.put(key, docno if old is None else bytes(old) + docno, db=postings)

    def hold_chunks(self) -> None:
        """Keep the feature chunks and posting lists this write transaction changes until
        :meth:`write_back` (which must come before it commits, and comes before any read
        of them through this snapshot)."""
        self._chunks = {}

    def write_back(self) -> None:
        """Store the feature chunks and posting lists held since :meth:`hold_chunks`."""
        if self._chunks:
            for number, rows in self._chunks.items():
                self.txn.put(u32(number), rows.tobytes(), db=self.dbs.features)
            self._chunks.clear()
        if self._appended:
            txn, postings = self.txn, self.dbs.postings
            for key, added in self._appended.items():
                old = txn.get(key, db=postings)
                txn.put(key, b"".join([b"" if old is None else bytes(old), *added]), db=postings)
            self._appended.clear()

    def status_of(self, docno: int) -> Status:
        if self._chunks is not None and (held := self._chunks.get(docno // CHUNK)) is not None:
            return STATUSES[int(held[docno % CHUNK]["status"])]
        raw = self.txn.get(u32(docno // CHUNK), db=self.dbs.features)
        at = (docno % CHUNK) * FEATURES.itemsize
        row = np.frombuffer(raw, dtype=FEATURES, count=1, offset=at)
        return STATUSES[int(row["status"][0])]

    def purged_since(self, docno: int) -> Moment | None:
        """When ``docno`` was purged after the point read as of (never, in the present)."""
        return None

    def successor(self, docno: int) -> str | None:
        """The id of the trace that superseded this document, if any."""
        link = self.txn.get(u32(docno), db=self.dbs.links)
        return None if link is None else bytes(link).decode()

    def scope_id(self, scope: str) -> int | None:
        """The number of ``scope`` in the features (None: no trace holds in it)."""
        if scope == "global":
            return 0
        if not 0 < len(scope.encode()) <= MAX_KEY:
            return None  # the write rules never let such a scope in
        raw = self.txn.get(scope.encode(), db=self.dbs.scopes)
        return None if raw is None else unpack_u32(raw)

    def postings(self, term: str) -> DocArray:
        """Every document number holding ``term`` (a tag: ``TAG_PREFIX`` + tag), ascending."""
        prefix = term_key(self.dbs, term) + b"\x00"
        if len(prefix) + 4 > MAX_KEY:
            return np.zeros(0, dtype=np.uint32)  # never indexed (see index.doc_terms)
        self.write_back()
        cursor = self.txn.cursor(db=self.dbs.postings)
        chunks: list[bytes] = []
        if cursor.set_range(prefix):
            for key, value in cursor:
                if not key.startswith(prefix):
                    break
                chunks.append(value)
        # The windows' bytes end to end, read as one array: a common word has dozens.
        return np.frombuffer(b"".join(chunks), dtype=">u4").astype(np.uint32)

    def claim_entries(self, key: str | None = None) -> Iterable[tuple[bytes, int, bytes]]:
        """(key, docno, value) of active claims, for one key or all, as the claims
        database spells them (normalised, or blind under the vault): compare them,
        and read the trace for the text."""
        return self._claims(self.dbs.claims, key)

    def claim_log(self, key: str | None = None) -> Iterable[tuple[bytes, int, bytes]]:
        """As :meth:`claim_entries`, for every claim ever written but purged ones."""
        return self._claims(self.dbs.claim_log, key)

    def _claims(self, db: Any, key: str | None) -> Iterator[tuple[bytes, int, bytes]]:
        prefix = b"" if key is None else claim_name(self.dbs, key) + b"\x00"
        cursor = self.txn.cursor(db=db)
        if not cursor.set_range(prefix):
            return
        for raw_key, value in cursor:
            if not raw_key.startswith(prefix):
                break
            yield bytes(raw_key[:-5]), unpack_u32(raw_key[-4:]), bytes(value)

    def deadlines(self) -> Iterator[tuple[int, int]]:
        """(deadline, docno) of every active commitment with a deadline, soonest first."""
        cursor = self.txn.cursor(db=self.dbs.deadlines)
        for key in cursor.iternext(values=False):
            yield split_deadline_key(bytes(key))

    # -- the ledger ----------------------------------------------------------------

    def records(self) -> Iterator[tuple[int, bytes]]:
        """(seq, line) of every ledger record, in key order."""
        for key, value in self.txn.cursor(db=self.dbs.ledger):
            yield int(SEQ.unpack(key)[0]), bytes(value)

    def line_at(self, device: str, seq: int) -> bytes | None:
        """The stored record ``seq`` of ``device``'s chain (``""``: this device's ledger):
        its line, or a redaction (:func:`hikmah.index.layout.decode_redaction`); None if absent."""
        if device:
            raw = self.txn.get(chain_key(device, seq), db=self.dbs.chains)
        else:
            raw = self.txn.get(SEQ.pack(seq), db=self.dbs.ledger)
        return None if raw is None else bytes(raw)

    def index_version(self) -> int:
        """How many commits have changed the derived indexes (the feature cache's clock)."""
        raw = self.txn.get(INDEX_VERSION, db=self.dbs.meta)
        return 0 if raw is None else int(SEQ.unpack(raw)[0])

    def last_clock(self) -> int:
        """The last record whose time is known (every record the indexes reflect)."""
        cursor = self.txn.cursor(db=self.dbs.clock)
        return int(SEQ.unpack(cursor.key())[0]) if cursor.last() else 0

    def written_at(self, seq: int) -> int:
        """When record ``seq`` was written (epoch ms; 0 before the first record)."""
        raw = self.txn.get(SEQ.pack(seq), db=self.dbs.clock) if seq > 0 else None
        return 0 if raw is None else int(SEQ.unpack(raw)[0])

    def seq_at(self, at_ms: int) -> int:
        """The last record written at or before ``at_ms`` (0: none was).

        The clock never decreases along the ledger, so this is a bisection (over
        the records the indexes reflect).
        """
        low, high = 0, self.last_clock()
        while low < high:
            middle = (low + high + 1) // 2
            if self.written_at(middle) <= at_ms:
                low = middle
            else:
                high = middle - 1
        return low

    def record_hash(self, seq: int) -> str | None:
        """The hash of record ``seq``, as its line states it."""
        line = self.txn.get(SEQ.pack(seq), db=self.dbs.ledger)
        return None if line is None else decode_record(bytes(line)).hash

    def last_record(self) -> Head | None:
        """The ledger's last record, as a head."""
        cursor = self.txn.cursor(db=self.dbs.ledger)
        if not cursor.last():
            return None
        record = decode_record(bytes(cursor.value()))
        return Head(seq=record.seq, hash=record.hash)


def _load_columns(snapshot: Snapshot) -> Columns:
    columns = Columns()
    chunks = (
        (unpack_u32(key), np.frombuffer(value, dtype=FEATURES))
        for key, value in snapshot.txn.cursor(db=snapshot.dbs.features)
    )
    columns.set_chunks(chunks, snapshot.next_docno())
    return columns


def dated_commitments(
    features: FeatureColumns,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
    """Active commitments with a deadline as (deadlines, docnos), soonest first."""
    dated = np.flatnonzero(
        (features["kind"] == KIND_CODE["commitment"])
        & (features["status"] == STATUS_CODE["active"])
        & (features["deadline"] != NO_DEADLINE)
    )
    deadlines = features["deadline"][dated]
    order = np.argsort(deadlines, kind="stable")
    return deadlines[order], dated[order].astype(np.uint32)


class FeatureCache:
    """The feature columns of one index version, shared by the snapshots of a store.

    Loaded on first use (not at open, so start-up does not grow with the
    store), then patched forward to each reader's snapshot: commits log the
    chunks they changed (:meth:`committed`), and a reader with a newer
    snapshot patches just those. The lock is held for bookkeeping only, never
    across a commit, so readers never wait for a sync.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._columns: Columns | None = None
        self._seq = 0
        self._changes: list[tuple[int, set[int]]] = []
        self._forgotten_upto = 0
        # Active dated commitments as (deadlines, docnos) sorted by deadline, and
        # the column position they were computed from.
        self._dated: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]] | None = None
        self._dated_seq = -1

    def at(self, snapshot: Snapshot) -> Columns:
        """The columns as of ``snapshot``."""
        seq = snapshot.index_version()
        with self._lock:
            if self._columns is None or self._seq < self._forgotten_upto:
                self._columns, self._seq = _load_columns(snapshot), seq
            elif seq > self._seq:
                dirty = set[int]().union(
                    *(chunks for at, chunks in self._changes if self._seq < at <= seq)
                )
                self._columns.set_chunks(
                    ((chunk, snapshot.chunk(chunk)) for chunk in dirty), snapshot.next_docno()
                )
                self._seq = seq
            self._changes = [(at, chunks) for at, chunks in self._changes if at > self._seq]
            return self._columns

    def dated(self, snapshot: Snapshot) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
        """:func:`dated_commitments` as of ``snapshot``, kept until the columns change."""
        features = self.at(snapshot)
        if self._dated is None or self._dated_seq != self._seq:
            self._dated, self._dated_seq = dated_commitments(features), self._seq
        return self._dated

    def committed(self, seq: int, dirty: set[int]) -> None:
        """The commit that made index version ``seq`` changed the feature chunks ``dirty``."""
        with self._lock:
            self._changes.append((seq, dirty))
            if len(self._changes) > _MAX_LOGGED_COMMITS:
                # Nobody has read for a long while: forget, and reload on the next read.
                self._changes.clear()
                self._forgotten_upto = seq

    def forget(self) -> None:
        """Reload on the next read (the indexes were rebuilt or the file replaced)."""
        with self._lock:
            self._columns = None
            self._changes.clear()
