"""The semantic channel's vectors of one store: kept with every write, searched by recall,
saved beside the LMDB file, and rebuilt from the traces when they cannot be used.

Vectors are derived data, like every index. Each document (the store's dense
document number) that is present, not purged and has some text holds one
unit vector of its content, from the embedder the policy names; superseded,
fulfilled, sensitive traces and predictions keep theirs, since recall filters
semantic candidates by exactly the rules it filters lexical ones by. The
vectors live in two indexes (:mod:`hikmah.vector_index`):

- ``recent``: a :class:`~hikmah.vector_index.FlatIndex`, searched exactly.
  Every new vector lands here, so a write costs one embedding and a copy.
- ``graph``: a :class:`~hikmah.vector_index.HnswIndex`, made once the store
  holds ``ann_at`` vectors. :meth:`SemanticIndex.fold` moves recent vectors
  into it a slice at a time (once there are :data:`FOLD_AT` of them), when
  the daemon is quiet, their int8 codes unchanged: a vector's similarity to a
  query is the same in either index.

A search asks both and merges. The two are reached under one lock: faiss
gives no promise about searching while a graph changes. The writer's
:meth:`~hikmah.store.Store.apply` embeds a batch outside it.

**Keeping up with the store.** The index reflects every document below
``upto``. The store hands it each durable batch
(:meth:`SemanticIndex.committed`: the documents whose text it changed, a
purge's stub included, whether the records were this device's or came from
another by sync, :attr:`hikmah.snapshot.Snapshot.written`); a batch committed
while the index is not ready is skipped, and :meth:`SemanticIndex.catch_up`
embeds what it missed from the store itself (documents from ``upto`` on, and
forgets the purged; a document a rival rewrote below ``upto`` meanwhile is
embedded again at :meth:`SemanticIndex.finish`). A trace's vector depends on
its text alone, so two devices that hold the same records hold the same
vectors whatever order the records came in (under different document
numbers, which recall never shows). So loading or building
can run in the background while writes go on, and only the last catch-up, in
the writer's turn, holds writes off.

**The file** (``vectors`` in the data directory): the graph's bytes, the
recent vectors' bytes, a JSON header (model stamp, ``upto``, the trace id at
``upto - 1``, sizes) and a trailer (header length, magic). It is written to a
temporary name, synced and renamed. Under the vault the two parts are sealed
under a data key of their own, new for every save and wrapped by the master
key, so no vector of a sealed trace is ever on disk in the clear, and a purge
saves at once, so the purged vector leaves the disk with it. A file of
another model, a damaged one, or one that names a document the store does not
hold at that number (the store lost a commit the file had seen) is
:class:`StaleVectors`: the vectors are built again from the store.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.durable import write_atomic
from hikmah.embedding import Embedder, ModelStamp, Vectors
from hikmah.errors import HikmahError
from hikmah.layout import STATUS_CODE
from hikmah.sealing import Keys, open_file, rewrapped, seal_file
from hikmah.snapshot import Added, Snapshot
from hikmah.vault import VaultError
from hikmah.vector_index import (
    Allowed,
    FlatIndex,
    HnswIndex,
    Ids,
    Similarities,
    VectorIndex,
    restore_index,
)

log = logging.getLogger(__name__)

State = Literal["loading", "building", "ready"]
VECTORS_FILE = "vectors"
MAGIC = b"HIKMAH-VECTORS-2"
_TRAILER = struct.Struct(f"<Q{len(MAGIC)}s")
_AAD = b"hikmah vectors"
EMBED_BATCH = 1024  # documents embedded at a time while catching up
FOLD_SLICE = 256  # vectors moved into the graph per lock hold (about 0.2 s at 1M)
# Recent vectors past which a graph takes them in: an exact search of 2k vectors
# costs about 0.12 ms between a recall's lexical work (the graph's 0.35 ms), of 512
# a third of that, and folding them is a second's work once the daemon is quiet.
FOLD_AT = 512


class StaleVectors(HikmahError):
    """A vector file cannot be used (another model, damaged, behind a lost commit)."""


class SemanticStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What ``daemon.status`` says of the channel."""

    model: str
    version: str
    dimensions: int
    state: State
    vectors: int  # held, in both indexes
    graph: int  # of them in the HNSW graph
    upto: int  # documents the vectors reflect


