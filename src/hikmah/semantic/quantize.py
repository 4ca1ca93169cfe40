"""Int8 quantisation of unit vectors, with the scale kept so cosine is recoverable.

Each row ``x`` is stored as ``codes = round(x / scale)`` in int8 with
``scale = max|x| / 127``, so ``codes · scale`` is ``x`` to within half a step
per dimension. For unit rows the cosine of a query ``q`` (float32, unit) and
a stored row is ``(codes · q) · scale``; measured on WordLlama vectors of
developer notes the error is below 0.002 on average (bench/vectors.py).
A zero row (a text the model found nothing in) keeps scale 0 and is similar
to nothing.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hikmah.semantic import _vectors

Codes = npt.NDArray[np.int8]
Scales = npt.NDArray[np.float32]

LEVELS = 127  # the largest code in size (LEVELS in vectors.c)


def quantize(vectors: npt.NDArray[np.floating]) -> tuple[Codes, Scales]:
    """Int8 codes and per-row scales for ``vectors`` (rows of any length).

    Raises:
        ValueError: ``vectors`` is not two-dimensional or holds NaN or infinity.
    """
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array, not {rows.ndim}-d")
    rows = np.ascontiguousarray(rows)
    codes, scales = np.empty(rows.shape, dtype=np.int8), np.empty(len(rows), dtype=np.float32)
    # max|x| / 127 and rint(x / scale) clipped, in float32, as NumPy computes them (C).
    _vectors.quantize(rows.reshape(-1), rows.shape[1], codes.reshape(-1), scales)
    return codes, scales


def dequantize(codes: Codes, scales: Scales) -> npt.NDArray[np.float32]:
    """The float32 rows that ``codes`` and ``scales`` stand for."""
    return codes.astype(np.float32) * scales[:, None]
