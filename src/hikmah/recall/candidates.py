"""A recall's candidates: posting lists merged into them, another channel's documents
matched against them, and their grouping in tiers of falling bound.

Everything here is sized by the candidates, never by the store: the posting lists
are merged in one pass of the kernel (``scoring.c``), and a vector search's
documents are looked up in the merged ones by binary search.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from hikmah.index.layout import DocArray
from hikmah.recall import _scoring

Floats = npt.NDArray[np.float64]
# Columns by field name, row for row (a candidate's features, scores, breakdown).
Rows = dict[str, npt.NDArray[Any]]
MIN_TIER = 128  # candidates scored together at least (see grouped)


class Candidates(NamedTuple):
    """Lexical candidates (ascending), with what scoring needs of each."""

    docs: DocArray
    matched: Floats  # query terms held
    tagged: Floats  # query tags held
    matched_idf: Floats  # summed idf of the query terms held (idf-cosine only; else zeros)
    overdue: npt.NDArray[np.bool_]

    def take(self, positions: npt.NDArray[np.intp]) -> Candidates:
        return Candidates(
            self.docs[positions],
            self.matched[positions],
            self.tagged[positions],
            self.matched_idf[positions],
            self.overdue[positions],
        )


def merged(
    term_lists: list[DocArray], tag_lists: list[DocArray], overdue: DocArray, idf: Floats | None
) -> Candidates:
    """The documents in any of the (ascending, distinct) lists, ascending, with in how many
    term and tag lists each is, the summed ``idf`` of its term lists (zeros without), and
    whether it is overdue: one merge of the sorted lists, nothing sized by the store."""
    lists = tuple(np.asarray(held, dtype=np.uint32) for held in (*term_lists, *tag_lists, overdue))
    room = sum(len(held) for held in lists)
    docs, matched, tagged = np.empty(room, dtype=np.uint32), np.empty(room), np.empty(room)
    matched_idf, overdue_flags = np.empty(room), np.empty(room, dtype=bool)
    out = (docs, matched, tagged, matched_idf, overdue_flags)
    count = _scoring.merge(lists, len(term_lists), len(tag_lists), idf, out)
    return Candidates(
        docs[:count], matched[:count], tagged[:count], matched_idf[:count], overdue_flags[:count]
    )


def matches_of(found: Candidates, docs: DocArray) -> Candidates:
    """The documents ``docs`` (ascending) as candidates, with what ``found`` knows of those
    among it (a nearest vector may also be a lexical candidate) and no match for the rest."""
    zeros = np.zeros(len(docs))
    if not len(found.docs):
        return Candidates(docs, zeros, zeros, zeros, np.zeros(len(docs), dtype=bool))
    at, known = _places(found.docs, docs)
    return Candidates(
        docs,
        np.where(known, found.matched[at], 0.0),
        np.where(known, found.tagged[at], 0.0),
        np.where(known, found.matched_idf[at], 0.0),
        known & found.overdue[at],
    )


def _places(
    ascending: DocArray, docs: DocArray
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """Where each of ``docs`` is or would be in ``ascending`` (sorted, clipped to its
    last place), and which of them are in it."""
    if not len(ascending):
        return np.zeros(len(docs), dtype=np.intp), np.zeros(len(docs), dtype=np.bool_)
    at = np.minimum(np.searchsorted(ascending, docs), len(ascending) - 1)
    found: npt.NDArray[np.bool_] = ascending[at] == docs
    return at, found


def grouped(bound: Floats) -> tuple[list[npt.NDArray[np.intp]], list[float]]:
    """Candidates in groups of falling upper bound, and each group's bound (then -inf).

    Candidates of equal bound share a group, and groups of fewer than
    :data:`MIN_TIER` are merged with the next: each has a fixed cost, and
    IDF-weighted bounds make many small ones. Merging takes a few more
    candidates, never fewer than exactness needs (a group's bound is the best
    of all it holds).
    """
    order = np.empty(len(bound), dtype=np.int64)
    groups = _scoring.group((bound, order))
    if groups is None:  # past the kernel's 256 bounds: sort them all
        live = np.flatnonzero(bound >= 0)
        order = live[np.argsort(-bound[live], kind="stable")]
        ordered = bound[order]
        cuts = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    else:
        count, runs = groups
        order = order[:count]
        cuts = [start for start, _ in runs[1:]]
    if not len(order):
        return [], [-np.inf]
    kept, start = [], 0
    for cut in cuts:
        if cut - start >= MIN_TIER:
            kept.append(cut)
            start = cut
    tiers = np.split(order, kept)
    return tiers, [float(bound[tier[0]]) for tier in tiers] + [-np.inf]


def nth_best(values: Floats, n: int) -> float:
    """The ``n``-th largest of ``values`` (-inf when there are fewer, +inf for none)."""
    if n < 1:
        return np.inf
    if len(values) < n:
        return -np.inf
    return float(-np.partition(-values, n - 1)[n - 1])
