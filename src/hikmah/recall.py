"""Resonance Recall (primary seed; REFERENCE.md, "Recall details").

Candidates come from the inverted index only (plus overdue commitments from
the deadline index); the listing mode, a query with neither terms nor tags,
is the one place that reads every feature row. Scoring runs over all
candidates at once on the feature columns (NumPy), then a short greedy pass
walks the best-scored candidates in score order, folds near-duplicates into
the results already chosen, penalises partial overlaps, and stops when
``limit`` results are chosen; they are returned by their penalised score.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.layout import (
    GLOBAL_SCOPE_ID,
    KIND_CODE,
    NO_DEADLINE,
    PRIVACY_CODE,
    STATUS_CODE,
    TAG_PREFIX,
    DocArray,
)
from hikmah.policy import KernelPolicy
from hikmah.queries import conflicts_for, superseded_by
from hikmah.snapshot import Snapshot
from hikmah.tokenizer import terms
from hikmah.trace import (
    Trace,
    normalize_claim_key,
    normalize_claim_value,
    normalize_content,
    normalize_tag,
)
from hikmah.vocabulary import STATUSES, Kind, Status

DAY_MS = 86_400_000
Floats = npt.NDArray[np.float64]


class RecallQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to recall (also the params of ``memory.recall``). An empty query with no
    tags lists traces by meta."""

    query: str = ""
    tags: tuple[str, ...] = ()
    kinds: tuple[Kind, ...] = ()
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    scope: str | None = None
    include_superseded: bool = False
    include_sensitive: bool = False
    # Only traces sharing at least this many of the query's terms (all of them
    # when the query has fewer): the agent hooks ask for 2 to stay quiet.
    min_matched_terms: Annotated[int, msgspec.Meta(ge=0, le=64)] = 0


class Why(msgspec.Struct, frozen=True, kw_only=True):
    """Every term of a result's score, so a person can see why it came back."""

    matched_terms: list[str]
    coverage: float
    jaccard: float
    lexical: float
    tag_coverage: float
    recency: float
    salience: float
    confidence: float
    provenance: float
    urgency: float
    feedback: float
    pinned: bool
    overdue: bool
    redundancy: float


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    trace: Trace
    status: Status
    score: float
    cue: float
    meta: float
    duplicates: int
    conflicts: list[str]
    supersedes: str | None
    superseded_by: str | None
    why: Why


class _Selected:
    """A result being assembled during folding."""

    __slots__ = ("claim", "content", "duplicates", "position", "score", "terms", "trace")

    def __init__(self, trace: Trace, position: int, score: float) -> None:
        self.trace = trace
        self.position = position
        self.score = score
        self.duplicates = 0
        self.terms = terms(trace.content)
        self.content = normalize_content(trace.content)
        self.claim = (
            None
            if trace.claim_key is None or trace.claim_value is None
            else (normalize_claim_key(trace.claim_key), normalize_claim_value(trace.claim_value))
        )

    def overlap(self, other: _Selected) -> float | None:
        """Content overlap, or None when the two claims contradict (never compared)."""
        mine, theirs = self.claim, other.claim
        if mine and theirs and mine[0] == theirs[0] and mine[1] != theirs[1]:
            return None
        if self.content == other.content:
            return 1.0
        union = len(self.terms | other.terms)
        return len(self.terms & other.terms) / union if union else 0.0


def recall(
    snapshot: Snapshot, query: RecallQuery, *, now_ms: int, policy: KernelPolicy
) -> list[RecallResult]:
    """The best ``min(limit, recall_limit)`` traces for ``query`` in ``snapshot``, best first."""
    limit = min(query.limit or policy.recall_limit, policy.recall_limit)
    q_terms = sorted(terms(query.query))
    q_tags = sorted({t for t in map(normalize_tag, query.tags) if t})
    if limit < 1 or (query.query.strip() and not q_terms and not q_tags):
        return []  # a query of stopwords only asks for nothing
    return _Scorer(snapshot, query, q_terms, q_tags, now_ms, policy).run(limit)


