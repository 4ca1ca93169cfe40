"""Resonance Recall (docs/storage.md, "Recall without a scan"), with the semantic
channel blended into its cue (docs/semantic.md).

Candidates come from the inverted index only (plus overdue commitments from
the deadline index); the listing mode, a query with neither terms nor tags,
is the one place that reads every feature row. Scoring runs on the feature
columns, gathered with NumPy and scored by the kernel (``scoring.c``: the whole
formula of a candidate in one pass), a tier of candidates at a time in falling order of the best
score each could have, until no candidate left could enter (:meth:`_Scorer._tiers`:
a common word's thousands of candidates are bounded, not scored); then a short greedy pass
walks the best-scored candidates in score order, folds near-duplicates into
the results already chosen, penalises partial overlaps, and stops when
``recall_limit`` results are chosen, whatever the limit asked for; they are
ordered by their penalised score and the first ``limit`` returned. So every
top k is the start of the top k+1.

The lexical cue follows ``[recall] weighting`` (:mod:`hikmah.recall.weighting`).
With the semantic channel on and its vectors ready (:mod:`hikmah.semantic.store_vectors`),
the candidates are the best by lexical score that the walk may read and the
``[semantic] candidates`` nearest vectors the query may see (at least as
many; the same status, kind, privacy and scope rules: one filter serves
both), and their cue is the lexical one with
the semantic part blended in (the kernel, ``scoring.c``); the gate, meta, the
overdue floor and folding are the same for both channels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, NamedTuple

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
    DocArray,
)
from hikmah.index.queries import conflicts_for, superseded_by
from hikmah.index.review import HELD_FIELDS, held_rows
from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import Blend, KernelPolicy
from hikmah.model.recall import RecallQuery, RecallResult, Why
from hikmah.model.tokenizer import terms
from hikmah.model.trace import (
    Trace,
    normalize_claim_key,
    normalize_claim_value,
    normalize_content,
    normalize_tag,
)
from hikmah.model.vocabulary import STATUSES, Status
from hikmah.recall import _scoring
from hikmah.recall.weighting import inverse_document_frequency
from hikmah.semantic.embedding import Vectors
from hikmah.semantic.store_vectors import SemanticIndex

DAY_MS = 86_400_000
Floats = npt.NDArray[np.float64]


class _Selected:
    """A result being assembled during folding."""

    __slots__ = ("claim", "duplicates", "position", "score", "terms", "trace")

    def __init__(self, trace: Trace, position: int, score: float) -> None:
        self.trace = trace
        self.position = position
        self.score = score
        self.duplicates = 0
        self.terms = terms(trace.content)
        self.claim = (
            None
            if trace.claim_key is None or trace.claim_value is None
            else (normalize_claim_key(trace.claim_key), normalize_claim_value(trace.claim_value))
        )

    def overlap(self, other: _Selected) -> float | None:
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


# Starts embedding a query with the vectors' model and gives what waits for its vector
# (None: the model finds nothing in it), so that the caller may embed it beside the
# lexical work (the daemon, on a thread of its own: the model runs without the GIL).
QueryEmbedding = Callable[[SemanticIndex, str], Callable[[], Vectors | None]]


def embed_now(index: SemanticIndex, text: str) -> Callable[[], Vectors | None]:
    """The query's vector, made here and now: :data:`QueryEmbedding` in one thread."""
    vector = index.embed_query(text)
    return lambda: vector


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


Rows = dict[str, npt.NDArray[Any]]
_FILTER_FIELDS = ("present", "status", "kind", "privacy", "scope")
# What the kernel (hikmah.recall._scoring) reads of each candidate's features, in its order.
_SCORE_FIELDS = (
    "nterms", "created", "deadline", "salience", "confidence", "authority", "verified",
    "feedback", "pinned", "status", "kind",
)  # fmt: skip
_FIXED_FIELDS = ("deadline", "kind", "salience", "confidence", "authority", "verified")
# Every term of a score that ``why`` shows, as the kernel writes them.
_WHY: tuple[tuple[str, type], ...] = (
    *((name, np.float64) for name in (
        "cue", "meta", "coverage", "jaccard", "overlap", "lexical", "tag_coverage",
        "semantic_part", "recency", "provenance", "urgency", "feedback",
    )),
    ("overdue", np.bool_),
)  # fmt: skip
# Slack for the float rounding between a bound and the score it bounds (the kernel's).
_EPSILON = 1e-9
_MIN_TIER = 128  # candidates scored together at least (see _tiers)


