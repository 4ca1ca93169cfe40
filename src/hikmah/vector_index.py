"""Nearest-neighbour search over trace vectors: exact for small stores, HNSW past that.

Two indexes behind one interface (:class:`VectorIndex`), both keyed by the
store's document numbers and both holding vectors in int8:

- :class:`FlatIndex`: int8 codes with their scales (:mod:`hikmah.quantize`),
  searched exactly, a chunk at a time. About 0.6 ms at 20k vectors and 3.4 ms
  at 100k (256-d, one BLAS thread; bench/vectors.py).
- :class:`HnswIndex`: a ``usearch`` HNSW graph over int8 vectors, about
  0.1-0.2 ms at 100k and 1M with recall@10 of about 0.95.

:func:`build_index` picks the kind by size (``ann_at``); the daemon rebuilds in
the background when a store crosses it, and meanwhile keeps serving the index
it has. Everything here is synchronous and holds no threads.

Removal is real. A removed vector is not found, and its bytes are overwritten
in memory, so no later :meth:`VectorIndex.save` writes them: the flat index
moves its last row into the hole; usearch frees the slot without clearing it,
so each freed slot is filled at once with a constant tombstone vector that
stays until a new vector takes the slot (usearch fills free slots before it
grows, and no slot is ever left free), which keeps removal O(removed).

Files: one file per index, written to a temporary name, synced and renamed.
The index's own bytes come first (so usearch can memory-map the file) and a
trailer last: a JSON header with the model stamp, then its length and a magic
string. :func:`load_index` refuses a file whose stamp differs from the
embedder's (:class:`StaleVectors`): the vectors are then rebuilt from the
ledger, as every derived index is.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.durable import fsync_dir, fsync_file
from hikmah.embedding import ModelStamp, Vectors, normalize_rows
from hikmah.errors import HikmahError
from hikmah.quantize import Codes, Scales, dequantize, quantize

Ids = npt.NDArray[np.uint64]
Allowed = Callable[[Ids], npt.NDArray[np.bool_]]
Kind = Literal["flat", "hnsw"]

MAGIC = b"HIKMAH-VECTORS-1"
_TRAILER = struct.Struct(f"<Q{len(MAGIC)}s")
_CHUNK = 16384  # rows converted to float32 at a time: 4 MiB of 256-d vectors
MAX_ID = 1 << 32  # ids are the store's document numbers (32-bit)
ANN_AT = 50_000  # vectors from which HNSW beats exact search by 10x (bench/vectors.py)


# Keys of tombstones; document numbers are 32-bit, so they never meet one.
_TOMBSTONE_KEYS = 1 << 63


class StaleVectors(HikmahError):
    """A vector file cannot be used (another model, damaged, missing): rebuild it."""


class Hits(NamedTuple):
    """Search results, most similar first: document numbers and cosine similarities."""

    ids: Ids
    similarities: npt.NDArray[np.float32]


class _Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: Kind
    stamp: ModelStamp
    count: int
    ledger_seq: int


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

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with the vector of each of ``ids`` (0 for an id not held):
        the semantic part of candidates the lexical channel found."""
        ...

    @property
    def ledger_seq(self) -> int:
        """The ledger sequence the vectors reflect (what a save recorded; 0 if new)."""
        ...

    def save(self, path: Path, *, ledger_seq: int) -> None:
        """Write the index to ``path`` atomically (temporary file, fsync, rename), noting
        that it reflects the ledger through ``ledger_seq``: after a crash the daemon
        embeds only the traces written after it."""
        ...


class _Stamped:
    """What both kinds carry: the model stamp and the ledger sequence of the last save."""

    def __init__(self, stamp: ModelStamp, ledger_seq: int = 0) -> None:
        self._stamp = stamp
        self._ledger_seq = ledger_seq

    @property
    def stamp(self) -> ModelStamp:
        return self._stamp

    @property
    def ledger_seq(self) -> int:
        return self._ledger_seq