Rows = dict[str, npt.NDArray[Any]]
_FILTER_FIELDS = ("present", "status", "kind", "privacy", "scope")
_SCORE_FIELDS = (
    "nterms", "created", "deadline", "salience", "confidence", "authority", "verified",
    "feedback", "pinned",
)  # fmt: skip
# Slack for the float rounding between a bound and the score it bounds.
_EPSILON = 1e-9


class _Scorer:
    """One recall over one snapshot.

    Candidates are scored in tiers of equal upper bound, best tier first: a
    candidate's cue is bounded by its matched term and tag counts alone (the
    Jaccard overlap is at most coverage), and meta by the sum of its weights.
    Scoring stops once enough candidates beat every bound still unscored, so
    the feature columns of a common word's long tail are never gathered.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        query: RecallQuery,
        q_terms: list[str],
        q_tags: list[str],
        now_ms: int,
        policy: KernelPolicy,
    ) -> None:
        self.snapshot, self.features = snapshot, snapshot.features
        self.query, self.policy = query, policy
        self.q_terms, self.q_tags, self.now = q_terms, q_tags, now_ms
        self.listing = not q_terms and not q_tags

    def run(self, limit: int) -> list[RecallResult]:
        docs, matched, tagged, overdue = self._candidates()
        bound = self._upper_bounds(matched, tagged, overdue)
        tiers = [np.flatnonzero(bound == b) for b in np.unique(bound[bound >= 0])[::-1]]
        if not tiers:
            return []
        bounds = [float(bound[t[0]]) for t in tiers] + [-np.inf]
        need = _margin(limit)
        parts: list[Rows] = []
        scored_tiers = 0
        while scored_tiers < len(tiers):
            tier = tiers[scored_tiers]
            parts.append(self._score(docs[tier], matched[tier], tagged[tier]))
            scored_tiers += 1
            rest = bounds[scored_tiers]
            if sum(int(np.count_nonzero(part["score"] >= rest)) for part in parts) >= need:
                break
        results = self._select(_concat(parts), limit, bounds[scored_tiers])
        if results is None:
            # Folding consumed more than the margin: score every tier and select again.
            for tier in tiers[scored_tiers:]:
                parts.append(self._score(docs[tier], matched[tier], tagged[tier]))
            results = self._select(_concat(parts), limit, -np.inf)
        assert results is not None
        return results

    def _candidates(self) -> tuple[DocArray, Floats, Floats, npt.NDArray[np.bool_]]:
        """Candidate documents (ascending), their matched term and tag counts, and
        which of them are overdue commitments."""
        size = len(self.features)
        if self.listing:
            zeros = np.zeros(size)
            return np.arange(size, dtype=np.uint32), zeros, zeros, np.zeros(size, dtype=bool)
        term_lists = [self.snapshot.postings(t) for t in self.q_terms]
        tag_lists = [self.snapshot.postings(TAG_PREFIX + t) for t in self.q_tags]
        overdue = self.snapshot.overdue(self.now)
        total = sum(map(len, term_lists)) + sum(map(len, tag_lists)) + len(overdue)
        if total * 64 > size:
            # Dense enough that counting into an array of every document beats sorting.
            dense = [_dense_count(term_lists, size), _dense_count(tag_lists, size)]
            hit = np.zeros(size, dtype=bool)
            hit[overdue] = True
            for count in dense:
                if count is not None:
                    hit |= count > 0
            positions = np.flatnonzero(hit)  # intp: gathers with it are the fast kind
            docs = positions.astype(np.uint32)
            matched, tagged = (
                np.zeros(len(docs)) if count is None else count.take(positions).astype(np.float64)
                for count in dense
            )
            counts = matched, tagged
        else:
            term_docs, term_counts = _sparse_count(term_lists)
            tag_docs, tag_counts = _sparse_count(tag_lists)
            docs = np.unique(np.concatenate([term_docs, tag_docs, overdue]))
            counts = _align(docs, term_docs, term_counts), _align(docs, tag_docs, tag_counts)
        is_overdue = np.zeros(len(docs), dtype=bool)
        if len(overdue):
            is_overdue[np.searchsorted(docs, overdue)] = True
        need = min(self.query.min_matched_terms, len(self.q_terms))
        if need:
            keep = counts[0] >= need
            return docs[keep], counts[0][keep], counts[1][keep], is_overdue[keep]
        return docs, counts[0], counts[1], is_overdue

    def _upper_bounds(
        self, matched: Floats, tagged: Floats, overdue: npt.NDArray[np.bool_]
    ) -> Floats:
        """The best score each candidate could have; -1 where it cannot be recalled."""
        p = self.policy.recall
        if self.listing:
            return np.full(len(matched), np.inf)
        coverage = matched / max(len(self.q_terms), 1)
        lexical = np.where(
            matched > 0,
            np.maximum((p.lexical_coverage + p.lexical_jaccard) * coverage, p.match_floor),
            0.0,
        )
        cue = self._cue(lexical, tagged / max(len(self.q_tags), 1))
        meta = (
            p.meta_recency
            + p.meta_salience
            + p.meta_confidence
            + p.meta_provenance
            + p.meta_prospective
            + p.meta_feedback
        )
        bound = cue * (p.relevance_base + p.metadata_share * meta) * (1 + _EPSILON)
        bound[cue < self.policy.minimum_recall_score - _EPSILON] = -1.0
        bound[overdue] = np.inf
        return bound

    def _cue(self, lexical: Floats, tag_coverage: Floats) -> Floats:
        p = self.policy.recall
        if self.q_terms and self.q_tags:
            return p.cue_lexical * lexical + p.cue_tag * tag_coverage
        return lexical if self.q_terms else tag_coverage

    def _score(self, docs: DocArray, matched: Floats, tagged: Floats) -> Rows:
        """The scores of the candidates the query may see and recall.

        Only what folding needs is kept (document, score, time, and the counts
        to explain it later): the breakdown of a score is recomputed for the
        few results (:meth:`_breakdown`), not carried for every candidate.
        """
        rows = self.features.take(_FILTER_FIELDS, docs)
        wanted = self._wanted(rows)
        if not wanted.all():
            docs, matched, tagged = docs[wanted], matched[wanted], tagged[wanted]
        terms = self._breakdown(docs, matched, tagged)
        keep = terms["keep"]
        return {
            "doc": docs[keep],
            "score": terms["score"][keep],
            "created": terms["created"][keep],
            "matched": matched[keep],
            "tagged": tagged[keep],
        }

    def _breakdown(self, docs: DocArray, matched: Floats, tagged: Floats) -> Rows:
        """Every term of the score of these candidates, and which of them may be recalled."""
        rows = self.features.take((*_SCORE_FIELDS, "status", "kind"), docs)
        p = self.policy.recall

        n_q = max(len(self.q_terms), 1)
        coverage = matched / n_q
        jaccard = matched / np.maximum(n_q + rows["nterms"] - matched, 1)
        lexical = np.where(
            matched > 0,
            np.maximum(p.lexical_coverage * coverage + p.lexical_jaccard * jaccard, p.match_floor),
            0.0,
        )
        tag_coverage = tagged / max(len(self.q_tags), 1)
        cue = np.zeros(len(docs)) if self.listing else self._cue(lexical, tag_coverage)

        recency, provenance, urgency, feedback, overdue = self._meta_terms(rows)
        meta = (
            p.meta_recency * recency
            + p.meta_salience * rows["salience"]
            + p.meta_confidence * rows["confidence"]
            + p.meta_provenance * provenance
            + p.meta_prospective * urgency
            + p.meta_feedback * feedback
        )
        if self.listing:
            score = p.listing_scale * meta
            keep = np.ones(len(docs), dtype=bool)
        else:
            score = cue * (p.relevance_base + p.metadata_share * meta)
            score = np.where(overdue, np.maximum(score, p.overdue_floor), score)
            keep = (cue >= self.policy.minimum_recall_score) | overdue
        return {
            "score": score,
            "keep": keep,
            "cue": cue,
            "meta": meta,
            "coverage": coverage,
            "jaccard": jaccard,
            "lexical": lexical,
            "tag_coverage": tag_coverage,
            "recency": recency,
            "provenance": provenance,
            "urgency": urgency,
            "feedback": feedback,
            "overdue": overdue,
            "salience": rows["salience"],
            "confidence": rows["confidence"],
            "pinned": rows["pinned"],
            "created": rows["created"],
            "status": rows["status"],
        }

    def _wanted(self, rows: Rows) -> npt.NDArray[np.bool_]:
        """Which candidates the query may see at all (status, kind, privacy, scope)."""
        status = rows["status"]
        mask: npt.NDArray[np.bool_] = (rows["present"] == 1) & (status != STATUS_CODE["purged"])
        if not self.query.include_superseded:
            mask &= status != STATUS_CODE["superseded"]
        if self.query.kinds:
            wanted_kinds = np.zeros(len(KIND_CODE), dtype=bool)
            wanted_kinds[[KIND_CODE[k] for k in self.query.kinds]] = True
            mask &= wanted_kinds[rows["kind"]]
        else:
            mask &= rows["kind"] != KIND_CODE["prediction"]
        if not self.query.include_sensitive:
            mask &= rows["privacy"] != PRIVACY_CODE["sensitive"]
        if self.query.scope is not None:
            scope = self.snapshot.scope_id(self.query.scope)
            in_scope = rows["scope"] == GLOBAL_SCOPE_ID
            if scope is not None:
                in_scope |= rows["scope"] == scope
            mask &= in_scope
        return mask

    def _meta_terms(self, rows: Rows) -> tuple[Floats, Floats, Floats, Floats, Any]:
        p = self.policy.recall
        pinned = rows["pinned"] == 1
        age_days = np.maximum(self.now - rows["created"], 0) / DAY_MS
        # A pinned trace stays at full weight: it does not age, and bad outcomes
        # do not lower it (good ones still count).
        recency = np.where(pinned, 1.0, 1.0 / (1.0 + age_days / p.recency_scale_days))
        feedback = np.where(pinned, np.maximum(rows["feedback"], 0.0), rows["feedback"])
        provenance = rows["authority"] * np.where(
            rows["verified"] == 1, 1.0, p.unverified_provenance_factor
        )
        active = rows["status"] == STATUS_CODE["active"]
        dated = rows["deadline"] != NO_DEADLINE
        days_left = (rows["deadline"] - self.now) / DAY_MS
        commitment = rows["kind"] == KIND_CODE["commitment"]
        due = 1.0 / (1.0 + np.maximum(days_left, 0) / p.prospective_scale_days)
        urgency = np.where(
            active & dated,
            np.where(days_left <= 0, 1.0, due),
            np.where(active & commitment, p.undated_commitment_urgency, 0.0),
        )
        overdue = active & commitment & dated & (days_left <= 0)
        return recency, provenance, urgency, feedback.astype(np.float64), overdue

    def _select(self, scored: Rows, limit: int, unscored: float) -> list[RecallResult] | None:
        """Fold near-duplicates best first until ``limit`` results are chosen.

        The walk is in raw-score order, as in the reference, so the results of
        a limit are always among those of a larger one. Their order is by
        penalised score, so a larger limit may slot a result in between (a
        lazy greedy choice by penalised score would not, but it read ten times
        as many candidates on the benchmark and lost two evaluation cases).

        Returns None when that would need a candidate not scored yet (one whose
        bound is ``unscored``).
        """
        p = self.policy.recall
        score = scored["score"]
        selected: list[_Selected] = []
        redundancy: dict[int, float] = {}
        for i in _best_first(score, scored["created"], scored["doc"], limit):
            if len(selected) == limit:
                break
            if score[i] < unscored:
                return None
            trace = self.snapshot.trace_at(int(scored["doc"][i]))
            candidate = _Selected(trace, i, float(score[i]))
            overlaps = [(s, o) for s in selected if (o := s.overlap(candidate)) is not None]
            folded = next((s for s, o in overlaps if o >= p.redundant_at), None)
            if folded is not None:
                folded.duplicates += 1
                continue
            worst = max((o for _s, o in overlaps), default=0.0)
            candidate.score *= 1.0 - p.redundancy_penalty * worst
            redundancy[i] = worst
            selected.append(candidate)
        if len(selected) < limit and unscored > -np.inf:
            return None
        selected.sort(key=lambda s: (-s.score, -s.trace.created_at))
        chosen = np.array([s.position for s in selected], dtype=np.intp)
        terms = self._breakdown(
            scored["doc"][chosen], scored["matched"][chosen], scored["tagged"][chosen]
        )
        return [self._result(s, terms, j, redundancy[s.position]) for j, s in enumerate(selected)]

    def _result(self, chosen: _Selected, scored: Rows, i: int, redundancy: float) -> RecallResult:
        """A chosen candidate as a result; ``scored`` holds its breakdown at row ``i``."""
        trace = chosen.trace
        status: Status = STATUSES[int(scored["status"][i])]
        return RecallResult(
            trace=trace,
            status=status,
            score=chosen.score,
            cue=float(scored["cue"][i]),
            meta=float(scored["meta"][i]),
            duplicates=chosen.duplicates,
            conflicts=conflicts_for(self.snapshot, trace) if status == "active" else [],
            supersedes=trace.supersedes,
            superseded_by=superseded_by(self.snapshot, trace.id)
            if status == "superseded"
            else None,
            why=Why(
                matched_terms=[t for t in self.q_terms if t in chosen.terms],
                coverage=float(scored["coverage"][i]),
                jaccard=float(scored["jaccard"][i]),
                lexical=float(scored["lexical"][i]),
                tag_coverage=float(scored["tag_coverage"][i]),
                recency=float(scored["recency"][i]),
                salience=float(scored["salience"][i]),
                confidence=float(scored["confidence"][i]),
                provenance=float(scored["provenance"][i]),
                urgency=float(scored["urgency"][i]),
                feedback=float(scored["feedback"][i]),
                pinned=bool(scored["pinned"][i]),
                overdue=bool(scored["overdue"][i]),
                redundancy=redundancy,
            ),
        )


def _margin(limit: int) -> int:
    """Candidates to score beyond every unscored bound before folding starts."""
    return limit + 4


def _concat(parts: list[Rows]) -> Rows:
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _best_first(
    score: Floats, created: npt.NDArray[np.int64], docs: DocArray, limit: int
) -> Iterator[int]:
    """Positions in best-first order (ties newer first), sorting only what is read.

    Folding usually reads ``limit`` candidates and a few near-duplicates, so
    the best few are sorted first and the rest only if folding gets that far.
    """
    head = _margin(limit)

    def ordered(positions: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        keys = (-docs[positions].astype(np.int64), -created[positions], -score[positions])
        return positions[np.lexsort(keys)]

    everything = np.arange(len(score))
    if len(score) <= head:
        yield from ordered(everything).tolist()
        return
    threshold = -np.partition(-score, head)[head]
    yield from ordered(np.flatnonzero(score > threshold)).tolist()
    yield from ordered(np.flatnonzero(score <= threshold)).tolist()


def _dense_count(lists: list[DocArray], size: int) -> npt.NDArray[np.intp] | None:
    """How many of the lists hold each document, for every document (None: no lists)."""
    if not lists:
        return None
    return np.bincount(np.concatenate(lists), minlength=size)


def _sparse_count(lists: list[DocArray]) -> tuple[DocArray, Floats]:
    """The documents in any of the (sorted, distinct) lists, and in how many."""
    lists = [docs for docs in lists if len(docs)]
    if not lists:
        return np.empty(0, dtype=np.uint32), np.empty(0)
    if len(lists) == 1:
        return lists[0], np.ones(len(lists[0]))
    docs, counts = np.unique(np.concatenate(lists), return_counts=True)
    return docs.astype(np.uint32), counts.astype(np.float64)


def _align(target: DocArray, docs: DocArray, counts: Floats) -> Floats:
    """``counts`` re-indexed onto ``target`` (a superset of ``docs``), 0 elsewhere."""
    out = np.zeros(len(target))
    if len(docs):
        out[np.searchsorted(target, docs)] = counts
    return out
