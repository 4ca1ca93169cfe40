"""Folding: the greedy walk that chooses a recall's results from its scored candidates.

The walk reads candidates best first (by raw score, ties newer first), folds a
near-duplicate into the result already chosen that it repeats, penalises a partial
overlap, and stops once ``recall_limit`` results are chosen, whatever the limit asked
for: so every top k is the start of the top k+1.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from hikmah.index.layout import DocArray
from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import RecallPolicy
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Trace, normalize_claim_key, normalize_claim_value, normalize_content
from hikmah.recall.candidates import Floats, Rows


class Selected:
    """A result being assembled during folding."""

    __slots__ = ("claim", "duplicates", "position", "redundancy", "score", "terms", "trace")

    def __init__(self, trace: Trace, position: int, score: float) -> None:
        self.trace = trace
        self.position = position
        self.score = score
        self.duplicates = 0
        self.redundancy = 0.0  # its worst overlap with a result chosen before it
        self.terms = terms(trace.content)
        self.claim = (
            None
            if trace.claim_key is None or trace.claim_value is None
            else (normalize_claim_key(trace.claim_key), normalize_claim_value(trace.claim_value))
        )

    def overlap(self, other: Selected) -> float | None:
        """Content overlap, or None when the two claims contradict (never compared): 1 for
        the same content (whitespace collapsed, lowercase), else the terms' Jaccard."""
        mine, theirs = self.claim, other.claim
        if mine and theirs and mine[0] == theirs[0] and mine[1] != theirs[1]:
            return None
        shared = len(self.terms & other.terms)  # the union's size follows: no set made of it
        union = len(self.terms) + len(other.terms) - shared
        if union:
            # The same content has the same terms (they are lowercase and split at
            # whitespace), so its Jaccard is 1 too: contents are compared only here.
            return shared / union
        same = normalize_content(self.trace.content) == normalize_content(other.trace.content)
        return 1.0 if same else 0.0


def fold(
    snapshot: Snapshot, scored: Rows, depth: int, unscored: float, policy: RecallPolicy
) -> list[Selected] | None:
    """Fold near-duplicates best first until ``depth`` results are chosen from
    ``scored`` (rows of document, score, time); the results in their order.

    The walk is in raw-score order, as in the reference, and chooses
    ``depth`` (the policy's ``recall_limit``) results whatever the limit
    asked for; they are ordered by penalised score, and a limit takes the
    first of them. So the top k is the start of the top k+1 at the cost of
    folding a few more candidates for a short limit (a lazy greedy choice
    by penalised score is stable too, but read ten times as many
    candidates on the benchmark and lost two evaluation cases;
    docs/storage.md).

    Returns None when that would need a candidate not scored yet (one whose
    bound is ``unscored``).
    """
    score = scored["score"]
    selected: list[Selected] = []
    for i in best_first(score, scored["created"], scored["doc"], depth):
        if len(selected) == depth:
            break
        if score[i] < unscored:
            return None
        trace = snapshot.trace_at(int(scored["doc"][i]))
        candidate = Selected(trace, i, float(score[i]))
        overlaps = [(s, o) for s in selected if (o := s.overlap(candidate)) is not None]
        folded = next((s for s, o in overlaps if o >= policy.redundant_at), None)
        if folded is not None:
            folded.duplicates += 1
            continue
        worst = max((o for _s, o in overlaps), default=0.0)
        candidate.score *= 1.0 - policy.redundancy_penalty * worst
        candidate.redundancy = worst
        selected.append(candidate)
    if len(selected) < depth and unscored > -np.inf:
        return None
    # Ties newer first, then by id: document numbers follow arrival order, which
    # differs between synced devices, and ids do not.
    selected.sort(key=lambda s: s.trace.id, reverse=True)
    selected.sort(key=lambda s: (-s.score, -s.trace.created_at))
    return selected


def margin(limit: int) -> int:
    """Candidates to score beyond every unscored bound before folding starts."""
    return limit + 4


def top(
    score: Floats, created: npt.NDArray[np.int64], docs: DocArray, count: int
) -> npt.NDArray[np.intp]:
    """The positions of the ``count`` best (ties newer first), best first."""
    if len(score) <= count:
        return _ranked(score, created, docs)
    threshold = -np.partition(-score, count - 1)[count - 1]
    return _ranked(score, created, docs, np.flatnonzero(score >= threshold))[:count]


def best_first(
    score: Floats, created: npt.NDArray[np.int64], docs: DocArray, limit: int
) -> Iterator[int]:
    """Positions in best-first order (ties newer first), sorting only what is read.

    Folding usually reads ``limit`` candidates and a few near-duplicates, so
    the best few are sorted first and the rest only if folding gets that far.
    """
    head = margin(limit)
    if len(score) <= head:
        yield from _ranked(score, created, docs).tolist()
        return
    threshold = -np.partition(-score, head)[head]
    yield from _ranked(score, created, docs, np.flatnonzero(score > threshold)).tolist()
    yield from _ranked(score, created, docs, np.flatnonzero(score <= threshold)).tolist()


def _ranked(
    score: Floats,
    created: npt.NDArray[np.int64],
    docs: DocArray,
    positions: npt.NDArray[np.intp] | None = None,
) -> npt.NDArray[np.intp]:
    """``positions`` (all by default) best first: by score, ties newer first."""
    if positions is None:
        positions = np.arange(len(score))
    keys = (-docs[positions].astype(np.int64), -created[positions], -score[positions])
    return positions[np.lexsort(keys)]
