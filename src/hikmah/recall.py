"""Resonance Recall (primary seed; REFERENCE.md, "Recall details").

Candidates come from the inverted index only (plus overdue commitments from
the deadline index); the listing mode, a query with neither terms nor tags,
is the one place that reads every feature row. Scoring runs over all
candidates at once on the feature columns (NumPy), then a short greedy pass
folds near-duplicates over the best-scored candidates and stops as soon as
no remaining candidate can enter the top ``limit`` (its raw score is below
the lowest adjusted score already selected, and penalties only lower scores).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah import index
from hikmah.index import KIND_CODE, NO_DEADLINE, PRIVACY_CODE, STATUS_CODE, TAG_PREFIX, DocArray
from hikmah.policy import KernelPolicy
from hikmah.store import Store
from hikmah.tokenizer import terms
from hikmah.trace import (
    Kind,
    Status,
    Trace,
    normalize_claim_key,
    normalize_claim_value,
    normalize_content,
    normalize_tag,
)

DAY_MS = 86_400_000
Floats = npt.NDArray[np.float64]


class RecallQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What to recall. An empty query with no tags lists traces by meta."""

    query: str = ""
    tags: tuple[str, ...] = ()
    kinds: tuple[Kind, ...] = ()
    limit: int | None = None
    scope: str | None = None
    include_superseded: bool = False
    include_sensitive: bool = False


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
    store: Store, query: RecallQuery, *, now_ms: int, policy: KernelPolicy
) -> list[RecallResult]:
    """The best ``min(limit, recall_limit)`` traces for ``query``, best first."""
    limit = min(query.limit or policy.recall_limit, policy.recall_limit)
    q_terms = sorted(terms(query.query))
    q_tags = sorted({t for t in map(normalize_tag, query.tags) if t})
    if limit < 1 or (query.query.strip() and not q_terms and not q_tags):
        return []  # a query of stopwords only asks for nothing
    with store.read() as txn:
        features = store.features(txn)
        scorer = _Scorer(store, txn, features, query, q_terms, q_tags, now_ms, policy)
        return scorer.run(limit)