class _Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    stamp: ModelStamp
    upto: int
    last_id: str | None  # the trace at upto - 1: a store that lost it reuses the number
    graph_bytes: int  # the graph's dump comes first, then recent's
    flat_bytes: int
    key_entry: str | None = None  # hex: the wrapped data key, when the parts are sealed


class SemanticIndex:
    """The vectors of one store's documents, by document number.

    Args:
        path: the vector file.
        embedder: the model the vectors come from.
        model: its registered name (``[semantic] model``; the policy's blend is its).
        ann_at: vectors from which the HNSW graph serves (``[semantic] ann_at``).
    """

    def __init__(self, path: Path, embedder: Embedder, *, model: str, ann_at: int) -> None:
        self.path = path
        self.embedder = embedder
        self.model = model
        self.ann_at = ann_at
        self._lock = threading.Lock()
        self._state: State = "loading"
        self._reset()

    def _reset(self) -> None:
        self._recent = FlatIndex(self.embedder.stamp)
        self._graph: HnswIndex | None = None
        self._upto = 0
        self._last_id: str | None = None
        self._rewritten: set[int] = set()  # below upto, while not ready
        self._changed = False  # since the last save

    @property
    def stamp(self) -> ModelStamp:
        return self.embedder.stamp

    @property
    def ready(self) -> bool:
        """Whether recall may use the vectors (they reflect every commit)."""
        return self._state == "ready"

    @property
    def changed(self) -> bool:
        """Whether the vectors changed since they were last saved."""
        return self._changed

    def status(self) -> SemanticStatus:
        with self._lock:
            graph = 0 if self._graph is None else len(self._graph)
            return SemanticStatus(
                model=self.stamp.name,
                version=self.stamp.version,
                dimensions=self.stamp.dimensions,
                state=self._state,
                vectors=graph + len(self._recent),
                graph=graph,
                upto=self._upto,
            )

    # -- recall ---------------------------------------------------------------------

    def embed_query(self, text: str) -> Vectors | None:
        """The query's unit vector; None when the model finds nothing in it."""
        vector = self.embedder.embed_query(text)
        return vector if vector.any() else None

    def search(self, query: Vectors, k: int, allowed: Allowed) -> tuple[Ids, Similarities]:
        """The ``k`` documents most similar to ``query`` among those ``allowed`` keeps,
        most similar first."""
        with self._lock:
            parts = [index.search(query, k, allowed) for index in self._indexes()]
        ids = np.concatenate([hits.ids for hits in parts])
        sims = np.concatenate([hits.similarities for hits in parts])
        order = np.lexsort((ids, -sims))[:k]
        return ids[order], sims[order]

    def similarities(self, query: Vectors, docs: npt.ArrayLike) -> Similarities:
        """Cosine of ``query`` with each document's vector, NaN for a document without one."""
        keys = np.asarray(docs, dtype=np.uint64)
        with self._lock:
            out = self._recent.similarities(query, keys)
            if self._graph is not None:
                missing = np.isnan(out)
                if missing.any():
                    out[missing] = self._graph.similarities(query, keys[missing])
        return out

    def _indexes(self) -> list[VectorIndex]:
        return [self._recent] if self._graph is None else [self._recent, self._graph]

    # -- writes -----------------------------------------------------------------------

    def committed(self, written: Sequence[Added]) -> int:
        """A durable batch gave ``written`` their text (a trace, a rival's in its place, a
        purge's stub): the vectors follow; returns how many vectors left. While not ready
        the batch is skipped: :meth:`catch_up` embeds what lies past :attr:`upto`, and
        :meth:`finish` what was rewritten below it."""
        if not written:
            return 0
        if not self.ready:
            with self._lock:
                self._rewritten.update(doc.docno for doc in written if doc.docno < self._upto)
            return 0
        vectors = self._embed(written)
        with self._lock:
            return self._apply(written, vectors)

    def _embed(self, added: Sequence[Added]) -> Vectors:
        return self.embedder.embed([doc.text for doc in added])

    def _apply(self, added: Sequence[Added], vectors: Vectors) -> int:
        """Hold the documents' new vectors (none for an empty text), dropping any they had;
        the lock is held. Returns how many vectors were dropped."""
        docs = np.array([doc.docno for doc in added], dtype=np.uint64)
        # Only a document below upto can hold a vector: a local write costs no removal.
        held = docs[docs < self._upto]
        removed = sum(index.remove(held) for index in self._indexes()) if len(held) else 0
        nonzero = vectors.any(axis=1)
        if nonzero.any():
            self._recent.add(docs[nonzero], vectors[nonzero])
        last = max(added, key=lambda doc: doc.docno)
        if last.docno >= self._upto:
            self._upto, self._last_id = last.docno + 1, last.trace_id
        self._changed = True
        return removed

    def _read(self, snapshot: Snapshot, docnos: Sequence[int]) -> list[Added]:
        """The documents as ``snapshot`` holds them, their text empty unless they are
        present and not purged."""
        live = _live(snapshot)
        out = []
        for docno in docnos:
            trace = snapshot.trace_at(docno)
            out.append(Added(docno, trace.id, trace.content if live[docno] else ""))
        return out

    # -- loading, building, folding (the daemon, off the event loop) --------------------

    def rebuild(self) -> None:
        """Forget every vector: they are built again from the store (:meth:`catch_up`).
        Recall goes without them until then."""
        with self._lock:
            self._state = "building"
            self._reset()
            self._changed = True

    def catch_up(self, snapshot: Snapshot) -> int:
        """Embed the documents of ``snapshot`` the vectors do not reflect yet, and forget
        those purged since; returns how many were embedded.

        Safe while writes go on (they are skipped until :meth:`finish`); the
        daemon runs it in the background, then once more in the writer's turn.
        """
        end = snapshot.next_docno()
        if self._upto > end:
            raise StaleVectors(f"{self.path}: the vectors reflect documents the store lacks")
        embedded = 0
        for start in range(self._upto, end, EMBED_BATCH):
            batch = self._read(snapshot, range(start, min(start + EMBED_BATCH, end)))
            vectors = self._embed(batch)
            with self._lock:
                self._apply(batch, vectors)
            embedded += len(batch)
        live = _live(snapshot)
        with self._lock:
            held = np.concatenate([index.ids() for index in self._indexes()])
            purged = held[~live[held.astype(np.intp)]]
            for index in self._indexes():
                index.remove(purged)
            self._changed |= bool(len(purged))
        return embedded

    def prepare(self, snapshot: Snapshot, keys: Keys | None) -> None:
        """Take the file's vectors, or start over when they cannot be used, and embed what
        they lack of ``snapshot``: the long part, safe while writes go on."""
        if self._state == "loading":
            try:
                self.load(snapshot, keys)
            except StaleVectors as exc:
                log.info("building the vectors from the store: %s", exc)
                self.rebuild()
        self.catch_up(snapshot)

    def finish(self, snapshot: Snapshot) -> None:
        """Embed the last writes, and the documents rewritten below :attr:`upto` meanwhile
        (a rival of another device took a trace's place), and serve: from now on every
        commit reaches the vectors and recall uses them. Call with no write under way (in
        the writer's turn)."""
        self.catch_up(snapshot)
        with self._lock:
            rewritten, self._rewritten = sorted(self._rewritten), set()
        if rewritten:
            batch = self._read(snapshot, rewritten)
            vectors = self._embed(batch)
            with self._lock:
                self._apply(batch, vectors)
        self._state = "ready"

    def wants_fold(self) -> bool:
        """Whether recent vectors should move into the graph (or a graph be made)."""
        with self._lock:
            if self._graph is None:
                return len(self._recent) >= self.ann_at
            return len(self._recent) >= min(self.ann_at, FOLD_AT)

    def fold(self, *, threads: int = 1, slice_size: int = FOLD_SLICE) -> int:
        """Move up to ``slice_size`` recent vectors into the graph (made when there is
        none); returns how many moved."""
        with self._lock:
            if self._graph is None:
                self._graph = HnswIndex(self.stamp)
            docs, codes, scales = self._recent.pop(slice_size)
            self._graph.add_codes(docs, codes, scales, threads=threads)
            self._changed = True
            return len(docs)

    # -- the file -------------------------------------------------------------------------

    def save(self, keys: Keys | None) -> None:
        """Write the vectors to :attr:`path` (sealed under ``keys`` when the vault is on)."""
        with self._lock:
            graph = b"" if self._graph is None else self._graph.dump()
            flat = self._recent.dump()
            upto, last_id = self._upto, self._last_id
            self._changed = False
        entry = None
        parts: list[bytes | bytearray] = [graph, flat]
        if keys is not None:
            sealed, key = seal_file(keys, b"".join(parts), aad=_AAD)
            parts, entry = [sealed], key.hex()
        header = msgspec.json.encode(
            _Header(
                stamp=self.stamp,
                upto=upto,
                last_id=last_id,
                graph_bytes=len(graph),
                flat_bytes=len(flat),
                key_entry=entry,
            )
        )
        write_atomic(self.path, [*parts, header, _TRAILER.pack(len(header), MAGIC)], 0o600)

    def load(self, snapshot: Snapshot, keys: Keys | None) -> None:
        """Take the vectors the file holds, if they fit ``snapshot``'s store.

        Raises:
            StaleVectors: no file, a damaged one, another model's, sealed without the
                keys (or with the vault off), or behind a commit the store lost.
        """
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise StaleVectors(f"{self.path}: cannot be read: {exc}") from None
        header, payload = _split(self.path, data)
        if header.stamp != self.stamp:
            raise StaleVectors(
                f"{self.path}: vectors of {header.stamp.name} {header.stamp.version}"
                f" ({header.stamp.dimensions}-d), the model is {self.stamp.name}"
                f" {self.stamp.version} ({self.stamp.dimensions}-d)"
            )
        if (header.key_entry is None) != (keys is None):
            raise StaleVectors(f"{self.path}: sealed and the vault is off, or the other way")
        if header.key_entry is not None and keys is not None:
            try:
                payload = memoryview(
                    open_file(keys, bytes(payload), bytes.fromhex(header.key_entry), aad=_AAD)
                )
            except (VaultError, ValueError) as exc:
                raise StaleVectors(f"{self.path}: does not open: {exc}") from None
        if len(payload) != header.graph_bytes + header.flat_bytes:
            raise StaleVectors(f"{self.path}: shorter than its header says")
        if header.upto > snapshot.next_docno() or (
            header.upto and snapshot.bare_trace_at(header.upto - 1).id != header.last_id
        ):
            raise StaleVectors(f"{self.path}: reflects writes the store does not hold")
        try:
            graph = (
                restore_index("hnsw", self.stamp, payload[: header.graph_bytes])
                if header.graph_bytes
                else None
            )
            recent = restore_index("flat", self.stamp, payload[header.graph_bytes :])
        except ValueError as exc:
            raise StaleVectors(f"{self.path}: damaged: {exc}") from None
        assert isinstance(recent, FlatIndex) and (graph is None or isinstance(graph, HnswIndex))
        with self._lock:
            self._recent, self._graph = recent, graph
            self._upto, self._last_id = header.upto, header.last_id
            self._changed = False


