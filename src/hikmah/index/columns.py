"""The feature rows held in memory as one contiguous array per field.

LMDB keeps feature rows in chunks of structured records (compact, one put
per change). Scoring gathers a few fields of thousands of candidates; a
gather from a contiguous column is several times faster than from a field
of a structured array, whose elements are 40 bytes apart. So the store
keeps a column copy, loaded on first use and patched chunk by chunk.

Recall also keeps columns derived from others (:meth:`Columns.derived`): a
value per document that only the policy and the document's own fields decide,
computed once for every document and then only for the chunks that change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hikmah.index.layout import CHUNK, FEATURES, FeatureArray

# Computes a derived column from the given fields' columns, row for row.
Derive = Callable[[Mapping[str, npt.NDArray[Any]]], npt.NDArray[Any]]
# Derived columns kept at once: one per policy in use (a reload makes a new one).
_MAX_DERIVED = 2


class FeatureColumns(Protocol):
    """What reads take of the feature columns (the present's :class:`Columns`, or the
    past's: :class:`hikmah.index.past.PastColumns`)."""

    size: int

    def __len__(self) -> int: ...

    def __getitem__(self, name: str) -> npt.NDArray[Any]: ...

    def take(self, names: Iterable[str], docs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]: ...

    def derived(self, key: Hashable, fields: tuple[str, ...], derive: Derive) -> npt.NDArray[Any]:
        """The column ``derive`` makes of ``fields`` (as :meth:`Columns.derived`)."""
        ...


class _Derived:
    __slots__ = ("column", "derive", "fields")

    def __init__(self, fields: tuple[str, ...], derive: Derive, column: npt.NDArray[Any]) -> None:
        self.fields, self.derive, self.column = fields, derive, column


class Columns:
    """Per-field arrays indexed by document number, ``size`` of them valid."""

    def __init__(self, capacity: int = CHUNK) -> None:
        self.size = 0
        self._arrays: dict[str, npt.NDArray[Any]] = {
            name: np.zeros(capacity, dtype=FEATURES[name])
            for name in FEATURES.names or ()
            if not name.startswith("_")
        }
        self._derived: dict[Hashable, _Derived] = {}
        # Held while chunks are copied in or a derived column is computed, so that a
        # derived column never misses a chunk copied in while it was being computed.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self._arrays[name][: self.size]

    def take(self, names: Iterable[str], docs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        """The named fields of the given documents, one gathered array each."""
        # Convert the index once: numpy converts a uint32 index to intp again for
        # every gather, which made gathering several times slower.
        at = np.asarray(docs, dtype=np.intp)
        return {name: self._arrays[name].take(at) for name in names}

    def derived(self, key: Hashable, fields: tuple[str, ...], derive: Derive) -> npt.NDArray[Any]:
        """The column ``derive`` makes of the columns ``fields``, row for row; ``key``
        names it (with whatever else ``derive`` depends on, such as policy weights).

        Computed for every row on first use, then kept and computed again only
        for the chunks copied in; the last few keys asked for are kept.
        """
        with self._lock:
            held = self._derived.pop(key, None)
            if held is None:
                column = derive({name: self._arrays[name] for name in fields})
                held = _Derived(fields, derive, column)
            self._derived[key] = held  # the newest last
            while len(self._derived) > _MAX_DERIVED:
                del self._derived[next(iter(self._derived))]
            return held.column[: self.size]

    def set_chunks(self, chunks: Iterable[tuple[int, FeatureArray]], size: int) -> None:
        """Copy whole chunks of rows in, growing the arrays to hold ``size`` rows."""
        with self._lock:
            capacity = len(next(iter(self._arrays.values())))
            needed = -(-size // CHUNK) * CHUNK  # whole chunks
            if needed > capacity:
                grown = max(needed, 2 * capacity)
                for name, array in self._arrays.items():
                    bigger = np.zeros(grown, dtype=array.dtype)
                    bigger[:capacity] = array
                    self._arrays[name] = bigger
                self._derived.clear()  # made again, whole, when next asked for
            for chunk, rows in chunks:
                start = chunk * CHUNK
                for name, array in self._arrays.items():
                    array[start : start + CHUNK] = rows[name]
                for held in self._derived.values():
                    part = {name: self._arrays[name][start : start + CHUNK] for name in held.fields}
                    held.column[start : start + CHUNK] = held.derive(part)
            self.size = size
