"""Nearest-neighbour search over trace vectors: exact for small stores, HNSW past that.

Two indexes behind one interface (:class:`VectorIndex`), both keyed by the
store's document numbers and both keeping every vector as int8 codes with a
per-row scale (:mod:`hikmah.semantic.quantize`), from which every similarity is computed
exactly, in the same order-free sum whichever index holds the vector and wherever
it sits (``similarities`` in ``vectors.c``):

- :class:`FlatIndex`: the codes, searched exactly: a first pass in integers (the
  query rounded to int16, ``dots`` in ``vectors.c``, vectorised and without the
  GIL), then the exact similarity of every row the first pass cannot rule out.
- :class:`HnswIndex`: the codes, and a ``faiss`` HNSW graph over 4-bit copies
  of the vectors that finds the candidates the codes then rank: about 0.4 ms
  at 100k with the exact top 16 found at 0.84 (bench/vectors.py). faiss
  searches without the GIL.

Everything here is synchronous, holds no threads and takes no locks: the
semantic module (:mod:`hikmah.semantic.store_vectors`) serialises every use of one index.

Removal is real. A removed vector is not found, and its bytes are overwritten
in memory, so no later :meth:`VectorIndex.dump` holds them: the flat index
moves its last row into the hole; the graph, which cannot remove a node
(faiss does not), overwrites the node's 4-bit copy with zeros and never
returns its label again; the node stays as a bridge of the graph.

Persistence is :mod:`hikmah.semantic.vector_file`'s: an index gives its bytes
(:meth:`VectorIndex.dump`) and :func:`restore_index` makes it again from
them, so that the vector file can keep several in one file and encrypt it
under the vault.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

import blake3
import numpy as np
import numpy.typing as npt

from hikmah.semantic import _vectors
from hikmah.semantic.embedding import ModelStamp, Vectors
from hikmah.semantic.quantize import LEVELS, Codes, Scales, dequantize, quantize

Ids = npt.NDArray[np.uint64]
G = TypeVar("G", bound=np.generic)
# A faiss IndexHNSWSQ: faiss's SWIG objects are not typed beyond Index (downcasts).
Graph = Any
Kind = Literal["flat", "hnsw"]
Similarities = npt.NDArray[np.float32]

_QUERY_LEVELS = 32767  # the query's int16 grid in an exact search's first pass
MAX_ID = 1 << 32  # ids are the store's document numbers (32-bit)
# Candidates kept while searching the graph (faiss's efSearch): at 100k, 64 finds 0.84
# of the exact 16 nearest (96: 0.88) at two thirds of the cost (docs/semantic.md).
EXPANSION_SEARCH = 64
EXPANSION_ADD = 128  # efConstruction: a better graph for the same search cost
CONNECTIVITY = 16  # M: neighbours per node (32 on the bottom layer)
# The graph's 4-bit copies span +-4 standard deviations of a unit vector's component
# (1/sqrt(d)) in every dimension; outliers clip. Fixed, so nothing is trained and two
# devices quantise alike: at 100k it finds what a range trained on the data finds.
_SPREAD = 4.0
_DEAD = np.uint64(1 << 63)  # a label whose vector was removed (document numbers are 32-bit)
_DUMP = struct.Struct("<8sQQ32s")  # magic, graph bytes, labels, blake3 of the graph
_MAGIC = b"HKHNSW01"


class Allowed(Protocol):
    """Which of the given ids a search may return."""

    def __call__(self, ids: Ids) -> npt.NDArray[np.bool_]: ...


class Hits(NamedTuple):
    """Search results, most similar first: document numbers and cosine similarities."""

    ids: Ids
    similarities: Similarities


class VectorIndex(Protocol):
    """Unit vectors by document number."""

    @property
    def stamp(self) -> ModelStamp: ...

    @property
    def kind(self) -> Kind: ...

    def __len__(self) -> int: ...

    def add(self, ids: npt.ArrayLike, vectors: Vectors) -> None:
        """Store ``vectors`` under ``ids``, replacing any vector an id already has."""
        ...

    def remove(self, ids: npt.ArrayLike) -> int:
        """Forget the vectors of ``ids`` for good; returns how many were held."""
        ...

    def search(self, query: Vectors, k: int, allowed: Allowed | None = None) -> Hits:
        """The ``k`` most similar vectors to ``query`` among those ``allowed`` keeps."""
        ...

    def ids(self) -> Ids:
        """Every document number held, in no particular order."""
        ...

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        """The (dequantised) vectors of ``ids``, which must all be held."""
        ...

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> Similarities:
        """Cosine of ``query`` with the vector of each of ``ids``, NaN for an id not held:
        the semantic part of candidates the lexical channel found."""
        ...

    def dump(self) -> bytes | bytearray:
        """The index as bytes, for :func:`restore_index`."""
        ...


class FlatIndex:
    """Exact search over int8 rows; removal moves the last row into the hole."""

    def __init__(self, stamp: ModelStamp) -> None:
        self.stamp = stamp
        self._ids: Ids = np.zeros(0, dtype=np.uint64)
        self._codes: Codes = np.zeros((0, stamp.dimensions), dtype=np.int8)
        self._scales: Scales = np.zeros(0, dtype=np.float32)
        self._size = 0
        self._row_of = np.full(0, -1, dtype=np.int64)  # row of each id, -1: not held

    @property
    def kind(self) -> Kind:
        return "flat"

    def __len__(self) -> int:
        return self._size

    def add(self, ids: npt.ArrayLike, vectors: Vectors) -> None:
        keys, rows = _checked(ids, vectors, self.stamp)
        self.add_codes(keys, *quantize(rows))

    def add_codes(self, ids: Ids, codes: Codes, scales: Scales) -> None:
        """Hold vectors already quantised (moved from another index: the same codes)."""
        keys = _keys(ids)
        if len(keys) and int(keys.max()) >= MAX_ID:
            raise ValueError(f"ids are document numbers below {MAX_ID}")
        if len(keys):
            self._map(int(keys.max()) + 1)
        held = self._row_of[keys.astype(np.intp)]
        old = held >= 0
        self._codes[held[old]], self._scales[held[old]] = codes[old], scales[old]
        fresh = ~old
        count = int(fresh.sum())
        if not count:
            return
        self._reserve(self._size + count)
        start, stop = self._size, self._size + count
        self._ids[start:stop] = keys[fresh]
        self._codes[start:stop] = codes[fresh]
        self._scales[start:stop] = scales[fresh]
        self._row_of[keys[fresh].astype(np.intp)] = np.arange(start, stop)
        self._size = stop

    def remove(self, ids: npt.ArrayLike) -> int:
        removed = 0
        for key in _keys(ids).tolist():
            row = int(self._row_of[key]) if key < len(self._row_of) else -1
            if row < 0:
                continue
            self._row_of[key] = -1
            last = self._size - 1
            if row != last:
                moved = int(self._ids[last])
                self._ids[row], self._codes[row] = moved, self._codes[last]
                self._scales[row] = self._scales[last]
                self._row_of[moved] = row
            # The last row is now either moved or the removed one: clear it either way.
            self._ids[last], self._codes[last], self._scales[last] = 0, 0, 0.0
            self._size = last
            removed += 1
        return removed

    def search(self, query: Vectors, k: int, allowed: Allowed | None = None) -> Hits:
        q = _query(query, self.stamp)
        n = self._size
        ids = self._ids[:n]
        if not n or k <= 0:
            return _top(ids[:0], np.zeros(0, dtype=np.float32), 0)
        approx, slack = self._approximate(q)
        if allowed is None:
            chosen = _within(approx, k, 2 * slack)
        else:
            # Ask ``allowed`` about the most similar first: it reads feature rows, and
            # all of them would cost more than the search.
            fetch = max(4 * k, 32)
            while True:
                best = _best(approx, min(fetch, n))
                chosen = best[allowed(ids[best])]
                if len(chosen) >= k or fetch >= n:
                    break
                fetch *= 4
            if len(chosen) >= k:
                # Those the first pass put just below the ones asked may be nearer.
                floor = np.partition(approx[chosen], len(chosen) - k)[len(chosen) - k]
                ring = np.setdiff1d(np.flatnonzero(approx >= floor - 2 * slack), best)
                chosen = np.concatenate([chosen, ring[allowed(ids[ring])]])
        found = ids[chosen]
        return _top(found, self.similarities(q, found), k)

    def _approximate(self, q: Vectors) -> tuple[npt.NDArray[np.float64], float]:
        """Every row's similarity to ``q`` in a first pass, with the query rounded to int16
        (an integer dot product, in C), and a bound on how far any of them is from its
        :meth:`similarities`: rows within twice the bound of the k-th best are given
        their exact similarity, so the search stays exact."""
        n = self._size
        peak = float(np.abs(q).max())
        step = peak / _QUERY_LEVELS if peak > 0 else 1.0
        rounded = np.rint(q / step).astype(np.int16)
        dots = np.empty(n, dtype=np.int64)
        _vectors.dots(self._codes[:n].reshape(-1), rounded, dots)
        scales = self._scales[:n].astype(np.float64)
        # A component of the query is off by at most step / 2 here and 2**-25 in
        # ``similarities``, a code is at most 127: and a float32 similarity rounds.
        slack = float(scales.max()) * LEVELS * len(q) * (step / 2 + 2.0**-25) + 1e-6
        return dots * step * scales, slack

    def ids(self) -> Ids:
        return self._ids[: self._size].copy()

    def pop(self, count: int) -> tuple[Ids, Codes, Scales]:
        """Remove up to ``count`` vectors (the last added) and return them: ids, codes and
        scales, for :meth:`add_codes` of another index."""
        start = max(self._size - count, 0)
        ids = self._ids[start : self._size].copy()
        codes = self._codes[start : self._size].copy()
        scales = self._scales[start : self._size].copy()
        self._row_of[ids.astype(np.intp)] = -1
        self._ids[start : self._size], self._codes[start : self._size] = 0, 0
        self._scales[start : self._size] = 0.0
        self._size = start
        return ids, codes, scales

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        rows = self._rows(ids)
        if np.any(rows < 0):
            raise KeyError("an id is not held")
        return dequantize(self._codes[rows], self._scales[rows])

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> Similarities:
        q = _query(query, self.stamp)
        keys = _keys(ids)
        out = np.empty(len(keys), dtype=np.float32)
        _vectors.similarities(self._codes.reshape(-1), self._scales, self._row_of, q, keys, out)
        return out

    def dump(self) -> bytes:
        n = self._size
        return b"".join(
            (self._ids[:n].tobytes(), self._scales[:n].tobytes(), self._codes[:n].tobytes())
        )

    @classmethod
    def restore(cls, stamp: ModelStamp, data: bytes | memoryview) -> FlatIndex:
        """The index :meth:`dump` gave ``data``.

        Raises:
            ValueError: ``data`` is not a whole number of rows of this model.
        """
        row = 8 + 4 + stamp.dimensions
        if len(data) % row:
            raise ValueError("not a dump of a flat index of this model")
        n = len(data) // row
        index = cls(stamp)
        buffer = memoryview(data)
        index._ids = np.frombuffer(buffer[: 8 * n], dtype=np.uint64).copy()
        index._scales = np.frombuffer(buffer[8 * n : 12 * n], dtype=np.float32).copy()
        codes = np.frombuffer(buffer[12 * n :], dtype=np.int8).copy()
        index._codes = codes.reshape(n, stamp.dimensions)
        index._size = n
        if n:
            if int(index._ids.max()) >= MAX_ID or len(np.unique(index._ids)) != n:
                raise ValueError("not a dump of a flat index: bad ids")
            index._map(int(index._ids.max()) + 1)
            index._row_of[index._ids.astype(np.intp)] = np.arange(n)
        return index

    def _rows(self, ids: npt.ArrayLike) -> npt.NDArray[np.intp]:
        keys = _keys(ids)
        rows = np.full(len(keys), -1, dtype=np.intp)
        inside = keys < len(self._row_of)
        rows[inside] = self._row_of[keys[inside].astype(np.intp)]
        return rows

    def _map(self, size: int) -> None:
        if size > len(self._row_of):
            grow = max(size, 2 * len(self._row_of)) - len(self._row_of)
            self._row_of = np.concatenate([self._row_of, np.full(grow, -1, dtype=np.int64)])

    def _reserve(self, size: int) -> None:
        if size <= len(self._ids):
            return
        capacity = max(size, 2 * len(self._ids), 1024)
        grow = capacity - len(self._ids)
        self._ids = np.concatenate([self._ids, np.zeros(grow, dtype=np.uint64)])
        self._scales = np.concatenate([self._scales, np.zeros(grow, dtype=np.float32)])
        zeros = np.zeros((grow, self.stamp.dimensions), dtype=np.int8)
        self._codes = np.concatenate([self._codes, zeros])


class HnswIndex:
    """A faiss HNSW graph that finds candidates, over 4-bit copies of the vectors, and the
    vectors' int8 codes (a :class:`FlatIndex`) that rank them and give every similarity.

    The graph's labels are its insertion order; each maps to a document number, or
    to :data:`_DEAD` once the vector is removed.
    """

    def __init__(self, stamp: ModelStamp) -> None:
        self.stamp = stamp
        self._codes = FlatIndex(stamp)
        self._graph: Graph = _new_graph(stamp)
        self._docs: Ids = np.zeros(0, dtype=np.uint64)  # label -> document number
        self._labels = 0  # labels given out
        self._label_of = np.full(0, -1, dtype=np.int64)  # document number -> label
        self._dead = 0

    @property
    def kind(self) -> Kind:
        return "hnsw"

    def __len__(self) -> int:
        return len(self._codes)

    def add(self, ids: npt.ArrayLike, vectors: Vectors, *, threads: int = 1) -> None:
        """As :meth:`VectorIndex.add`; ``threads`` > 1 lets a bulk add use more cores."""
        keys, rows = _checked(ids, vectors, self.stamp)
        self.add_codes(keys, *quantize(rows), threads=threads)

    def add_codes(self, ids: Ids, codes: Codes, scales: Scales, *, threads: int = 1) -> None:
        """Hold vectors already quantised (moved from the flat index: the same codes, so
        the same similarities)."""
        keys = _keys(ids)
        if not len(keys):
            return
        self.remove(keys)  # a new vector for a held id: a new node, the old one dead
        self._codes.add_codes(keys, codes, scales)
        first, self._labels = self._labels, self._labels + len(keys)
        self._docs = grown(self._docs, self._labels, _DEAD)
        self._docs[first : self._labels] = keys
        self._label_of = grown(self._label_of, int(keys.max()) + 1, -1)
        self._label_of[keys.astype(np.intp)] = np.arange(first, self._labels)
        with _threads(threads):
            self._graph.add(dequantize(codes, scales))

    def remove(self, ids: npt.ArrayLike) -> int:
        keys = _keys(ids)
        keys = keys[keys < len(self._label_of)]
        labels = self._label_of[keys.astype(np.intp)]
        held = labels >= 0
        if not held.any():
            return 0
        gone = labels[held]
        self._codes.remove(keys[held])
        self._label_of[keys[held].astype(np.intp)] = -1
        self._docs[gone] = _DEAD
        self._dead += len(gone)
        # faiss cannot take a node out of the graph: its 4-bit copy is overwritten, so
        # no byte of the vector stays, and the label is never returned again.
        _graph_codes(self._graph, self._labels)[gone] = 0
        return len(gone)

    def search(self, query: Vectors, k: int, allowed: Allowed | None = None) -> Hits:
        q = _query(query, self.stamp)
        if not len(self) or k <= 0:
            return _top(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32), 0)
        # Most vectors pass ``allowed`` (it keeps out superseded, purged, sensitive...):
        # a quarter more than asked for is nearly always enough; dead labels come along.
        fetch = (k if allowed is None else k + k // 4 + 8) + min(self._dead, k)
        while True:
            _, labels = self._graph.search(q[None, :], min(fetch, self._labels))
            found = labels[0][labels[0] >= 0]
            ids = self._docs[found]
            ids = ids[ids != _DEAD]
            if allowed is not None and len(ids):
                ids = ids[allowed(ids)]
            if len(ids) >= k or fetch >= self._labels:
                return _top(ids, self._codes.similarities(q, ids), k)
            fetch *= 4

    def ids(self) -> Ids:
        return self._codes.ids()

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        return self._codes.vectors(ids)

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> Similarities:
        return self._codes.similarities(query, ids)

    def dump(self) -> bytes:
        import faiss  # noqa: PLC0415

        graph = faiss.serialize_index(self._graph).tobytes()
        docs = self._docs[: self._labels].tobytes()
        head = _DUMP.pack(_MAGIC, len(graph), self._labels, blake3.blake3(graph).digest())
        return b"".join((head, graph, docs, self._codes.dump()))

    @classmethod
    def restore(cls, stamp: ModelStamp, data: bytes | memoryview) -> HnswIndex:
        """The index :meth:`dump` gave ``data``.

        Raises:
            ValueError: ``data`` is not such a dump, or not of this model.
        """
        import faiss  # noqa: PLC0415

        raw = memoryview(data)
        if len(raw) < _DUMP.size:
            raise ValueError("not a dump of an HNSW index")
        magic, graph_bytes, labels, digest = _DUMP.unpack_from(raw)
        end = _DUMP.size + graph_bytes
        if magic != _MAGIC or len(raw) < end + 8 * labels:
            raise ValueError("not a dump of an HNSW index, or cut short")
        graph = raw[_DUMP.size : end]
        # faiss trusts what it reads: it is given only the bytes this index wrote (as an
        # array of its own: faiss reads a view's base buffer, not the view).
        if blake3.blake3(graph).digest() != digest:
            raise ValueError("the HNSW graph is damaged (its digest differs)")
        index = cls.__new__(cls)
        index.stamp = stamp
        # deserialize_index gives the subclass itself (a downcast would be a second
        # wrapper, and the first one would free the index when collected).
        index._graph = faiss.deserialize_index(np.frombuffer(graph, dtype=np.uint8).copy())
        if index._graph.d != stamp.dimensions or index._graph.ntotal != labels:
            raise ValueError("not an HNSW index of this model")
        index._graph.hnsw.efSearch = EXPANSION_SEARCH
        index._docs = np.frombuffer(raw[end : end + 8 * labels], dtype=np.uint64).copy()
        index._labels = labels
        index._codes = FlatIndex.restore(stamp, raw[end + 8 * labels :])
        alive = index._docs != _DEAD
        index._dead = int((~alive).sum())
        if int(alive.sum()) != len(index._codes):
            raise ValueError("the graph's labels and the codes disagree")
        top = int(index._docs[alive].max()) + 1 if alive.any() else 0
        index._label_of = np.full(top, -1, dtype=np.int64)
        index._label_of[index._docs[alive].astype(np.intp)] = np.flatnonzero(alive)
        return index


def _new_graph(stamp: ModelStamp) -> Graph:
    import faiss  # noqa: PLC0415 -- small stores never need it

    faiss.omp_set_num_threads(1)  # the daemon's threads are its own (see _threads)
    d = stamp.dimensions
    four_bits: Any = faiss.ScalarQuantizer.QT_4bit  # an enum value; the stubs want an object
    graph: Graph = faiss.IndexHNSWSQ(d, four_bits, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = EXPANSION_ADD
    graph.hnsw.efSearch = EXPANSION_SEARCH
    spread = _SPREAD / np.sqrt(d)
    storage: Graph = faiss.downcast_index(graph.storage)
    # The quantiser's range per dimension: its lowest value, then its width.
    trained = np.concatenate([np.full(d, -spread), np.full(d, 2 * spread)]).astype(np.float32)
    faiss.copy_array_to_vector(trained, storage.sq.trained)
    storage.is_trained = graph.is_trained = True
    return graph


def _graph_codes(graph: Graph, labels: int) -> npt.NDArray[np.uint8]:
    """The graph's 4-bit copies, one row per label, as a writable view of faiss's memory."""
    import faiss  # noqa: PLC0415

    storage: Graph = faiss.downcast_index(graph.storage)
    size = storage.code_size
    view: npt.NDArray[np.uint8] = faiss.rev_swig_ptr(storage.codes.data(), labels * size)
    return view.reshape(labels, size)


@contextlib.contextmanager
def _threads(count: int) -> Iterator[None]:
    """faiss's OpenMP threads for one bulk add, then one again (the process's setting)."""
    import faiss  # noqa: PLC0415

    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(1)


def grown(array: npt.NDArray[G], size: int, fill: Any) -> npt.NDArray[G]:
    """``array`` with room for ``size`` entries (doubling), new ones ``fill``."""
    if size <= len(array):
        return array
    grown = np.full(max(size, 2 * len(array), 1024), fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def restore_index(kind: Kind, stamp: ModelStamp, data: bytes | memoryview) -> VectorIndex:
    """The index of ``kind`` that :meth:`VectorIndex.dump` gave ``data``.

    Raises:
        ValueError: ``data`` is not such a dump.
    """
    if kind == "flat":
        return FlatIndex.restore(stamp, data)
    return HnswIndex.restore(stamp, data)


def _keys(ids: npt.ArrayLike) -> Ids:
    return np.ascontiguousarray(ids, dtype=np.uint64)  # at least 1-d


def _checked(ids: npt.ArrayLike, vectors: Vectors, stamp: ModelStamp) -> tuple[Ids, Vectors]:
    keys = _keys(ids)
    rows = np.asarray(vectors, dtype=np.float32).reshape(-1, stamp.dimensions)
    if len(rows) != len(keys):
        raise ValueError(f"{len(keys)} ids for {len(rows)} vectors")
    if len(np.unique(keys)) != len(keys):
        raise ValueError("an id is given twice")
    return keys, rows


def _query(query: Vectors, stamp: ModelStamp) -> Vectors:
    q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    if len(q) != stamp.dimensions:
        raise ValueError(f"a {len(q)}-d query for {stamp.dimensions}-d vectors")
    return q


def _best(values: npt.NDArray[np.float64], count: int) -> npt.NDArray[np.intp]:
    """The positions of the ``count`` largest ``values`` (in no order)."""
    if count >= len(values):
        return np.arange(len(values))
    return np.argpartition(-values, count - 1)[:count]


def _within(values: npt.NDArray[np.float64], k: int, margin: float) -> npt.NDArray[np.intp]:
    """The positions of the values at most ``margin`` below the ``k``-th largest."""
    if k >= len(values):
        return np.arange(len(values))
    kth = np.partition(values, len(values) - k)[len(values) - k]
    return np.flatnonzero(values >= kth - margin)


def _top(ids: Ids, sims: Similarities, k: int) -> Hits:
    if len(ids) > k:
        part = np.argpartition(-sims, k - 1)[:k] if k > 0 else np.zeros(0, dtype=np.intp)
        ids, sims = ids[part], sims[part]
    order = np.lexsort((ids, -sims))  # ties: lower document number first, so runs repeat
    return Hits(ids[order], sims[order].astype(np.float32))
