"""Nearest-neighbour search over trace vectors: exact for small stores, HNSW past that.

Two indexes behind one interface (:class:`VectorIndex`), both keyed by the
store's document numbers and both holding vectors in int8:

- :class:`FlatIndex`: int8 codes with their scales (:mod:`hikmah.quantize`),
  searched exactly, a chunk at a time. About 0.6 ms at 20k vectors and 3.4 ms
  at 100k (256-d, one BLAS thread; bench/vectors.py).
- :class:`HnswIndex`: a ``usearch`` HNSW graph over int8 vectors, about
  0.1-0.2 ms at 100k and 1M with recall@10 of about 0.95.

Everything here is synchronous, holds no threads and takes no locks: the
semantic module (:mod:`hikmah.semantic`) serialises every use of one index.

Removal is real. A removed vector is not found, and its bytes are overwritten
in memory, so no later :meth:`VectorIndex.dump` holds them: the flat index
moves its last row into the hole; usearch frees the slot without clearing it,
so each freed slot is filled at once with a constant tombstone vector that
stays until a new vector takes the slot (usearch fills free slots before it
grows, and no slot is ever left free), which keeps removal O(removed).

Persistence is :mod:`hikmah.semantic`'s: an index gives its bytes
(:meth:`VectorIndex.dump`) and :func:`restore_index` makes it again from
them, so that the semantic module can keep several in one file and encrypt it
under the vault.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from hikmah.embedding import ModelStamp, Vectors, normalize_rows
from hikmah.quantize import Codes, Scales, dequantize, quantize

Ids = npt.NDArray[np.uint64]
Kind = Literal["flat", "hnsw"]
Similarities = npt.NDArray[np.float32]

_GRID = float(1 << 24)  # a query's components, rounded to it, make dot products exact
_CHUNK = 16384  # rows converted to float32 at a time: 4 MiB of 256-d vectors
MAX_ID = 1 << 32  # ids are the store's document numbers (32-bit)
# Candidates kept while searching the graph: 64 finds 78% of the exact 50 nearest at
# 100k (128: 86%) in half the time, and recall asks for 50 (docs/semantic.md).
EXPANSION_SEARCH = 64
# Keys of tombstones; document numbers are 32-bit, so they never meet one.
_TOMBSTONE_KEYS = 1 << 63


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
        if len(keys) and int(keys.max()) >= MAX_ID:
            raise ValueError(f"ids are document numbers below {MAX_ID}")
        codes, scales = quantize(rows)
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
        sims = np.empty(n, dtype=np.float32)
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            block = self._codes[start:stop].astype(np.float32)
            np.multiply(block @ q, self._scales[start:stop], out=sims[start:stop])
        ids = self._ids[:n]
        if allowed is None:
            return _top(ids, sims, k)
        # Ask ``allowed`` about the most similar first: it reads feature rows, and
        # all of them would cost more than the search.
        fetch = max(4 * k, 32)
        while True:
            best = _top(ids, sims, min(fetch, n))
            keep = allowed(best.ids)
            if int(keep.sum()) >= k or fetch >= n:
                return Hits(best.ids[keep][:k], best.similarities[keep][:k])
            fetch *= 4

    def ids(self) -> Ids:
        return self._ids[: self._size].copy()

    def pop(self, count: int) -> tuple[Ids, Vectors]:
        """Remove up to ``count`` vectors (the last added) and return them, ids first."""
        start = max(self._size - count, 0)
        ids = self._ids[start : self._size].copy()
        vectors = dequantize(self._codes[start : self._size], self._scales[start : self._size])
        self._row_of[ids.astype(np.intp)] = -1
        self._ids[start : self._size], self._codes[start : self._size] = 0, 0
        self._scales[start : self._size] = 0.0
        self._size = start
        return ids, vectors

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        rows = self._rows(ids)
        if np.any(rows < 0):
            raise KeyError("an id is not held")
        return dequantize(self._codes[rows], self._scales[rows])

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> Similarities:
        q = _query(query, self.stamp)
        rows = self._rows(ids)
        held = rows >= 0
        out = np.full(len(rows), np.nan, dtype=np.float32)
        out[held] = exact_dot(self._codes[rows[held]], q) * self._scales[rows[held]]
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
    """A usearch HNSW graph over int8 vectors, cosine metric.

    Args:
        stamp: the model the vectors come from.
        connectivity: graph degree (usearch's M); 16 measured best per byte.
        expansion_add: candidates kept while inserting (ef_construction).
        expansion_search: candidates kept while searching (ef); more is slower
            and finds more of the exact top k.
    """

    def __init__(
        self,
        stamp: ModelStamp,
        *,
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = EXPANSION_SEARCH,
    ) -> None:
        from usearch.index import Index  # noqa: PLC0415 -- small stores never need it

        self.stamp = stamp
        self._index = Index(
            ndim=stamp.dimensions,
            metric="cos",
            dtype="i8",
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        self._tombstones: list[int] = []  # resident tombstone keys, one per freed slot
        self._next_tombstone = _TOMBSTONE_KEYS

    @property
    def kind(self) -> Kind:
        return "hnsw"

    def __len__(self) -> int:
        return len(self._index) - len(self._tombstones)

    def add(self, ids: npt.ArrayLike, vectors: Vectors, *, threads: int = 1) -> None:
        """As :meth:`VectorIndex.add`; ``threads`` > 1 lets a bulk add use more cores."""
        keys, rows = _checked(ids, vectors, self.stamp)
        if not len(keys):
            return
        present = self._index.contains(keys)
        if np.any(present):
            self.remove(keys[present])
        # Free tombstone slots for the new vectors to land in, so the index does not grow.
        reuse = min(len(keys), len(self._tombstones))
        if reuse:
            released, self._tombstones = self._tombstones[:reuse], self._tombstones[reuse:]
            self._index.remove(np.array(released, dtype=np.uint64))
        self._index.add(keys, rows, threads=threads)

    def remove(self, ids: npt.ArrayLike) -> int:
        keys = _keys(ids)
        held = keys[self._index.contains(keys) & (keys < _TOMBSTONE_KEYS)] if len(keys) else keys
        if not len(held):
            return 0
        self._index.remove(held)
        # usearch frees the slots without clearing them. No other slot is free
        # (every earlier one holds a tombstone), and usearch fills free slots
        # before it grows, so these tombstones overwrite exactly the removed bytes.
        tombstones = np.arange(
            self._next_tombstone, self._next_tombstone + len(held), dtype=np.uint64
        )
        self._next_tombstone += len(held)
        self._index.add(tombstones, np.tile(_tombstone(self.stamp), (len(held), 1)), threads=1)
        self._tombstones += tombstones.tolist()
        return len(held)

    def search(self, query: Vectors, k: int, allowed: Allowed | None = None) -> Hits:
        q = _query(query, self.stamp)
        size = len(self._index)
        if not size or k <= 0:
            return _top(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32), 0)
        # Most vectors pass ``allowed`` (it keeps out superseded, purged, sensitive...):
        # a quarter more than asked for is nearly always enough, and asking usearch for
        # four times as many cost three times as much.
        fetch = (k if allowed is None else k + k // 4 + 8) + min(len(self._tombstones), k)
        while True:
            found = self._index.search(q, min(fetch, size), threads=1)
            ids = np.asarray(found.keys, dtype=np.uint64)
            sims = (1.0 - np.asarray(found.distances, dtype=np.float32)).astype(np.float32)
            keep = ids < _TOMBSTONE_KEYS
            if allowed is not None:
                keep[keep] = allowed(ids[keep])
            ids, sims = ids[keep], sims[keep]
            if len(ids) >= k or fetch >= size:
                return _top(ids, sims, k)
            fetch *= 4

    def ids(self) -> Ids:
        keys = np.asarray(self._index.keys, dtype=np.uint64)
        return keys[keys < _TOMBSTONE_KEYS]

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        got = self._index.get(_keys(ids), dtype="f32")
        return normalize_rows(np.asarray(got, dtype=np.float32).reshape(-1, self.stamp.dimensions))

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> Similarities:
        keys = _keys(ids)
        out = np.full(len(keys), np.nan, dtype=np.float32)
        if not len(keys):
            return out
        held = self._index.contains(keys) & (keys < _TOMBSTONE_KEYS)
        if np.any(held):
            got = self._index.get(keys[held], dtype="i8")
            codes = np.asarray(got, dtype=np.int8).reshape(-1, self.stamp.dimensions)
            wide = codes.astype(np.float64)  # integer sums: exact in any order
            norms = np.sqrt(np.einsum("ij,ij->i", wide, wide))
            out[held] = exact_dot(codes, _query(query, self.stamp)) / np.maximum(norms, 1)
        return out

    def dump(self) -> bytes | bytearray:
        blob = self._index.save()  # without a path: the bytes
        assert blob is not None
        return blob

    @classmethod
    def restore(cls, stamp: ModelStamp, data: bytes | memoryview) -> HnswIndex:
        """The index :meth:`dump` gave ``data``.

        Raises:
            ValueError: ``data`` is not a usearch index of this model.
        """
        from usearch.index import Index  # noqa: PLC0415

        try:
            restored = Index.restore(bytes(data))
        except RuntimeError as exc:
            raise ValueError(f"not a usearch index: {exc}") from None
        if restored is None or restored.ndim != stamp.dimensions:
            raise ValueError("not a usearch index of this model")
        # A file does not keep it (usearch has a setter its typing hides).
        restored.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        index = cls.__new__(cls)
        index.stamp = stamp
        index._index = restored
        keys = np.asarray(restored.keys, dtype=np.uint64)
        index._tombstones = keys[keys >= _TOMBSTONE_KEYS].tolist()
        index._next_tombstone = max(index._tombstones, default=_TOMBSTONE_KEYS - 1) + 1
        return index


def restore_index(kind: Kind, stamp: ModelStamp, data: bytes | memoryview) -> VectorIndex:
    """The index of ``kind`` that :meth:`VectorIndex.dump` gave ``data``.

    Raises:
        ValueError: ``data`` is not such a dump.
    """
    if kind == "flat":
        return FlatIndex.restore(stamp, data)
    return HnswIndex.restore(stamp, data)


def exact_dot(codes: Codes, query: Vectors) -> npt.NDArray[np.float64]:
    """Each row of int8 ``codes`` times ``query``, the same whichever rows come along.

    BLAS adds a row's products in an order that depends on where the row sits
    in the block, and float32 rounds differently for each order: two synced
    devices, which hold the same vectors under different document numbers,
    would score a trace a bit apart. On a grid of 2**-24, every product and
    partial sum of int8 codes and a unit query is exact in float64, so any
    order gives the same sum.
    """
    grid = np.rint(query.astype(np.float64) * _GRID) / _GRID
    dot: npt.NDArray[np.float64] = codes.astype(np.float64) @ grid
    return dot


def _tombstone(stamp: ModelStamp) -> Vectors:
    vector = np.zeros(stamp.dimensions, dtype=np.float32)
    vector[0] = 1.0
    return vector


def _keys(ids: npt.ArrayLike) -> Ids:
    return np.atleast_1d(np.asarray(ids, dtype=np.uint64))


def _checked(ids: npt.ArrayLike, vectors: Vectors, stamp: ModelStamp) -> tuple[Ids, Vectors]:
    keys = _keys(ids)
    rows = np.asarray(vectors, dtype=np.float32).reshape(-1, stamp.dimensions)
    if len(rows) != len(keys):
        raise ValueError(f"{len(keys)} ids for {len(rows)} vectors")
    if len(np.unique(keys)) != len(keys):
        raise ValueError("an id is given twice")
    return keys, rows


def _query(query: Vectors, stamp: ModelStamp) -> Vectors:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if len(q) != stamp.dimensions:
        raise ValueError(f"a {len(q)}-d query for {stamp.dimensions}-d vectors")
    return q


def _top(ids: Ids, sims: Similarities, k: int) -> Hits:
    if len(ids) > k:
        part = np.argpartition(-sims, k - 1)[:k] if k > 0 else np.zeros(0, dtype=np.intp)
        ids, sims = ids[part], sims[part]
    order = np.lexsort((ids, -sims))  # ties: lower document number first, so runs repeat
    return Hits(ids[order], sims[order].astype(np.float32))
