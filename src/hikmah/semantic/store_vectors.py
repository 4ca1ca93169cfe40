"""The semantic channel's vectors of one store: following its commits in the background,
searched by recall, saved beside the LMDB file, and rebuilt from the traces when they
cannot be used.

Vectors are derived data, like every index. Each document (the store's dense
document number) that is present, not purged and has some text holds the unit
vectors of its *passages* (:meth:`~hikmah.semantic.embedding.Embedder.passages`: a short
text is one passage, a long one its overlapping windows), from the embedder the
policy names; a document's similarity to a query is that of its best passage,
so a fact named in passing in a long session is found by its own words' meaning.
Superseded, fulfilled, sensitive traces and predictions keep theirs, since
recall filters semantic candidates by exactly the rules it filters lexical ones
by. Passages are numbered as they are embedded (a document's are consecutive);
the indexes (:mod:`hikmah.semantic.vector_index`) hold them by that number:

- ``recent``: a :class:`~hikmah.semantic.vector_index.FlatIndex`, searched exactly.
  Every new vector lands here.
- ``graph``: a :class:`~hikmah.semantic.vector_index.HnswIndex`, made once the store
  holds ``ann_at`` vectors. :meth:`SemanticIndex.fold` moves recent vectors
  into it a slice at a time, their int8 codes unchanged: a vector's similarity
  to a query is the same in either index.

A search asks both and merges. The two are reached under one lock: faiss gives
no promise about searching while a graph changes. Embedding runs outside it.

**Following the store.** A write never waits for the model. The store hands
the index each durable batch (:meth:`SemanticIndex.committed`: the documents
whose text it changed, whether the records were this device's or came from
another by sync, :attr:`hikmah.index.snapshot.Snapshot.written`), which drops their
old vectors at once (a purged text's vector leaves memory with it) and
notes them as *behind*: the documents from :attr:`frontier` to the last one
seen, and a few rewritten below it. :meth:`SemanticIndex.follow`, in the
daemon's background, embeds what is behind a batch at a time. Recall uses what
is there meanwhile: a document without vectors yet is judged by its words alone
(the kernel, ``scoring.c``), and ``daemon.status`` says how far behind the
vectors are. A trace's vectors depend on its text alone, so two devices that
hold the same records hold the same vectors whatever order the records came in
(under different numbers, which recall never shows).

**The file** (``vectors`` in the data directory, :mod:`hikmah.semantic.vector_file`):
the index saves itself there (:meth:`SemanticIndex.save`), sealed under the vault; a
purge saves at once, so the purged vector leaves the disk with it. A file that cannot be
used (another model, damaged, behind a commit the store lost) is
:class:`~hikmah.semantic.vector_file.StaleVectors`: the vectors are built again from
the store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.index.layout import STATUS_CODE
from hikmah.index.snapshot import Added, Snapshot
from hikmah.semantic.embedding import Embedder, ModelStamp, Vectors
from hikmah.semantic.vector_file import StaleVectors, read_vectors, write_vectors
from hikmah.semantic.vector_index import (
    Allowed,
    FlatIndex,
    HnswIndex,
    Ids,
    Similarities,
    VectorIndex,
    grown,
)
from hikmah.vault.sealing import Keys

log = logging.getLogger(__name__)

# loading: the file is being read, nothing is served; building: served while the vectors
# are made from the store (no usable file, a model change); ready: served and following.
State = Literal["loading", "building", "ready"]
FOLLOW_BATCH = 256  # documents embedded at a time in the background
# Passages embedded between looks at whether to stop: a stopping daemon waits for at
# most one slice (well under a second), not a batch of long documents.
EMBED_SLICE = 32
FOLD_SLICE = 256  # vectors moved into the graph per lock hold (about 0.2 s at 1M)
# Recent vectors past which a graph takes them in: an exact search of 2k vectors
# costs about 0.12 ms between a recall's lexical work (the graph's 0.35 ms), of 512
# a third of that, and folding them is a second's work once the daemon is quiet.
FOLD_AT = 512
_NONE = 0xFFFFFFFF  # no passage
# How the index reads the texts it embeds: a snapshot of the store (Store.snapshot).
SnapshotOpener = Callable[[], AbstractContextManager[Snapshot]]


class SemanticStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What ``daemon.status`` says of the channel's vectors."""

    model: str
    version: str
    dimensions: int
    state: State
    vectors: int  # held, in both indexes (a long document holds several)
    graph: int  # of them in the HNSW graph
    documents: int  # documents the vectors reflect or are behind on
    behind: int  # of them, how many still wait for their vectors


