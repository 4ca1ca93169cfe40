"""Resonance Recall (docs/storage.md, "Recall without a scan"), with the semantic
channel blended into its cue (docs/semantic.md).

Candidates come from the inverted index only (plus overdue commitments from
the deadline index, :mod:`hikmah.recall.candidates`); the listing mode, a query with
neither terms nor tags, is the one place that reads every feature row. Scoring runs
on the feature columns, gathered with NumPy and scored by the kernel (``scoring.c``:
the whole formula of a candidate in one pass, :mod:`hikmah.recall.params`), a tier of
candidates at a time in falling order of the best score each could have, until no
candidate left could enter (:meth:`_Scorer._tiers`: a common word's thousands of
candidates are bounded, not scored); then a short greedy pass
(:mod:`hikmah.recall.folding`) walks the best-scored candidates in score order, folds
near-duplicates into the results already chosen, penalises partial overlaps, and
stops when ``recall_limit`` results are chosen, whatever the limit asked for; they
are ordered by their penalised score and the first ``limit`` returned. So every
top k is the start of the top k+1.

The lexical cue follows ``[recall] weighting`` (:mod:`hikmah.recall.weighting`).
With the semantic channel on and its vectors ready (:mod:`hikmah.semantic.store_vectors`),
the candidates are the best by lexical score that the walk may read and the
``[semantic] candidates`` nearest vectors the query may see (at least as
many; the same status, kind, privacy and scope rules: one filter serves
both), and their cue is the lexical one with
the semantic part blended in (the kernel, ``scoring.c``; :mod:`hikmah.recall.fusion`);
the gate, meta, the overdue floor and folding are the same for both channels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.index.layout import (
    GLOBAL_SCOPE_ID,
    KIND_CODE,
    PRIVACY_CODE,
    SOURCE_CODE,
    STATUS_CODE,
    TAG_PREFIX,
)
from hikmah.index.queries import conflicts_for, superseded_by
from hikmah.index.review import HELD_FIELDS, held_rows
from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import Blend, KernelPolicy
from hikmah.model.recall import RecallQuery, RecallResult, Why
from hikmah.model.tokenizer import terms
from hikmah.model.trace import normalize_tag
from hikmah.model.vocabulary import STATUSES, Status
from hikmah.recall import _scoring, folding, fusion
from hikmah.recall.candidates import MIN_TIER, Candidates, Floats, Rows, grouped, merged, nth_best
from hikmah.recall.folding import Selected
from hikmah.recall.fusion import QueryEmbedding, Semantic, embed_now
from hikmah.recall.params import FIXED_FIELDS, SCORE_FIELDS, WHY, fixed_meta, kernel_params
from hikmah.recall.weighting import inverse_document_frequency
from hikmah.semantic.embedding import Vectors
from hikmah.semantic.store_vectors import SemanticIndex

_FILTER_FIELDS = ("present", "status", "kind", "privacy", "scope")


def recall(
    snapshot: Snapshot,
    query: RecallQuery,
    *,
    now_ms: int,
    policy: KernelPolicy,
    vectors: SemanticIndex | None = None,
    embed: QueryEmbedding = embed_now,
    hide_held: bool = False,
) -> list[RecallResult]:
    """The best ``min(limit, recall_limit)`` traces for ``query`` in ``snapshot``, best first.

    ``vectors``: the store's semantic index (None: the channel is off or not loaded).
    ``embed`` makes the query's vector when the semantic channel takes part: it is
    started before the lexical candidates are gathered and waited for after.
    ``hide_held``: for an agent, never a trace held for the person's review
    (:mod:`hikmah.index.review`)."""
    limit = min(query.limit or policy.recall_limit, policy.recall_limit)
    q_terms = sorted(terms(query.query))
    q_tags = sorted({t for t in map(normalize_tag, query.tags) if t})
    if limit < 1 or (query.query.strip() and not q_terms and not q_tags):
        return []  # a query of stopwords only asks for nothing
    scorer = _Scorer(snapshot, vectors, query, q_terms, q_tags, now_ms, policy, embed, hide_held)
    return scorer.run()[:limit]


class _Scorer:
    """One recall over one snapshot.

    Candidates are scored in tiers of equal upper bound, best tier first: a
    candidate's cue is bounded by its matched terms and tags alone (the
    overlap is at most what coverage allows), and meta by the sum of its
    weights. Scoring stops once enough candidates beat every bound still
    unscored, so the feature columns of a common word's long tail are never
    gathered.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        vectors: SemanticIndex | None,
        query: RecallQuery,
        q_terms: list[str],
        q_tags: list[str],
        now_ms: int,
        policy: KernelPolicy,
        embed: QueryEmbedding,
        hide_held: bool = False,
    ) -> None:
        self.snapshot, self.features, self.vectors = snapshot, snapshot.features, vectors
        self.query, self.policy = query, policy
        self.q_terms, self.q_tags, self.now = q_terms, q_tags, now_ms
        self.listing = not q_terms and not q_tags
        self.hide_held = hide_held
        chosen = (("source", query.sources), ("verified", query.verified is not None))
        fields = _FILTER_FIELDS + tuple(name for name, asked in chosen if asked)
        if hide_held:
            fields += tuple(name for name in HELD_FIELDS if name not in fields)
        self.filter_fields = fields
        self.weighting = policy.recall.weighting
        self.query_idf = 0.0
        self.params: _scoring.Params  # the kernel's: set by _candidates (the query's idf)
        self.semantic: Semantic | None = None  # the vectors and the query's, once made
        self._vector = self._start_embedding(embed)
        index = vectors
        self.blend = policy.semantic.blend(
            index.model if index is not None else policy.semantic.model
        )

    def _params(self, blend: Blend | None = None) -> _scoring.Params:
        return kernel_params(
            self.policy,
            blend=blend or self.blend,
            now_ms=self.now,
            listing=self.listing,
            n_query=len(self.q_terms),
            n_tags=len(self.q_tags),
            query_idf=self.query_idf,
        )

    def _start_embedding(self, embed: QueryEmbedding) -> Callable[[], Vectors | None] | None:
        """The query's vector on its way, when the channel takes part in this recall."""
        index = self.vectors
        if (
            self.listing
            or not self.policy.semantic.enabled
            or index is None
            or not index.serving
            or not self.query.query.strip()
        ):
            return None
        return embed(index, self.query.query)

    def _semantic(self) -> Semantic | None:
        """The vectors and the query's own (waited for), when the channel takes part."""
        index = self.vectors
        if self._vector is None or index is None:
            return None
        vector = self._vector()
        return None if vector is None else Semantic(index, vector)

    def run(self) -> list[RecallResult]:
        # The walk always chooses recall_limit results, whatever the limit asked
        # for, so that every shorter list is the start of a longer one.
        depth = self.policy.recall_limit
        found = self._candidates()
        need = folding.margin(depth)
        tiers = self._tiers(found, need)
        parts: list[Rows] = []
        rest = -np.inf
        for tier, rest in tiers:
            parts.append(self._score(found.take(tier)))
            if sum(int(np.count_nonzero(part["score"] >= rest)) for part in parts) >= need:
                break
        self.semantic = self._semantic()
        if self.semantic is not None:
            pool, explained = self._fused(
                _concat(parts) if parts else None, found, self.semantic, depth
            )
            results = self._select(pool, depth, -np.inf, explained)
        elif not parts:
            return []
        else:
            results = self._select(_concat(parts), depth, rest)
            if results is None:
                # Folding consumed more than the margin: score every tier and select again.
                parts.extend(self._score(found.take(tier)) for tier, _ in tiers)
                results = self._select(_concat(parts), depth, -np.inf)
        assert results is not None
        return results

    def _candidates(self) -> Candidates:
        """Candidate documents (ascending), their matched term and tag counts (and summed
        idf), and which of them are overdue commitments."""
        size = len(self.features)
        if self.listing:
            self.params = self._params()
            zeros = np.zeros(size)
            everyone = np.arange(size, dtype=np.uint32)
            return Candidates(everyone, zeros, zeros, zeros, np.zeros(size, dtype=bool))
        term_lists = [self.snapshot.postings(t) for t in self.q_terms]
        tag_lists = [self.snapshot.postings(TAG_PREFIX + t) for t in self.q_tags]
        overdue = self.snapshot.overdue(self.now)
        # Each term's idf, by how many documents hold it (idf-cosine weighs by it).
        idf = None
        if self.weighting == "idf-cosine" and term_lists:
            idf = inverse_document_frequency([len(docs) for docs in term_lists], size)
            self.query_idf = float(idf.sum())
        found = merged(term_lists, tag_lists, overdue, idf)
        self.params = self._params()
        need = min(self.query.min_matched_terms, len(self.q_terms))
        return found.take(np.flatnonzero(found.matched >= need)) if need else found

    def _tiers(self, found: Candidates, need: int) -> Iterator[tuple[npt.NDArray[np.intp], float]]:
        """Candidates (positions in ``found``) in tiers of falling upper bound, each tier
        with the best bound of every candidate after it (-inf after the last); ``need``:
        how many must beat every bound left before the walk may stop.

        Two bounds, best first. The first (:meth:`_upper_bounds`) is of matched
        terms and tags alone and costs nothing. Candidates are taken by it in
        groups, and a group is bounded again by a few of its features
        (:meth:`_feature_bounds`), nearly its score: a common word's
        thousands of candidates share one first bound, and the second leaves
        a tier or two of them to score.
        """
        first = self._upper_bounds(found)
        groups, floors = grouped(first)
        if self.listing:
            yield from ((group, floor) for group, floor in zip(groups, floors[1:], strict=True))
            return
        held, bound = np.zeros(0, dtype=np.intp), np.zeros(0)  # bounded again, not yet taken
        taken, size = 0, MIN_TIER
        while True:
            # Bound again the next group while the walk could not stop before it: while
            # fewer than ``need`` of those held could beat its first bound.
            while taken < len(groups) and (not len(bound) or floors[taken] > nth_best(bound, need)):
                group = groups[taken]
                again = self._feature_bounds(found.take(group))
                live = again >= 0
                held = np.concatenate([held, group[live]])
                bound = np.concatenate([bound, again[live]])
                taken += 1
            floor = floors[taken]
            if len(held) <= size:
                if len(held):
                    yield held, floor
                if taken == len(groups):
                    return
                held, bound = held[:0], bound[:0]
                continue
            best = np.argpartition(-bound, size)
            yield held[best[:size]], max(float(bound[best[size]]), floor)
            held, bound = held[best[size:]], bound[best[size:]]
            size *= 4  # a long walk (folding, or a fall back to everything) takes more at once

    def _upper_bounds(self, found: Candidates) -> Floats:
        """The best score each candidate could have by its matched terms and tags alone;
        -1 where it cannot be recalled."""
        if self.listing:
            return np.full(len(found.docs), np.inf)
        bound = np.empty(len(found.docs))
        _scoring.first_bound(
            self.params, (found.matched, found.tagged, found.matched_idf, found.overdue, bound)
        )
        return bound

    def _feature_bounds(self, found: Candidates) -> Floats:
        """The best score each candidate could have by its features; -1 where it cannot
        be recalled.

        Its lexical score and meta are exact but for urgency, which changes with
        the clock and counts in full for every commitment and dated trace: only
        a commitment or a trace near its deadline scores below its bound.
        """
        rows = self.features.take(("nterms", "created", "pinned", "feedback"), found.docs)
        fixed = self.features.derived(
            (fixed_meta, self.policy), FIXED_FIELDS, partial(fixed_meta, self.policy)
        )
        bound = np.empty(len(found.docs))
        _scoring.feature_bound(
            self.params,
            (
                found.matched,
                found.tagged,
                found.matched_idf,
                found.overdue,
                rows["nterms"],
                rows["created"],
                rows["pinned"],
                rows["feedback"],
                fixed.take(np.asarray(found.docs, dtype=np.intp)),
                bound,
            ),
        )
        return bound

    def _score(self, found: Candidates, sims: Floats | None = None) -> Rows:
        """The scores of the candidates the query may see and recall (fused with their
        similarities ``sims`` when given; NaN: no vector).

        Only what folding needs is kept (document, score, time, and the counts
        to explain it later): the breakdown of a score is recomputed for the
        few results (:meth:`_breakdown`), not carried for every candidate.
        """
        return self._scored(found, sims, explain=False)[0]

    def _scored(
        self, found: Candidates, sims: Floats | None, *, explain: bool, seen: bool = False
    ) -> tuple[Rows, Rows | None]:
        """:meth:`_score`'s rows and, with ``explain``, the breakdown of each (row for
        row): for a pool small enough that carrying it costs less than computing the
        results' again. ``seen``: every candidate passed the query's filter already."""
        if not seen:
            wanted = self._wanted(self.features.take(self.filter_fields, found.docs))
            if not wanted.all():
                keep_wanted = np.flatnonzero(wanted)
                found = found.take(keep_wanted)
                sims = None if sims is None else sims[keep_wanted]
        terms = self._breakdown(found, sims, explain=explain)
        # Nothing to drop (the usual case): no copies of every column.
        keep: npt.NDArray[np.bool_] | slice = slice(None) if terms["keep"].all() else terms["keep"]
        docs = found.docs[keep]
        rows = {
            "doc": docs,
            "score": terms["score"][keep],
            "created": terms["created"][keep],
            "matched": found.matched[keep],
            "tagged": found.tagged[keep],
            "matched_idf": found.matched_idf[keep],
            "overdue": found.overdue[keep],
            "sim": np.full(len(docs), np.nan) if sims is None else sims[keep],
        }
        explained = {name: column[keep] for name, column in terms.items()} if explain else None
        return rows, explained

    def _breakdown(self, found: Candidates, sims: Floats | None, *, explain: bool = True) -> Rows:
        """The score of these candidates and which of them may be recalled, with every
        term of the score (what ``why`` shows) when ``explain``; without it only
        ``score``, ``keep`` and ``created`` (scoring thousands of candidates of a common
        word, most of them never shown)."""
        rows = self.features.take(SCORE_FIELDS, found.docs)
        size = len(found.docs)
        score, keep = np.empty(size), np.empty(size, dtype=bool)
        why: Rows | None = None
        if explain:
            why = {name: np.empty(size, dtype=dtype) for name, dtype in WHY}
        _scoring.score(
            self.params,
            (
                found.matched,
                found.tagged,
                found.matched_idf,
                *(rows[name] for name in SCORE_FIELDS),
                sims,
                score,
                keep,
            ),
            None if why is None else tuple(why.values()),
        )
        if why is None:
            return {"score": score, "keep": keep, "created": rows["created"]}
        return {
            "score": score,
            "keep": keep,
            **why,
            "semantic": np.full(size, np.nan) if sims is None else sims,
            "salience": rows["salience"],
            "confidence": rows["confidence"],
            "pinned": rows["pinned"],
            "created": rows["created"],
            "status": rows["status"],
        }

    def _fused(
        self, lexical: Rows | None, found: Candidates, semantic: Semantic, depth: int
    ) -> tuple[Rows, Rows]:
        """The candidates of both channels with their fused scores, and their breakdown:
        the best by lexical score (as many as the walk may read) and the ``candidates``
        nearest vectors the query may see (no fewer)."""
        union, sims = fusion.pool(
            lexical,
            found,
            semantic,
            depth=depth,
            nearest=self.policy.semantic.candidates,
            allowed=self._allowed,
            need=min(self.query.min_matched_terms, len(self.q_terms)),
        )
        if not fusion.on_topic(union, sims, self.blend):
            # Nothing here is about the question: no trace is recalled on meaning alone.
            self.params = self._params(msgspec.structs.replace(self.blend, alone=math.inf))
        # The pool passed the filter when its tier was scored, the nearest in the search.
        scored, explained = self._scored(union, sims, explain=True, seen=True)
        assert explained is not None
        return scored, explained

    def _allowed(self, ids: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        """Which documents the query may see, for the vector search (vectors may hold
        documents written after this snapshot: those it may not)."""
        inside = ids < len(self.features)
        keep = np.zeros(len(ids), dtype=bool)
        if inside.any():
            rows = self.features.take(self.filter_fields, ids[inside].astype(np.intp))
            keep[inside] = self._wanted(rows)
        return keep

    def _wanted(self, rows: Rows) -> npt.NDArray[np.bool_]:
        """Which candidates the query may see at all (status, kind, privacy, scope)."""
        status = rows["status"]
        mask: npt.NDArray[np.bool_] = (rows["present"] == 1) & (status != STATUS_CODE["purged"])
        if self.query.statuses:
            mask &= _among(status, [STATUS_CODE[s] for s in self.query.statuses], STATUS_CODE)
        elif not self.query.include_superseded:
            mask &= status != STATUS_CODE["superseded"]
        if self.query.sources:
            sources = [SOURCE_CODE[s] for s in self.query.sources]
            mask &= _among(rows["source"], sources, SOURCE_CODE)
        if self.query.verified is not None:
            mask &= rows["verified"] == int(self.query.verified)
        if self.query.kinds:
            mask &= _among(rows["kind"], [KIND_CODE[k] for k in self.query.kinds], KIND_CODE)
        else:
            mask &= rows["kind"] != KIND_CODE["prediction"]
        if not self.query.include_sensitive:
            mask &= rows["privacy"] != PRIVACY_CODE["sensitive"]
        if self.hide_held:
            mask &= ~held_rows(rows, self.policy.review)
        if self.query.scope is not None:
            scope = self.snapshot.scope_id(self.query.scope)
            in_scope = rows["scope"] == GLOBAL_SCOPE_ID
            if scope is not None:
                in_scope |= rows["scope"] == scope
            mask &= in_scope
        return mask

    def _select(
        self, scored: Rows, depth: int, unscored: float, explained: Rows | None = None
    ) -> list[RecallResult] | None:
        """The results :func:`~hikmah.recall.folding.fold` chooses (None when it would
        need a candidate not scored yet); their breakdown is taken from ``explained``
        (row for row with ``scored``) when given, else computed for them."""
        selected = folding.fold(self.snapshot, scored, depth, unscored, self.policy.recall)
        if selected is None:
            return None
        chosen = np.array([s.position for s in selected], dtype=np.intp)
        if explained is not None:
            terms = {name: column[chosen] for name, column in explained.items()}
        else:
            found = Candidates(
                scored["doc"][chosen],
                scored["matched"][chosen],
                scored["tagged"][chosen],
                scored["matched_idf"][chosen],
                scored["overdue"][chosen],
            )
            sims = None if self.semantic is None else scored["sim"][chosen]
            terms = self._breakdown(found, sims)
        values = {name: column.tolist() for name, column in terms.items()}  # one pass a column
        return [self._result(s, values, j) for j, s in enumerate(selected)]

    def _result(self, chosen: Selected, scored: dict[str, list[Any]], i: int) -> RecallResult:
        """A chosen candidate as a result; ``scored`` holds its breakdown at row ``i``."""
        trace = chosen.trace
        status: Status = STATUSES[scored["status"][i]]
        similarity = scored["semantic"][i]
        return RecallResult(
            trace=trace,
            status=status,
            score=chosen.score,
            cue=scored["cue"][i],
            meta=scored["meta"][i],
            duplicates=chosen.duplicates,
            conflicts=conflicts_for(self.snapshot, trace) if status == "active" else [],
            supersedes=trace.supersedes,
            superseded_by=superseded_by(self.snapshot, trace.id)
            if status == "superseded"
            else None,
            why=Why(
                matched_terms=[t for t in self.q_terms if t in chosen.terms],
                weighting=self.weighting,
                coverage=scored["coverage"][i],
                jaccard=scored["jaccard"][i],
                overlap=scored["overlap"][i],
                lexical=scored["lexical"][i],
                tag_coverage=scored["tag_coverage"][i],
                semantic=None if math.isnan(similarity) else similarity,
                semantic_part=scored["semantic_part"][i],
                recency=scored["recency"][i],
                salience=scored["salience"][i],
                confidence=scored["confidence"][i],
                provenance=scored["provenance"][i],
                urgency=scored["urgency"][i],
                feedback=scored["feedback"][i],
                pinned=bool(scored["pinned"][i]),
                overdue=bool(scored["overdue"][i]),
                redundancy=chosen.redundancy,
            ),
        )


def _among(
    column: npt.NDArray[Any], codes: list[int], vocabulary: dict[str, int]
) -> npt.NDArray[np.bool_]:
    """Which rows of a coded column hold one of ``codes`` (of ``vocabulary``)."""
    wanted = np.zeros(len(vocabulary), dtype=bool)
    wanted[codes] = True
    return wanted[column]  # type: ignore[no-any-return]


def _concat(parts: list[Rows]) -> Rows:
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
