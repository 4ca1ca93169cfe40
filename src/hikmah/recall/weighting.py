"""The lexical part of the cue: how a trace's matched query terms become a score.

Two weightings, named by the policy key ``[recall] weighting``:

- ``"reference"``: the primary seed's formula, exactly. Coverage is the share
  of query terms the trace holds, the overlap is their Jaccard coefficient::

      coverage = |M| / |Q|        overlap = |M| / (|Q| + |T| - |M|)

- ``"idf-cosine"`` (the default): coverage weighs each query term by its
  inverse document frequency, so a rare identifier counts for more than
  "keep" or "use", and the overlap is the binary cosine, which shrinks with
  the square root of a trace's length instead of linearly, so a long trace
  (an agent session round) is not buried for being long::

      coverage = Σ_{t∈M} idf(t) / Σ_{t∈Q} idf(t)      overlap = |M| / sqrt(|Q| · |T|)
      idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))     (BM25's, always > 0)

Both then give ``lexical = max(coverage_weight · coverage + overlap_weight ·
overlap, match_floor)`` when any query term matches and 0 otherwise (``M``:
matched query terms, ``Q``: query terms, ``T``: the trace's distinct terms,
``N``: documents, ``df``: documents holding the term). The recall kernel
(``scoring.c``) computes both for every candidate; here are the names of the
weightings and each query term's idf, which recall sums over the posting lists
into ``matched_idf`` as it counts ``matched``.
"""

from __future__ import annotations

from typing import get_args

import numpy as np
import numpy.typing as npt

from hikmah.model.policy import Weighting

WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)

Floats = npt.NDArray[np.float64]


def inverse_document_frequency(df: npt.ArrayLike, documents: int) -> Floats:
    """BM25's idf of terms held by ``df`` of ``documents`` documents (> 0 even at df = N)."""
    d = np.asarray(df, dtype=np.float64)
    return np.log1p((documents - d + 0.5) / (d + 0.5))