class _Candidates(NamedTuple):
    """Lexical candidates (ascending), with what scoring needs of each."""

    docs: DocArray
    matched: Floats  # query terms held
    tagged: Floats  # query tags held
    matched_idf: Floats  # summed idf of the query terms held (idf-cosine only; else zeros)
    overdue: npt.NDArray[np.bool_]

    def take(self, positions: npt.NDArray[np.intp]) -> _Candidates:
        return _Candidates(
            self.docs[positions],
            self.matched[positions],
            self.tagged[positions],
            self.matched_idf[positions],
            self.overdue[positions],
        )


class _Semantic(NamedTuple):
    vectors: SemanticIndex
    query: Vectors


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
        self.semantic: _Semantic | None = None  # the vectors and the query's, once made
        self._vector = self._start_embedding(embed)
        index = vectors
        self.blend = policy.semantic.blend(
            index.model if index is not None else policy.semantic.model
        )

    def _params(self, blend: Blend | None = None) -> _scoring.Params:
        return _kernel_params(
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

    def _semantic(self) -> _Semantic | None:
        """The vectors and the query's own (waited for), when the channel takes part."""
        index = self.vectors
        if self._vector is None or index is None:
            return None
        vector = self._vector()
        return None if vector is None else _Semantic(index, vector)

    def run(self) -> list[RecallResult]:
        # The walk always chooses recall_limit results, whatever the limit asked
        # for, so that every shorter list is the start of a longer one.
        depth = self.policy.recall_limit
        found = self._candidates()
        need = _margin(depth)
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

    def _candidates(self) -> _Candidates:
        """Candidate documents (ascending), their matched term and tag counts (and summed
        idf), and which of them are overdue commitments."""
        size = len(self.features)
        if self.listing:
            self.params = self._params()
            zeros = np.zeros(size)
            everyone = np.arange(size, dtype=np.uint32)
            return _Candidates(everyone, zeros, zeros, zeros, np.zeros(size, dtype=bool))
        term_lists = [self.snapshot.postings(t) for t in self.q_terms]
        tag_lists = [self.snapshot.postings(TAG_PREFIX + t) for t in self.q_tags]
        overdue = self.snapshot.overdue(self.now)
        # Each term's idf, by how many documents hold it (idf-cosine weighs by it).
        idf = None
        if self.weighting == "idf-cosine" and term_lists:
            idf = inverse_document_frequency([len(docs) for docs in term_lists], size)
            self.query_idf = float(idf.sum())
        found = _merged(term_lists, tag_lists, overdue, idf)
        self.params = self._params()
        need = min(self.query.min_matched_terms, len(self.q_terms))
        return found.take(np.flatnonzero(found.matched >= need)) if need else found

    def _tiers(self, found: _Candidates, need: int) -> Iterator[tuple[npt.NDArray[np.intp], float]]:
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
        groups, floors = _grouped(first)
        if self.listing:
            yield from ((group, floor) for group, floor in zip(groups, floors[1:], strict=True))
            return
        held, bound = np.zeros(0, dtype=np.intp), np.zeros(0)  # bounded again, not yet taken
        taken, size = 0, _MIN_TIER
        while True:
            # Bound again the next group while the walk could not stop before it: while
            # fewer than ``need`` of those held could beat its first bound.
            while taken < len(groups) and (
                not len(bound) or floors[taken] > _nth_best(bound, need)
            ):
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

    def _upper_bounds(self, found: _Candidates) -> Floats:
        """The best score each candidate could have by its matched terms and tags alone;
        -1 where it cannot be recalled."""
        if self.listing:
            return np.full(len(found.docs), np.inf)
        bound = np.empty(len(found.docs))
        _scoring.first_bound(
            self.params, (found.matched, found.tagged, found.matched_idf, found.overdue, bound)
        )
        return bound

    def _feature_bounds(self, found: _Candidates) -> Floats:
        """The best score each candidate could have by its features; -1 where it cannot
        be recalled.

        Its lexical score and meta are exact but for urgency, which changes with
        the clock and counts in full for every commitment and dated trace: only
        a commitment or a trace near its deadline scores below its bound.
        """
        rows = self.features.take(("nterms", "created", "pinned", "feedback"), found.docs)
        fixed = self.features.derived(
            (_fixed_meta, self.policy), _FIXED_FIELDS, partial(_fixed_meta, self.policy)
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

    def _score(self, found: _Candidates, sims: Floats | None = None) -> Rows:
        """The scores of the candidates the query may see and recall (fused with their
        similarities ``sims`` when given; NaN: no vector).

        Only what folding needs is kept (document, score, time, and the counts
        to explain it later): the breakdown of a score is recomputed for the
        few results (:meth:`_breakdown`), not carried for every candidate.
        """
        return self._scored(found, sims, explain=False)[0]

    def _scored(
        self, found: _Candidates, sims: Floats | None, *, explain: bool, seen: bool = False
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

    def _breakdown(self, found: _Candidates, sims: Floats | None, *, explain: bool = True) -> Rows:
        """The score of these candidates and which of them may be recalled, with every
        term of the score (what ``why`` shows) when ``explain``; without it only
        ``score``, ``keep`` and ``created`` (scoring thousands of candidates of a common
        word, most of them never shown)."""
        rows = self.features.take(_SCORE_FIELDS, found.docs)
        size = len(found.docs)
        score, keep = np.empty(size), np.empty(size, dtype=bool)
        why: Rows | None = None
        if explain:
            why = {name: np.empty(size, dtype=dtype) for name, dtype in _WHY}
        _scoring.score(
            self.params,
            (
                found.matched,
                found.tagged,
                found.matched_idf,
                *(rows[name] for name in _SCORE_FIELDS),
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
        self, lexical: Rows | None, found: _Candidates, semantic: _Semantic, depth: int
    ) -> tuple[Rows, Rows]:
        """The candidates of both channels with their fused scores, and their breakdown:
        the best by lexical score (as many as the walk may read) and the ``candidates``
        nearest vectors the query may see (no fewer)."""
        pool = np.zeros(0, dtype=np.uint32)
        if lexical is not None:
            pool = lexical["doc"][
                _top(lexical["score"], lexical["created"], lexical["doc"], _margin(depth))
            ]
        # As many as the walk may read at least: a nearer vector's trace can lose only by
        # its meta (at most 0.55 against 1), and the evaluation sets scored the same with
        # 1, 16, 24 and 50 of them (docs/semantic.md), each costing the search and scoring.
        wanted = max(self.policy.semantic.candidates, _margin(depth))
        near, _ = semantic.vectors.search(semantic.query, wanted, self._allowed)
        union = _matches_of(found, np.union1d(pool, near.astype(np.uint32)))
        need = min(self.query.min_matched_terms, len(self.q_terms))
        if need:
            union = union.take(np.flatnonzero(union.matched >= need))
        sims = semantic.vectors.similarities(semantic.query, union.docs).astype(np.float64)
        if not self._on_topic(union, sims):
            # Nothing here is about the question: no trace is recalled on meaning alone.
            self.params = self._params(msgspec.structs.replace(self.blend, alone=math.inf))
        # The pool passed the filter when its tier was scored, the nearest in the search.
        scored, explained = self._scored(union, sims, explain=True, seen=True)
        assert explained is not None
        return scored, explained

    def _on_topic(self, union: _Candidates, sims: Floats) -> bool:
        """Whether the memory holds anything about the question: a trace some of whose
        words the question names and whose meaning backs them (``support``), or a trace
        at least ``topic`` similar. A question about nothing here gets nothing on meaning
        alone, however near its nearest traces happen to be."""
        blend = self.blend
        with np.errstate(invalid="ignore"):  # NaN: no vector yet, judged by its words
            backed = (union.tagged > 0) | ((union.matched > 0) & ~(sims < blend.support))
            return bool(backed.any() or (sims >= blend.topic).any())

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
        """Fold near-duplicates best first until ``depth`` results are chosen; the
        results' breakdown is taken from ``explained`` (row for row with ``scored``)
        when given, else computed for them.

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
        p = self.policy.recall
        score = scored["score"]
        selected: list[_Selected] = []
        redundancy: dict[int, float] = {}
        for i in _best_first(score, scored["created"], scored["doc"], depth):
            if len(selected) == depth:
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
        if len(selected) < depth and unscored > -np.inf:
            return None
        # Ties newer first, then by id: document numbers follow arrival order, which
        # differs between synced devices, and ids do not.
        selected.sort(key=lambda s: s.trace.id, reverse=True)
        selected.sort(key=lambda s: (-s.score, -s.trace.created_at))
        chosen = np.array([s.position for s in selected], dtype=np.intp)
        if explained is not None:
            terms = {name: column[chosen] for name, column in explained.items()}
        else:
            found = _Candidates(
                scored["doc"][chosen],
                scored["matched"][chosen],
                scored["tagged"][chosen],
                scored["matched_idf"][chosen],
                scored["overdue"][chosen],
            )
            sims = None if self.semantic is None else scored["sim"][chosen]
            terms = self._breakdown(found, sims)
        values = {name: column.tolist() for name, column in terms.items()}  # one pass a column
        return [self._result(s, values, j, redundancy[s.position]) for j, s in enumerate(selected)]

    def _result(
        self, chosen: _Selected, scored: dict[str, list[Any]], i: int, redundancy: float
    ) -> RecallResult:
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
                redundancy=redundancy,
            ),
        )


def _among(
    column: npt.NDArray[Any], codes: list[int], vocabulary: dict[str, int]
) -> npt.NDArray[np.bool_]:
    """Which rows of a coded column hold one of ``codes`` (of ``vocabulary``)."""
    wanted = np.zeros(len(vocabulary), dtype=bool)
    wanted[codes] = True
    return wanted[column]  # type: ignore[no-any-return]


def _grouped(bound: Floats) -> tuple[list[npt.NDArray[np.intp]], list[float]]:
    """Candidates in groups of falling upper bound, and each group's bound (then -inf).

    Candidates of equal bound share a group, and groups of fewer than
    ``_MIN_TIER`` are merged with the next: each has a fixed cost, and
    IDF-weighted bounds make many small ones. Merging takes a few more
    candidates, never fewer than exactness needs (a group's bound is the best
    of all it holds).
    """
    order = np.empty(len(bound), dtype=np.int64)
    grouped = _scoring.group((bound, order))
    if grouped is None:  # past the kernel's 256 bounds: sort them all
        live = np.flatnonzero(bound >= 0)
        order = live[np.argsort(-bound[live], kind="stable")]
        ordered = bound[order]
        cuts = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    else:
        count, runs = grouped
        order = order[:count]
        cuts = [start for start, _ in runs[1:]]
    if not len(order):
        return [], [-np.inf]
    kept, start = [], 0
    for cut in cuts:
        if cut - start >= _MIN_TIER:
            kept.append(cut)
            start = cut
    tiers = np.split(order, kept)
    return tiers, [float(bound[tier[0]]) for tier in tiers] + [-np.inf]


def _kernel_params(
    policy: KernelPolicy,
    *,
    blend: Blend,
    now_ms: int,
    listing: bool = False,
    n_query: int = 0,
    n_tags: int = 0,
    query_idf: float = 0.0,
) -> _scoring.Params:
    """The kernel's parameters for one recall: the policy's weights and the query's shape."""
    p, s = policy.recall, blend
    return _scoring.params(
        idf_cosine=p.weighting == "idf-cosine",
        listing=listing,
        n_query=n_query,
        n_tags=n_tags,
        query_idf=query_idf,
        coverage_w=p.lexical_coverage,
        overlap_w=p.lexical_jaccard,
        match_floor=p.match_floor,
        cue_lexical=p.cue_lexical,
        cue_tag=p.cue_tag,
        recency_w=p.meta_recency,
        salience_w=p.meta_salience,
        confidence_w=p.meta_confidence,
        provenance_w=p.meta_provenance,
        prospective_w=p.meta_prospective,
        feedback_w=p.meta_feedback,
        recency_scale=p.recency_scale_days,
        prospective_scale=p.prospective_scale_days,
        undated_urgency=p.undated_commitment_urgency,
        unverified_factor=p.unverified_provenance_factor,
        relevance_base=p.relevance_base,
        metadata_share=p.metadata_share,
        overdue_floor=p.overdue_floor,
        listing_scale=p.listing_scale,
        gate=policy.minimum_recall_score,
        sem_weight=s.weight,
        sem_floor=s.floor,
        sem_full=s.full,
        sem_alone=s.alone,
        sem_support=s.support,
        now=now_ms,
        active=STATUS_CODE["active"],
        commitment=KIND_CODE["commitment"],
    )


def _fixed_meta(policy: KernelPolicy, rows: Mapping[str, npt.NDArray[Any]]) -> Floats:
    """The most meta what is fixed when a trace is written allows: salience, confidence
    and provenance, with urgency in full for a commitment or a dated trace (recency and
    feedback come on top): a derived column, one per policy."""
    fixed = np.empty(len(rows["kind"]))
    params = _kernel_params(policy, blend=policy.semantic.blend(policy.semantic.model), now_ms=0)
    _scoring.fixed_meta(params, (*(rows[name] for name in _FIXED_FIELDS), fixed))
    return fixed


def _nth_best(values: Floats, n: int) -> float:
    """The ``n``-th largest of ``values`` (-inf when there are fewer, +inf for none)."""
    if n < 1:
        return np.inf
    if len(values) < n:
        return -np.inf
    return float(-np.partition(-values, n - 1)[n - 1])


def _margin(limit: int) -> int:
    """Candidates to score beyond every unscored bound before folding starts."""
    return limit + 4


def _concat(parts: list[Rows]) -> Rows:
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


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


def _top(
    score: Floats, created: npt.NDArray[np.int64], docs: DocArray, count: int
) -> npt.NDArray[np.intp]:
    """The positions of the ``count`` best (ties newer first), best first."""
    if len(score) <= count:
        return _ranked(score, created, docs)
    threshold = -np.partition(-score, count - 1)[count - 1]
    return _ranked(score, created, docs, np.flatnonzero(score >= threshold))[:count]


def _best_first(
    score: Floats, created: npt.NDArray[np.int64], docs: DocArray, limit: int
) -> Iterator[int]:
    """Positions in best-first order (ties newer first), sorting only what is read.

    Folding usually reads ``limit`` candidates and a few near-duplicates, so
    the best few are sorted first and the rest only if folding gets that far.
    """
    head = _margin(limit)
    if len(score) <= head:
        yield from _ranked(score, created, docs).tolist()
        return
    threshold = -np.partition(-score, head)[head]
    yield from _ranked(score, created, docs, np.flatnonzero(score > threshold)).tolist()
    yield from _ranked(score, created, docs, np.flatnonzero(score <= threshold)).tolist()


def _merged(
    term_lists: list[DocArray], tag_lists: list[DocArray], overdue: DocArray, idf: Floats | None
) -> _Candidates:
    """The documents in any of the (ascending, distinct) lists, ascending, with in how many
    term and tag lists each is, the summed ``idf`` of its term lists (zeros without), and
    whether it is overdue: one merge of the sorted lists, nothing sized by the store."""
    lists = tuple(np.asarray(held, dtype=np.uint32) for held in (*term_lists, *tag_lists, overdue))
    room = sum(len(held) for held in lists)
    docs, matched, tagged = np.empty(room, dtype=np.uint32), np.empty(room), np.empty(room)
    matched_idf, overdue_flags = np.empty(room), np.empty(room, dtype=bool)
    out = (docs, matched, tagged, matched_idf, overdue_flags)
    count = _scoring.merge(lists, len(term_lists), len(tag_lists), idf, out)
    return _Candidates(
        docs[:count], matched[:count], tagged[:count], matched_idf[:count], overdue_flags[:count]
    )


def _matches_of(found: _Candidates, docs: DocArray) -> _Candidates:
    """The documents ``docs`` (ascending) as candidates, with what ``found`` knows of those
    among it (a nearest vector may also be a lexical candidate) and no match for the rest."""
    zeros = np.zeros(len(docs))
    if not len(found.docs):
        return _Candidates(docs, zeros, zeros, zeros, np.zeros(len(docs), dtype=bool))
    at, known = _places(found.docs, docs)
    return _Candidates(
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