class FlatIndex(_Stamped):
    """Exact search over int8 rows; removal moves the last row into the hole."""

    def __init__(self, stamp: ModelStamp) -> None:
        super().__init__(stamp)
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
        keys, rows = _checked(ids, vectors, self._stamp)
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
        q = _query(query, self._stamp)
        n = self._size
        sims = np.empty(n, dtype=np.float32)
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            block = self._codes[start:stop].astype(np.float32)
            np.multiply(block @ q, self._scales[start:stop], out=sims[start:stop])
        ids = self._ids[:n]
        if allowed is not None:
            keep = allowed(ids)
            ids, sims = ids[keep], sims[keep]
        return _top(ids, sims, k)

    def ids(self) -> Ids:
        return self._ids[: self._size].copy()

    def vectors(self, ids: npt.ArrayLike) -> Vectors:
        rows = self._rows(ids)
        if np.any(rows < 0):
            raise KeyError("an id is not held")
        return dequantize(self._codes[rows], self._scales[rows])

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> npt.NDArray[np.float32]:
        q = _query(query, self._stamp)
        rows = self._rows(ids)
        held = rows >= 0
        out = np.zeros(len(rows), dtype=np.float32)
        out[held] = (self._codes[rows[held]].astype(np.float32) @ q) * self._scales[rows[held]]
        return out

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

    def save(self, path: Path, *, ledger_seq: int) -> None:
        n = self._size
        header = _Header(kind="flat", stamp=self._stamp, count=n, ledger_seq=ledger_seq)

        def write(file: str) -> None:
            with open(file, "wb") as out:
                out.write(self._ids[:n].tobytes())
                out.write(self._scales[:n].tobytes())
                out.write(self._codes[:n].tobytes())

        _write_atomically(path, write, header)
        self._ledger_seq = ledger_seq

    @classmethod
    def _load(cls, path: Path, header: _Header) -> FlatIndex:
        index = cls(header.stamp)
        _Stamped.__init__(index, header.stamp, header.ledger_seq)
        n, d = header.count, header.stamp.dimensions
        if path.stat().st_size < n * (8 + 4 + d):
            raise StaleVectors(f"{path}: the vector file is shorter than its header says")
        with open(path, "rb") as file:
            ids = np.fromfile(file, dtype=np.uint64, count=n)
            scales = np.fromfile(file, dtype=np.float32, count=n)
            codes = np.fromfile(file, dtype=np.int8, count=n * d)
        if len(ids) != n or len(scales) != n or len(codes) != n * d:
            raise StaleVectors(f"{path}: the vector file is shorter than its header says")
        index._ids, index._scales, index._codes = ids, scales, codes.reshape(n, d)
        index._size = n
        if n:
            index._map(int(ids.max()) + 1)
            index._row_of[ids.astype(np.intp)] = np.arange(n)
        return index

    def _reserve(self, size: int) -> None:
        if size <= len(self._ids):
            return
        capacity = max(size, 2 * len(self._ids), 1024)
        grow = capacity - len(self._ids)
        self._ids = np.concatenate([self._ids, np.zeros(grow, dtype=np.uint64)])
        self._scales = np.concatenate([self._scales, np.zeros(grow, dtype=np.float32)])
        zeros = np.zeros((grow, self._stamp.dimensions), dtype=np.int8)
        self._codes = np.concatenate([self._codes, zeros])


