"""The feature rows held in memory as one contiguous array per field.

LMDB keeps feature rows in chunks of structured records (compact, one put
per change). Scoring gathers a few fields of thousands of candidates; a
gather from a contiguous column is several times faster than from a field
of a structured array, whose elements are 40 bytes apart. So the store
keeps a column copy, loaded on first use and patched chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hikmah.layout import CHUNK, FEATURES, FeatureArray


class FeatureColumns(Protocol):
    """What reads take of the feature columns (the present's :class:`Columns`, or the
    past's: :class:`hikmah.past.PastColumns`)."""

    size: int

    def __len__(self) -> int: ...

    def __getitem__(self, name: str) -> npt.NDArray[Any]: ...

    def take(self, names: Iterable[str], docs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]: ...


class Columns:
    """Per-field arrays indexed by document number, ``size`` of them valid."""

    def __init__(self, capacity: int = CHUNK) -> None:
        self.size = 0
        self._arrays: dict[str, npt.NDArray[Any]] = {
            name: np.zeros(capacity, dtype=FEATURES[name])
            for name in FEATURES.names or ()
            if not name.startswith("_")
        }

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

    def set_chunks(self, chunks: Iterable[tuple[int, FeatureArray]], size: int) -> None:
        """Copy whole chunks of rows in, growing the arrays to hold ``size`` rows."""
        capacity = len(next(iter(self._arrays.values())))
        needed = -(-size // CHUNK) * CHUNK  # whole chunks
        if needed > capacity:
            grown = max(needed, 2 * capacity)
            for name, array in self._arrays.items():
                bigger = np.zeros(grown, dtype=array.dtype)
                bigger[:capacity] = array
                self._arrays[name] = bigger
        for chunk, rows in chunks:
            start = chunk * CHUNK
            for name, array in self._arrays.items():
                array[start : start + CHUNK] = rows[name]
        self.size = size