def _live(snapshot: Snapshot) -> npt.NDArray[np.bool_]:
    """Which documents hold a vector when they have text: present and not purged."""
    features = snapshot.features
    live: npt.NDArray[np.bool_] = (features["present"] == 1) & (
        features["status"] != STATUS_CODE["purged"]
    )
    return live


def _split(path: Path, data: bytes) -> tuple[_Header, memoryview]:
    if len(data) < _TRAILER.size:
        raise StaleVectors(f"{path}: not a vector file")
    length, magic = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    end = len(data) - _TRAILER.size
    if magic != MAGIC or length > end:
        raise StaleVectors(f"{path}: not a vector file")
    try:
        header = msgspec.json.decode(data[end - length : end], type=_Header)
    except msgspec.DecodeError as exc:
        raise StaleVectors(f"{path}: damaged vector header: {exc}") from None
    return header, memoryview(data)[: end - length]


def rewrap_vectors(data_dir: Path, keys: Keys) -> bool:
    """Re-wrap the sealed vector file's data key under the current master (a rotation
    does it before the old master leaves the keyring); True when the file changed.

    Raises:
        VaultError: the key does not unwrap under any master ``keys`` has.
    """
    path = vectors_path(data_dir)
    try:
        data = path.read_bytes()
        header, payload = _split(path, data)
    except (OSError, StaleVectors):
        return False  # nothing usable to keep: the vectors are built again anyway
    if header.key_entry is None:
        return False
    entry = rewrapped(keys, "the vector file", bytes.fromhex(header.key_entry))
    if entry is None:
        return False
    encoded = msgspec.json.encode(msgspec.structs.replace(header, key_entry=entry.hex()))
    write_atomic(path, [payload, encoded, _TRAILER.pack(len(encoded), MAGIC)], 0o600)
    return True


def vectors_path(data_dir: Path) -> Path:
    """Where the vectors of the store in ``data_dir`` are kept."""
    return data_dir / VECTORS_FILE


def remove_vectors(data_dir: Path) -> None:
    """Delete a data directory's vector file (its documents were renumbered)."""
    vectors_path(data_dir).unlink(missing_ok=True)
