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
``N``: documents, ``df``: documents holding the term). Everything here works
on NumPy arrays of candidates at once; ``matched_idf`` comes from summing each
term's idf over its posting list, as ``matched`` comes from counting.
"""

from __future__ import annotations

from typing import NamedTuple, get_args

import numpy as np
import numpy.typing as npt

from hikmah.policy import Weighting

WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)

Floats = npt.NDArray[np.float64]


class Lexical(NamedTuple):
    """The terms of the lexical score of each candidate (what ``why`` shows)."""

    coverage: Floats
    overlap: Floats
    lexical: Floats


def inverse_document_frequency(df: npt.ArrayLike, documents: int) -> Floats:
    """BM25's idf of terms held by ``df`` of ``documents`` documents (> 0 even at df = N)."""
    d = np.asarray(df, dtype=np.float64)
    return np.log1p((documents - d + 0.5) / (d + 0.5))


def lexical_scores(
    weighting: Weighting,
    *,
    matched: Floats,
    n_query: int,
    nterms: npt.ArrayLike,
    matched_idf: Floats | None = None,
    query_idf: float = 0.0,
    coverage_weight: float,
    overlap_weight: float,
    match_floor: float,
) -> Lexical:
    """Coverage, overlap and the lexical score of candidates.

    Args:
        weighting: which formula.
        matched: query terms each candidate holds.
        n_query: distinct query terms.
        nterms: distinct terms of each candidate.
        matched_idf: the summed idf of the query terms each candidate holds
            (``idf-cosine`` only).
        query_idf: the summed idf of every query term (``idf-cosine`` only).
        coverage_weight, overlap_weight, match_floor: the policy's
            ``lexical_coverage``, ``lexical_jaccard`` and ``match_floor``.

    Raises:
        ValueError: ``idf-cosine`` without ``matched_idf``.
    """
    n_q = max(n_query, 1)
    length = np.asarray(nterms, dtype=np.float64)
    if weighting == "reference":
        coverage = matched / n_q
        overlap = matched / np.maximum(n_q + length - matched, 1)
    else:
        if matched_idf is None:
            raise ValueError("idf-cosine weighting needs matched_idf")
        coverage = matched_idf / query_idf if query_idf > 0 else matched / n_q
        overlap = matched / np.sqrt(n_q * np.maximum(length, np.maximum(matched, 1)))
    lexical = np.where(
        matched > 0,
        np.maximum(coverage_weight * coverage + overlap_weight * overlap, match_floor),
        0.0,
    )
    return Lexical(coverage, overlap, lexical)


def lexical_bound(
    weighting: Weighting,
    *,
    matched: Floats,
    n_query: int,
    matched_idf: Floats | None = None,
    query_idf: float = 0.0,
    coverage_weight: float,
    overlap_weight: float,
    match_floor: float,
) -> Floats:
    """The highest lexical score candidates with these counts can have, whatever
    their length: what recall's tiers prune by before reading any feature row.

    The overlap is at most coverage under ``reference`` (a trace holds at least
    the terms it matched) and at most ``sqrt(|M| / |Q|)`` under ``idf-cosine``.
    """
    n_q = max(n_query, 1)
    share = matched / n_q
    if weighting == "reference":
        best = (coverage_weight + overlap_weight) * share
    else:
        if matched_idf is None:
            raise ValueError("idf-cosine weighting needs matched_idf")
        coverage = matched_idf / query_idf if query_idf > 0 else share
        best = coverage_weight * coverage + overlap_weight * np.sqrt(share)
    return np.where(matched > 0, np.maximum(best, match_floor), 0.0)