class _Scorer:
    def __init__(
        self,
        store: Store,
        txn: Any,
        features: index.FeatureArray,
        query: RecallQuery,
        q_terms: list[str],
        q_tags: list[str],
        now_ms: int,
        policy: KernelPolicy,
    ) -> None:
        self.store, self.txn, self.dbs = store, txn, store.dbs
        self.features, self.query, self.policy = features, query, policy
        self.q_terms, self.q_tags, self.now = q_terms, q_tags, now_ms

    def run(self, limit: int) -> list[RecallResult]:
        docs, matched, tagged = self._candidates()
        docs, matched, tagged = self._filter(docs, matched, tagged)
        if not len(docs):
            return []
        rows = self.features[docs]
        p = self.policy.recall
        listing = not self.q_terms and not self.q_tags

        n_q = max(len(self.q_terms), 1)
        nterms = rows["nterms"].astype(np.float64)
        coverage = matched / n_q
        jaccard = np.where(matched > 0, matched / np.maximum(n_q + nterms - matched, 1), 0.0)
        lexical = np.where(
            matched > 0,
            np.maximum(p.lexical_coverage * coverage + p.lexical_jaccard * jaccard, p.match_floor),
            0.0,
        )
        tag_coverage = tagged / max(len(self.q_tags), 1)
        if self.q_terms and self.q_tags:
            cue = p.cue_lexical * lexical + p.cue_tag * tag_coverage
        elif self.q_terms:
            cue = lexical
        else:
            cue = tag_coverage

        recency, provenance, urgency, overdue = self._meta_terms(rows)
        meta = (
            p.meta_recency * recency
            + p.meta_salience * rows["salience"]
            + p.meta_confidence * rows["confidence"]
            + p.meta_provenance * provenance
            + p.meta_prospective * urgency
        )
        if listing:
            cue = np.zeros(len(docs))
            score = p.listing_scale * meta
            keep = np.ones(len(docs), dtype=bool)
        else:
            score = cue * (p.relevance_base + p.metadata_share * meta)
            score = np.where(overdue, np.maximum(score, p.overdue_floor), score)
            keep = (cue >= self.policy.minimum_recall_score) | overdue
        picked = np.flatnonzero(keep)
        columns = {
            "coverage": coverage,
            "jaccard": jaccard,
            "lexical": lexical,
            "tag_coverage": tag_coverage,
            "cue": cue,
            "meta": meta,
            "recency": recency,
            "provenance": provenance,
            "urgency": urgency,
        }
        return self._select(docs, rows, score, picked, overdue, columns, limit)

    def _candidates(self) -> tuple[DocArray, Floats, Floats]:
        if not self.q_terms and not self.q_tags:
            docs = np.arange(len(self.features), dtype=np.uint32)
            zeros = np.zeros(len(docs))
            return docs, zeros, zeros
        term_docs, term_counts = _count(
            [index.postings(self.txn, self.dbs, t) for t in self.q_terms]
        )
        tag_docs, tag_counts = _count(
            [index.postings(self.txn, self.dbs, TAG_PREFIX + t) for t in self.q_tags]
        )
        docs = np.union1d(np.union1d(term_docs, tag_docs), self._overdue_docs())
        return docs, _align(docs, term_docs, term_counts), _align(docs, tag_docs, tag_counts)

    def _overdue_docs(self) -> DocArray:
        found: list[int] = []
        cursor = self.txn.cursor(db=self.dbs.deadlines)
        for key in cursor.iternext(values=False):
            deadline, docno = index.split_deadline_key(bytes(key))
            if deadline > self.now:
                break
            found.append(docno)
        return np.array(sorted(found), dtype=np.uint32)

    def _filter(
        self, docs: DocArray, matched: Floats, tagged: Floats
    ) -> tuple[DocArray, Floats, Floats]:
        rows = self.features[docs]
        statuses = [STATUS_CODE["active"], STATUS_CODE["fulfilled"]]
        if self.query.include_superseded:
            statuses.append(STATUS_CODE["superseded"])
        mask = (rows["present"] == 1) & np.isin(rows["status"], statuses)
        if self.query.kinds:
            mask &= np.isin(rows["kind"], [KIND_CODE[k] for k in self.query.kinds])
        else:
            mask &= rows["kind"] != KIND_CODE["prediction"]
        if not self.query.include_sensitive:
            mask &= rows["privacy"] != PRIVACY_CODE["sensitive"]
        if self.query.scope is not None:
            scope = index.scope_id(self.txn, self.dbs, self.query.scope, create=False)
            wanted = [index.GLOBAL_SCOPE_ID] + ([] if scope is None else [scope])
            mask &= np.isin(rows["scope"], wanted)
        return docs[mask], matched[mask], tagged[mask]

    def _meta_terms(self, rows: index.FeatureArray) -> tuple[Floats, Floats, Floats, Any]:
        p = self.policy.recall
        age_days = np.maximum(self.now - rows["created"], 0) / DAY_MS
        recency = 1.0 / (1.0 + age_days / p.recency_scale_days)
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
        return recency, provenance, urgency, overdue

    def _select(
        self,
        docs: DocArray,
        rows: index.FeatureArray,
        score: Floats,
        picked: npt.NDArray[np.intp],
        overdue: Any,
        columns: dict[str, Floats],
        limit: int,
    ) -> list[RecallResult]:
        p = self.policy.recall
        # Best first; ties newer first.
        order = picked[
            np.lexsort((-docs[picked].astype(np.int64), -rows["created"][picked], -score[picked]))
        ]
        selected: list[_Selected] = []
        redundancy: dict[int, float] = {}
        for position in order:
            raw = float(score[position])
            if len(selected) >= limit and raw < _kth(selected, limit):
                break
            candidate = _Selected(
                index.trace_at(self.txn, self.dbs, int(docs[position])), int(position), raw
            )
            overlaps = [(s, o) for s in selected if (o := s.overlap(candidate)) is not None]
            folded = next((s for s, o in overlaps if o >= p.redundant_at), None)
            if folded is not None:
                folded.duplicates += 1
                continue
            worst = max((o for _s, o in overlaps), default=0.0)
            candidate.score = raw * (1.0 - p.redundancy_penalty * worst)
            redundancy[candidate.position] = worst
            selected.append(candidate)
        selected.sort(key=lambda s: (-s.score, -s.trace.created_at))
        return [
            self._result(s, columns, rows, bool(overdue[s.position]), redundancy[s.position])
            for s in selected[:limit]
        ]

    def _result(
        self,
        chosen: _Selected,
        columns: dict[str, Floats],
        rows: index.FeatureArray,
        overdue: bool,
        redundancy: float,
    ) -> RecallResult:
        i = chosen.position
        trace = chosen.trace
        stored = self.store._stored(self.txn, trace.id)
        assert stored is not None
        return RecallResult(
            trace=trace,
            status=stored.status,
            score=chosen.score,
            cue=float(columns["cue"][i]),
            meta=float(columns["meta"][i]),
            duplicates=chosen.duplicates,
            conflicts=self.store.conflicts_for(self.txn, trace)
            if stored.status == "active"
            else [],
            supersedes=trace.supersedes,
            superseded_by=stored.superseded_by,
            why=Why(
                matched_terms=[t for t in self.q_terms if t in chosen.terms],
                coverage=float(columns["coverage"][i]),
                jaccard=float(columns["jaccard"][i]),
                lexical=float(columns["lexical"][i]),
                tag_coverage=float(columns["tag_coverage"][i]),
                recency=float(columns["recency"][i]),
                salience=float(rows["salience"][i]),
                confidence=float(rows["confidence"][i]),
                provenance=float(columns["provenance"][i]),
                urgency=float(columns["urgency"][i]),
                overdue=overdue,
                redundancy=redundancy,
            ),
        )


def _kth(selected: list[_Selected], k: int) -> float:
    return sorted((s.score for s in selected), reverse=True)[k - 1]


def _count(lists: list[DocArray]) -> tuple[DocArray, Floats]:
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