class HnswIndex(_Stamped):
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
        expansion_search: int = 128,
    ) -> None:
        from usearch.index import Index  # noqa: PLC0415 -- small stores never need it

        super().__init__(stamp)
        self._index = Index(
            ndim=stamp.dimensions,
            metric="cos",
            dtype="i8",
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        self._tombstone = np.zeros(stamp.dimensions, dtype=np.float32)
        self._tombstone[0] = 1.0
        self._tombstones: list[int] = []  # resident tombstone keys, one per freed slot
        self._next_tombstone = _TOMBSTONE_KEYS

    @property
    def kind(self) -> Kind:
        return "hnsw"

    def __len__(self) -> int:
        return len(self._index) - len(self._tombstones)

    def add(self, ids: npt.ArrayLike, vectors: Vectors, *, threads: int = 1) -> None:
        """As :meth:`VectorIndex.add`; ``threads`` > 1 only for a bulk build off the loop."""
        keys, rows = _checked(ids, vectors, self._stamp)
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
        self._index.add(tombstones, np.tile(self._tombstone, (len(held), 1)), threads=1)
        self._tombstones += tombstones.tolist()
        return len(held)

    def search(self, query: Vectors, k: int, allowed: Allowed | None = None) -> Hits:
        q = _query(query, self._stamp)
        size = len(self._index)
        fetch = (k if allowed is None else max(4 * k, 32)) + min(len(self._tombstones), k)
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
        return normalize_rows(np.asarray(got, dtype=np.float32).reshape(-1, self._stamp.dimensions))

    def similarities(self, query: Vectors, ids: npt.ArrayLike) -> npt.NDArray[np.float32]:
        keys = _keys(ids)
        out = np.zeros(len(keys), dtype=np.float32)
        if not len(keys):
            return out
        held = self._index.contains(keys) & (keys < _TOMBSTONE_KEYS)
        if np.any(held):
            out[held] = self.vectors(keys[held]) @ _query(query, self._stamp)
        return out

    def save(self, path: Path, *, ledger_seq: int) -> None:
        header = _Header(kind="hnsw", stamp=self._stamp, count=len(self), ledger_seq=ledger_seq)
        _write_atomically(path, self._index.save, header)
        self._ledger_seq = ledger_seq

    @classmethod
    def _load(cls, path: Path, header: _Header, *, view: bool) -> HnswIndex:
        from usearch.index import Index  # noqa: PLC0415

        index = cls.__new__(cls)
        _Stamped.__init__(index, header.stamp, header.ledger_seq)
        restored = Index.restore(str(path), view=view)
        if restored is None or restored.ndim != header.stamp.dimensions:
            raise StaleVectors(f"{path}: not a usable usearch index")
        index._index = restored
        index._tombstone = np.zeros(header.stamp.dimensions, dtype=np.float32)
        index._tombstone[0] = 1.0
        keys = np.asarray(restored.keys, dtype=np.uint64)
        index._tombstones = keys[keys >= _TOMBSTONE_KEYS].tolist()
        index._next_tombstone = max(index._tombstones, default=_TOMBSTONE_KEYS - 1) + 1
        if len(keys) - len(index._tombstones) != header.count:
            raise StaleVectors(f"{path}: the index holds other vectors than its header says")
        return index


def build_index(
    stamp: ModelStamp,
    ids: npt.ArrayLike,
    vectors: Vectors,
    *,
    ann_at: int = ANN_AT,
    threads: int = 1,
) -> VectorIndex:
    """A new index of the right kind for this many vectors (the rebuild path).

    ``threads`` > 1 lets a bulk HNSW build use more cores; the daemon passes it
    only for a build it runs off the event loop.
    """
    keys, rows = _checked(ids, vectors, stamp)
    if len(keys) >= ann_at:
        hnsw = HnswIndex(stamp)
        hnsw.add(keys, rows, threads=threads)
        return hnsw
    flat = FlatIndex(stamp)
    flat.add(keys, rows)
    return flat


def load_index(path: Path, stamp: ModelStamp, *, view: bool = False) -> VectorIndex:
    """The index saved at ``path``, if it holds vectors of the model ``stamp`` names.

    ``view`` memory-maps an HNSW file instead of reading it (milliseconds at 1M
    vectors): a viewed index answers searches but refuses changes, so the
    daemon serves from a view while a full load runs in the background.

    Raises:
        StaleVectors: no file, a damaged one, or vectors of another model.
    """
    header = _read_header(path)
    if header.stamp != stamp:
        raise StaleVectors(
            f"{path}: vectors of {header.stamp.name} {header.stamp.version}"
            f" ({header.stamp.dimensions}-d), the model is {stamp.name} {stamp.version}"
            f" ({stamp.dimensions}-d)"
        )
    if header.kind == "flat":
        return FlatIndex._load(path, header)
    return HnswIndex._load(path, header, view=view)


def _read_header(path: Path) -> _Header:
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            if size < _TRAILER.size:
                raise StaleVectors(f"{path}: not a vector file")
            file.seek(size - _TRAILER.size)
            length, magic = _TRAILER.unpack(file.read(_TRAILER.size))
            if magic != MAGIC or length > size - _TRAILER.size:
                raise StaleVectors(f"{path}: not a vector file")
            file.seek(size - _TRAILER.size - length)
            return msgspec.json.decode(file.read(length), type=_Header)
    except OSError as exc:
        raise StaleVectors(f"{path}: cannot be read: {exc}") from None
    except msgspec.DecodeError as exc:
        raise StaleVectors(f"{path}: damaged vector header: {exc}") from None


def _write_atomically(path: Path, write: Callable[[str], object], header: _Header) -> None:
    temporary = path.with_name(path.name + ".tmp")
    write(str(temporary))
    encoded = msgspec.json.encode(header)
    with open(temporary, "ab") as out:
        out.write(encoded + _TRAILER.pack(len(encoded), MAGIC))
    fsync_file(temporary)
    os.replace(temporary, path)
    fsync_dir(path.parent)


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


def _top(ids: Ids, sims: npt.NDArray[np.float32], k: int) -> Hits:
    if len(ids) > k:
        part = np.argpartition(-sims, k - 1)[:k] if k > 0 else np.zeros(0, dtype=np.intp)
        ids, sims = ids[part], sims[part]
    order = np.lexsort((ids, -sims))  # ties: lower document number first, so runs repeat
    return Hits(ids[order], sims[order].astype(np.float32))