class SemanticIndex:
    """The vectors of one store's documents.

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
        self._arrived: set[int] = set()  # committed while loading
        self._interrupted = threading.Event()
        self._reset()

    def _reset(self) -> None:
        self._recent = FlatIndex(self.embedder.stamp)
        self._graph: HnswIndex | None = None
        self._end = 0  # documents seen: the vectors reflect or are behind on [0, end)
        self._frontier = 0  # every document from here to end is behind
        self._frontier_id: str | None = None  # the trace id of document frontier - 1
        self._behind: set[int] = set()  # and these below frontier
        self._flight: set[int] = set()  # being embedded now
        self._doc_of = np.zeros(0, dtype=np.uint32)  # passage -> document
        self._passages = 0  # passages numbered so far
        self._first = np.zeros(0, dtype=np.uint32)  # document -> its first passage
        self._count = np.zeros(0, dtype=np.uint16)  # document -> how many it holds
        self._changed = False  # since the last save

    @property
    def stamp(self) -> ModelStamp:
        return self.embedder.stamp

    @property
    def serving(self) -> bool:
        """Whether recall may use the vectors (what is there: some may be behind)."""
        return self._state != "loading"

    @property
    def ready(self) -> bool:
        """Whether the vectors reflect every commit (none behind)."""
        return self._state != "loading" and not self.behind

    @property
    def behind(self) -> int:
        """Documents waiting for their vectors."""
        return self._end - self._frontier + len(self._behind)

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
                documents=self._end,
                behind=self.behind if self._state != "loading" else 0,
            )

    # -- recall ---------------------------------------------------------------------

    def embed_query(self, text: str) -> Vectors | None:
        """The query's unit vector; None when the model finds nothing in it."""
        vector = self.embedder.embed_query(text)
        return vector if vector.any() else None

    def search(self, query: Vectors, k: int, allowed: Allowed) -> tuple[Ids, Similarities]:
        """The ``k`` documents most similar to ``query`` (by their best passage) among
        those ``allowed`` keeps, most similar first."""
        with self._lock:
            doc_of = self._doc_of

            def allowed_passages(ids: Ids) -> npt.NDArray[np.bool_]:
                return allowed(doc_of[ids.astype(np.intp)].astype(np.uint64))

            docs, sims = [], []
            for index in self._indexes():
                fetch = k
                while True:
                    hits = index.search(query, fetch, allowed_passages)
                    found = doc_of[hits.ids.astype(np.intp)].astype(np.uint64)
                    # Best first: a document's first hit is its best passage.
                    _, first = np.unique(found, return_index=True)
                    if len(first) >= k or len(hits.ids) < fetch:
                        break
                    fetch *= 4
                docs.append(found[first])
                sims.append(hits.similarities[first])
        ids = np.concatenate(docs)
        best = np.concatenate(sims)
        order = np.lexsort((ids, -best))
        ids, best = ids[order], best[order]
        _, first = np.unique(ids, return_index=True)  # a document in both: its better one
        first.sort()
        return ids[first][:k], best[first][:k]

    def similarities(self, query: Vectors, docs: npt.ArrayLike) -> Similarities:
        """Cosine of ``query`` with each document's best passage, NaN for a document
        without vectors."""
        keys = np.asarray(docs, dtype=np.intp)
        with self._lock:
            inside = keys < len(self._count)
            counts = np.zeros(len(keys), dtype=np.intp)
            counts[inside] = self._count[keys[inside]]
            firsts = np.zeros(len(keys), dtype=np.intp)
            firsts[inside] = self._first[keys[inside]]
            if len(keys) and counts.max(initial=0) <= 1:  # the usual case: one passage each
                sims = self._passage_similarities(query, firsts.astype(np.uint64))
                sims[counts == 0] = np.nan
                return sims
            total = int(counts.sum())
            starts = np.cumsum(counts) - counts
            offsets = np.arange(total) - np.repeat(starts, counts)
            passages = (np.repeat(firsts, counts) + offsets).astype(np.uint64)
            sims = self._passage_similarities(query, passages)
        out = np.full(len(keys), np.nan, dtype=np.float32)
        held = counts > 0
        if held.any():
            out[held] = np.maximum.reduceat(sims, starts[held])
        return out

    def _passage_similarities(self, query: Vectors, passages: Ids) -> Similarities:
        out = self._recent.similarities(query, passages)
        if self._graph is not None:
            missing = np.isnan(out)
            if missing.any():
                out[missing] = self._graph.similarities(query, passages[missing])
        return out

    def _indexes(self) -> list[VectorIndex]:
        return [self._recent] if self._graph is None else [self._recent, self._graph]

    # -- following the store ------------------------------------------------------------

    def committed(self, written: Sequence[Added]) -> int:
        """A durable batch gave ``written`` their text (a trace, a rival's in its place, a
        purge's stub): their old vectors go now, the new ones follow
        (:meth:`follow`); returns how many vectors went."""
        if not written:
            return 0
        with self._lock:
            if self._state == "loading":
                self._arrived.update(doc.docno for doc in written)
                return 0
            removed = self._drop([doc.docno for doc in written])
            for doc in written:
                self._note(doc)
            self._changed = True  # a saved file says what is behind
            return removed

    def _note(self, doc: Added) -> None:
        """Put ``doc`` behind (the lock is held): past the frontier every document is."""
        if doc.docno >= self._end:
            self._end = doc.docno + 1
        elif doc.docno < self._frontier or doc.docno in self._flight:
            self._behind.add(doc.docno)

    def interrupt(self) -> None:
        """End a :meth:`follow` in progress at its next slice, and make every later one
        embed nothing: the daemon is stopping. What was chosen stays behind."""
        self._interrupted.set()

    def follow(self, snapshot_of: SnapshotOpener, limit: int = FOLLOW_BATCH) -> int:
        """Embed up to ``limit`` documents that are behind (their text read from a
        snapshot ``snapshot_of`` opens once they are chosen); returns how many (0 when
        :meth:`interrupt` came first)."""
        with self._lock:
            if self._state == "loading":
                return 0
            chosen = [self._behind.pop() for _ in range(min(limit, len(self._behind)))]
            start = self._frontier
            stop = min(start + limit - len(chosen), self._end)
            chosen += range(start, stop)
            self._flight.update(chosen)
        if not chosen:
            return 0
        try:
            with snapshot_of() as snapshot:
                docs = _read(snapshot, chosen)
            embedded = self._embed(docs)
        except BaseException:
            self._put_back()
            raise
        if embedded is None:
            self._put_back()
            return 0
        vectors, owners = embedded
        with self._lock:
            if not self._flight:  # a rebuild started over meanwhile: another numbering
                return 0
            self._flight.clear()
            # A document written again meanwhile is behind again: its text here is old.
            fresh = [doc.docno not in self._behind for doc in docs]
            self._drop([doc.docno for doc, ok in zip(docs, fresh, strict=True) if ok])
            self._hold(docs, fresh, vectors, owners)
            if self._frontier == start and stop > start:
                self._frontier, self._frontier_id = stop, docs[-1].trace_id
            if not self.behind and self._state == "building":
                self._state = "ready"
            self._changed = True
        return len(chosen)

    def _put_back(self) -> None:
        """Those being embedded stay behind (a follow that did not finish)."""
        with self._lock:
            self._behind.update(d for d in self._flight if d < self._frontier)
            self._flight.clear()

    def _embed(self, docs: Sequence[Added]) -> tuple[Vectors, npt.NDArray[np.intp]] | None:
        """The passages' vectors of ``docs``, and for each the position of its document;
        None when :meth:`interrupt` came meanwhile."""
        texts: list[str] = []
        owners: list[int] = []
        for i, doc in enumerate(docs):
            parts = self.embedder.passages(doc.text)
            texts += parts
            owners += [i] * len(parts)
        pieces = []
        for first in range(0, len(texts), EMBED_SLICE):
            if self._interrupted.is_set():
                return None
            pieces.append(self.embedder.embed(texts[first : first + EMBED_SLICE]))
        vectors = np.concatenate(pieces) if pieces else self.embedder.embed(texts)
        return vectors, np.array(owners, dtype=np.intp)

    def _hold(
        self,
        docs: Sequence[Added],
        wanted: Sequence[bool],
        vectors: Vectors,
        owners: npt.NDArray[np.intp],
    ) -> None:
        """Number and hold the passages (``vectors``, of ``docs[owners]``) of the
        ``wanted`` documents; the lock is held."""
        keep = np.asarray(wanted, dtype=bool)[owners] & vectors.any(axis=1)
        vectors, owners = vectors[keep], owners[keep]
        if not len(owners):
            return
        numbers = np.arange(self._passages, self._passages + len(owners), dtype=np.uint64)
        documents = np.array([docs[o].docno for o in owners.tolist()], dtype=np.uint32)
        self._passages += len(owners)
        self._doc_of = grown(self._doc_of, self._passages, 0)
        self._doc_of[numbers.astype(np.intp)] = documents
        top = int(documents.max()) + 1
        self._first = grown(self._first, top, _NONE)
        self._count = grown(self._count, top, 0)
        # A document's passages are consecutive: its first, and how many.
        unique, first_at, counts = np.unique(documents, return_index=True, return_counts=True)
        self._first[unique] = numbers[first_at].astype(np.uint32)
        self._count[unique] = counts
        self._recent.add(numbers, vectors)

    def _drop(self, docnos: Sequence[int]) -> int:
        """Forget the vectors of ``docnos`` (the lock is held); returns how many went."""
        keys = np.asarray(docnos, dtype=np.intp)
        keys = keys[keys < len(self._count)]
        counts = self._count[keys].astype(np.intp)
        held = counts > 0
        if not held.any():
            return 0
        keys, counts = keys[held], counts[held]
        starts = self._first[keys].astype(np.intp)
        passages = np.concatenate(
            [np.arange(s, s + c, dtype=np.uint64) for s, c in zip(starts, counts, strict=True)]
        )
        removed = sum(index.remove(passages) for index in self._indexes())
        self._count[keys] = 0
        self._first[keys] = _NONE
        return removed

    # -- loading, building, folding (the daemon, off the event loop) --------------------

    def open(self, snapshot: Snapshot, keys: Keys | None) -> None:
        """Take the file's vectors, or start over when they cannot be used, and serve:
        what ``snapshot`` holds beyond them is behind (:meth:`follow` embeds it), and
        the purged since are forgotten. Commits from the index's creation on reach it
        (:meth:`committed`), whether before ``snapshot`` or after."""
        try:
            self.load(snapshot, keys)
            state: State = "ready"
        except StaleVectors as exc:
            log.info("building the vectors from the store: %s", exc)
            with self._lock:
                self._reset()
            state = "building"
        self._plan(snapshot, state)

    def _plan(self, snapshot: Snapshot, state: State) -> None:
        live = _live(snapshot)
        end = snapshot.next_docno()
        with self._lock:
            held = np.flatnonzero(self._count[: len(live)] > 0)
            purged = held[~live[held]]
            self._changed |= bool(self._drop(purged.tolist()))
            arrived, self._arrived = sorted(self._arrived), set()
            self._drop(arrived)
            self._end = max(self._end, end)
            for docno in arrived:
                if docno < self._frontier:
                    self._behind.add(docno)
                self._end = max(self._end, docno + 1)
            self._state = state if self.behind else "ready"

    def rebuild(self) -> None:
        """Forget every vector: they are built again from the store as it is (its
        documents were numbered anew) once :meth:`open` is called again. Recall goes by
        words meanwhile."""
        with self._lock:
            self._reset()
            self._state = "loading"
            self._arrived.clear()
            self._changed = True

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
            passages, codes, scales = self._recent.pop(slice_size)
            self._graph.add_codes(passages, codes, scales, threads=threads)
            self._changed = True
            return len(passages)

    # -- the file -------------------------------------------------------------------------

    def save(self, keys: Keys | None) -> None:
        """Write the vectors to :attr:`path` (sealed under ``keys`` when the vault is on)."""
        with self._lock:
            graph = b"" if self._graph is None else self._graph.dump()
            flat = self._recent.dump()
            passages = self._doc_of[: self._passages].tobytes()
            frontier, last_id = self._frontier, self._frontier_id
            # Those being embedded are behind until they are held.
            behind = sorted(self._behind | {d for d in self._flight if d < frontier})
            self._changed = False
        write_vectors(
            self.path,
            self.stamp,
            keys,
            graph=graph,
            flat=flat,
            passages=passages,
            frontier=frontier,
            last_id=last_id,
            behind=behind,
        )

    def load(self, snapshot: Snapshot, keys: Keys | None) -> None:
        """Take the vectors the file holds, if they fit ``snapshot``'s store.

        Raises:
            StaleVectors: no file, a damaged one, another model's, sealed without the
                keys (or with the vault off), or behind a commit the store lost.
        """
        saved = read_vectors(self.path, self.stamp, snapshot, keys)
        with self._lock:
            self._recent, self._graph = saved.recent, saved.graph
            self._doc_of, self._passages = saved.doc_of, len(saved.doc_of)
            documents = saved.doc_of[saved.held]
            top = int(documents.max()) + 1 if len(documents) else 0
            self._first = np.full(top, _NONE, dtype=np.uint32)
            np.minimum.at(self._first, documents, saved.held.astype(np.uint32))
            self._count = np.bincount(documents, minlength=top).astype(np.uint16)
            self._frontier = self._end = saved.frontier
            self._frontier_id = saved.last_id
            self._behind = set(saved.behind)
            self._changed = False


def _read(snapshot: Snapshot, docnos: Sequence[int]) -> list[Added]:
    """The documents as ``snapshot`` holds them, their text empty unless they are
    present and not purged."""
    live = _live(snapshot)
    out = []
    for docno in docnos:
        trace = snapshot.trace_at(docno)
        out.append(Added(docno, trace.id, trace.content if live[docno] else ""))
    return out


def _live(snapshot: Snapshot) -> npt.NDArray[np.bool_]:
    """Which documents hold a vector when they have text: present and not purged."""
    features = snapshot.features
    live: npt.NDArray[np.bool_] = (features["present"] == 1) & (
        features["status"] != STATUS_CODE["purged"]
    )
    return live
