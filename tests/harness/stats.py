"""The one percentile every benchmark figure and test summary is computed with."""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (``0 <= q <= 100``) of ``values`` by linear interpolation
    between the two nearest ranks: rank ``q/100 * (n - 1)`` of the sorted values, as
    NumPy's default and ``statistics.quantiles(method="inclusive")`` compute it. So p0 is
    the least value, p100 the greatest, p50 the median of ``statistics.median``; one
    value is every percentile of itself; ``nan`` for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = q / 100 * (len(ordered) - 1)
    below = math.floor(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)
