"""The recall kernel (hikmah.recall._scoring): the lexical weightings ("reference" and
"idf-cosine"), the semantic blend, meta, the gate and the bounds, checked against a
transcription of the formula here, number for number."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.index.layout import KIND_CODE, NO_DEADLINE, STATUS_CODE
from hikmah.model.policy import Blend, KernelPolicy, SemanticPolicy, reference_policy
from hikmah.model.recall import RecallQuery
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Draft
from hikmah.recall import _scoring
from hikmah.recall.candidates import grouped, merged
from hikmah.recall.params import kernel_params
from hikmah.recall.ranking import recall
from hikmah.recall.weighting import WEIGHTINGS, inverse_document_frequency
from hikmah.rules.operations import Remember
from hikmah.store.core import Store

NOW = 1_790_000_000_000
DAY = 86_400_000
P = KernelPolicy().recall
WORDS = ["deploy", "cache", "billing", "token", "replica", "friday", "kafka", "schema", "lease"]
WHY = (
    "cue", "meta", "coverage", "jaccard", "overlap", "lexical", "tag_coverage",
    "semantic_part", "recency", "provenance", "urgency", "feedback", "overdue",
)  # fmt: skip


def lexical(
    weighting: str,
    matched: float,
    n_query: int,
    length: float,
    matched_idf: float,
    query_idf: float,
) -> tuple[float, float, float]:
    """Coverage, overlap and the lexical score, as docs/semantic.md writes them."""
    n_q = max(n_query, 1)
    if weighting == "reference":
        coverage = matched / n_q
        overlap = matched / max(n_q + length - matched, 1.0)
    else:
        coverage = matched_idf / query_idf if query_idf > 0 else matched / n_q
        overlap = matched / math.sqrt(n_q * max(length, matched, 1.0))
    score = max(P.lexical_coverage * coverage + P.lexical_jaccard * overlap, P.match_floor)
    return coverage, overlap, score if matched > 0 else 0.0


class Row(msgspec.Struct, kw_only=True):
    """One candidate and its features, as recall hands them to the kernel."""

    matched: float = 0.0
    tagged: float = 0.0
    matched_idf: float = 0.0
    nterms: int = 10
    created: int = NOW - 3 * DAY
    deadline: int = NO_DEADLINE
    salience: float = 0.5
    confidence: float = 0.8
    authority: float = 0.5
    verified: int = 0
    feedback: float = 0.0
    pinned: int = 0
    status: int = STATUS_CODE["active"]
    kind: int = KIND_CODE["observation"]


COLUMNS: dict[str, Any] = {
    "matched": np.float64, "tagged": np.float64, "matched_idf": np.float64,
    "nterms": np.uint16, "created": np.int64, "deadline": np.int64, "salience": np.float32,
    "confidence": np.float32, "authority": np.float32, "verified": np.uint8,
    "feedback": np.float32, "pinned": np.uint8, "status": np.uint8, "kind": np.uint8,
}  # fmt: skip


def columns(rows: list[Row]) -> dict[str, npt.NDArray[Any]]:
    return {
        name: np.array([getattr(r, name) for r in rows], dtype=dtype)
        for name, dtype in COLUMNS.items()
    }


DEFAULT = KernelPolicy()


def blend_of(policy: KernelPolicy) -> Blend:
    """The numbers of the policy's own model (what recall uses while it serves)."""
    return policy.semantic.blend(policy.semantic.model)


def kernel(
    rows: list[Row],
    policy: KernelPolicy = DEFAULT,
    *,
    n_query: int = 1,
    n_tags: int = 0,
    query_idf: float = 0.0,
    sims: list[float] | None = None,
) -> dict[str, npt.NDArray[Any]]:
    """The kernel's score, gate and why of each row."""
    params = kernel_params(
        policy,
        blend=blend_of(policy),
        now_ms=NOW,
        n_query=n_query,
        n_tags=n_tags,
        query_idf=query_idf,
    )
    n, c = len(rows), columns(rows)
    out = {"score": np.empty(n), "keep": np.empty(n, dtype=bool)}
    why = {name: np.empty(n, dtype=bool if name == "overdue" else np.float64) for name in WHY}
    similarity = None if sims is None else np.array(sims, dtype=np.float64)
    _scoring.score(params, (*c.values(), similarity, *out.values()), tuple(why.values()))
    return {**out, **why}


def transcribed(
    r: Row, policy: KernelPolicy, *, n_query: int, n_tags: int, query_idf: float, sim: float | None
) -> tuple[float, bool]:
    """A row's score and whether the gate keeps it, from the formula (REFERENCE.md,
    docs/semantic.md): NumPy's float32 products where the columns are float32."""
    p, s = policy.recall, blend_of(policy)
    lex = lexical(p.weighting, r.matched, n_query, r.nterms, r.matched_idf, query_idf)[2]
    tag_coverage = r.tagged / max(n_tags, 1)
    if n_query and n_tags:
        cue = p.cue_lexical * lex + p.cue_tag * tag_coverage
    else:
        cue = lex if n_query else tag_coverage
    words, admitted = cue, True
    if sim is not None and not math.isnan(sim):  # no vector: the words alone
        part = min(max((sim - s.floor) / (s.full - s.floor), 0.0), 1.0)
        admitted = sim >= s.alone or r.tagged > 0 or (r.matched > 0 and sim >= s.support)
        cue = max(cue, (1.0 - s.weight) * cue + s.weight * part) if admitted else 0.0
    if r.pinned == 1:
        recency, feedback = 1.0, float(max(np.float32(r.feedback), np.float32(0.0)))
    else:
        recency = 1.0 / (1.0 + (max(NOW - r.created, 0) / DAY) / p.recency_scale_days)
        feedback = float(np.float32(r.feedback))
    provenance = float(np.float32(r.authority)) * (
        1.0 if r.verified == 1 else p.unverified_provenance_factor
    )
    dated, commitment = r.deadline != NO_DEADLINE, r.kind == KIND_CODE["commitment"]
    active = r.status == STATUS_CODE["active"]
    days_left = (r.deadline - NOW) / DAY
    due = 1.0 / (1.0 + max(days_left, 0.0) / p.prospective_scale_days)
    if active and dated:
        urgency = 1.0 if days_left <= 0 else due
    else:
        urgency = p.undated_commitment_urgency if active and commitment else 0.0
    overdue = active and commitment and dated and days_left <= 0

    def f32(weight: float, value: float) -> float:
        return float(np.float32(weight) * np.float32(value))

    meta = (
        p.meta_recency * recency
        + f32(p.meta_salience, r.salience)
        + f32(p.meta_confidence, r.confidence)
        + p.meta_provenance * provenance
        + p.meta_prospective * urgency
        + p.meta_feedback * feedback
    )
    score = cue * (p.relevance_base + p.metadata_share * meta)
    if overdue:
        score = max(score, p.overdue_floor)
    gate = policy.minimum_recall_score
    return score, admitted and (cue >= gate or words >= gate or overdue)


weights = st.floats(0, 1)
rows_st = st.builds(
    Row,
    matched=st.integers(0, 4).map(float),
    tagged=st.integers(0, 2).map(float),
    matched_idf=st.floats(0, 20),
    nterms=st.integers(1, 3000),
    created=st.integers(NOW - 900 * DAY, NOW + DAY),
    deadline=st.sampled_from([NO_DEADLINE]) | st.integers(NOW - 30 * DAY, NOW + 30 * DAY),
    salience=st.floats(0, 1, width=32),
    confidence=st.floats(0, 1, width=32),
    authority=st.floats(0, 1, width=32),
    verified=st.integers(0, 1),
    feedback=st.floats(-1, 1, width=32),
    pinned=st.integers(0, 1),
    status=st.sampled_from(sorted(STATUS_CODE.values())),
    kind=st.sampled_from(sorted(KIND_CODE.values())),
)
policies = st.builds(
    lambda weighting, recency, salience, weight, floor, alone, support, gate: (
        msgspec.structs.replace(
            KernelPolicy(),
            minimum_recall_score=gate,
            recall=msgspec.structs.replace(
                P, weighting=weighting, meta_recency=recency, meta_salience=salience
            ),
            semantic=SemanticPolicy(weight=weight, floor=floor, alone=alone, support=support),
        )
    ),
    st.sampled_from(WEIGHTINGS),
    weights,
    weights,
    weights,
    st.floats(0, 0.4),
    st.floats(0, 1),
    st.floats(-1, 0.5),
    st.floats(0, 0.5),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(rows_st, min_size=1, max_size=12),
    policies,
    st.integers(0, 4),
    st.integers(0, 2),
    st.floats(0, 20),
    st.none() | st.lists(st.floats(-1, 1) | st.just(math.nan), min_size=12, max_size=12),
)
def test_the_kernel_computes_the_formula_to_the_last_bit(
    rows: list[Row],
    policy: KernelPolicy,
    n_query: int,
    n_tags: int,
    query_idf: float,
    sims: list[float] | None,
) -> None:
    if not n_query and not n_tags:
        n_query = 1
    given_sims = None if sims is None else sims[: len(rows)]
    out = kernel(rows, policy, n_query=n_query, n_tags=n_tags, query_idf=query_idf, sims=given_sims)
    for i, r in enumerate(rows):
        sim = None if given_sims is None else given_sims[i]
        score, keep = transcribed(
            r, policy, n_query=n_query, n_tags=n_tags, query_idf=query_idf, sim=sim
        )
        assert (out["score"][i], bool(out["keep"][i])) == (score, keep)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=8),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.sampled_from(WEIGHTINGS),
)
def test_recall_explains_its_lexical_score_by_the_weighting(
    docs: list[list[str]], query: list[str], weighting: str
) -> None:
    base = reference_policy() if weighting == "reference" else KernelPolicy()
    policy = msgspec.structs.replace(base, recall_limit=20)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s", map_size=1 << 22) as store:
        ops = [Remember(draft=Draft(content=" ".join(d))) for d in docs]
        store.apply(ops, now_ms=NOW, policy=policy)
        results = store.read(
            recall, RecallQuery(query=" ".join(query), limit=20), now_ms=NOW, policy=policy
        )
    q = terms(" ".join(query))
    # Each term's idf from its document frequency, counted here without the index.
    df = {t: sum(t in terms(" ".join(d)) for d in docs) for t in q}
    idf = dict(zip(df, inverse_document_frequency(list(df.values()), len(docs)), strict=True))
    for r in results:
        assert r.why.weighting == weighting
        ours = lexical(
            weighting,
            float(len(r.why.matched_terms)),
            len(q),
            len(terms(r.trace.content)),
            sum(idf[t] for t in r.why.matched_terms),
            float(sum(idf.values())),
        )
        assert ours == pytest.approx((r.why.coverage, r.why.overlap, r.why.lexical), rel=1e-12)
        if weighting == "reference":  # bit for bit, as the reference computes them
            assert ours == (r.why.coverage, r.why.jaccard, r.why.lexical)


def test_idf_is_positive_and_falls_with_document_frequency() -> None:
    idf = inverse_document_frequency([0, 1, 10, 100, 1000], 1000)
    assert np.all(idf > 0) and np.all(np.diff(idf) < 0)


def test_idf_cosine_weighs_a_rare_term_above_a_common_one() -> None:
    rare_idf, keep_idf, fail_idf = inverse_document_frequency([1, 40, 30], 200)
    query_idf = rare_idf + keep_idf + fail_idf
    # Two traces of equal length, one matching the rare identifier, one the two common words.
    rows = [
        Row(matched=1.0, nterms=12, matched_idf=rare_idf),
        Row(matched=2.0, nterms=12, matched_idf=keep_idf + fail_idf),
    ]
    rare, common = kernel(rows, n_query=3, query_idf=query_idf)["lexical"]
    assert rare > common
    uniform_rare, uniform_common = kernel(rows, reference_policy(), n_query=3)["lexical"]
    assert uniform_rare < uniform_common  # what the reference gets wrong


def test_idf_cosine_punishes_length_by_its_square_root_only() -> None:
    rows = [Row(matched=2.0, matched_idf=2.0, nterms=n) for n in (5, 20, 80, 320)]
    ref = kernel(rows, reference_policy(), n_query=3)["overlap"]
    ours = kernel(rows, n_query=3, query_idf=3.0)["overlap"]
    assert np.allclose(ours[1:] / ours[:-1], 0.5)  # 4x longer, half the overlap
    assert np.all(ours >= ref)
    assert ours[-1] / ref[-1] > 6


def test_no_match_is_zero_and_a_match_is_at_least_the_floor() -> None:
    rows = [Row(matched=0.0, nterms=3000), Row(matched=1.0, matched_idf=0.01, nterms=3000)]
    for policy in (KernelPolicy(), reference_policy()):
        out = kernel(rows, policy, n_query=8, query_idf=20.0)["lexical"]
        assert out[0] == 0.0 and out[1] == P.match_floor
    assert KernelPolicy().recall.weighting == "idf-cosine"


@settings(max_examples=100, deadline=None)
@given(st.lists(rows_st, min_size=1, max_size=20), policies, st.integers(1, 4), st.floats(0, 20))
def test_no_score_is_above_either_bound(
    rows: list[Row], policy: KernelPolicy, n_query: int, query_idf: float
) -> None:
    """The bound of matched terms alone is at least the bound of the features, and that
    at least the score of every candidate the gate keeps (what lets recall stop early)."""
    for r in rows:  # any of the query's terms, each of idf at most the query's
        r.matched = min(r.matched, float(n_query))
        r.matched_idf = query_idf * r.matched / n_query
        r.nterms = max(r.nterms, int(r.matched))  # a trace holds the terms it matched
    params = kernel_params(
        policy, blend=blend_of(policy), now_ms=NOW, n_query=n_query, query_idf=query_idf
    )
    c, n = columns(rows), len(rows)
    overdue = np.zeros(n, dtype=bool)
    first, features, fixed = np.empty(n), np.empty(n), np.empty(n)
    _scoring.first_bound(params, (c["matched"], c["tagged"], c["matched_idf"], overdue, first))
    _scoring.fixed_meta(
        params,
        (
            c["deadline"],
            c["kind"],
            c["salience"],
            c["confidence"],
            c["authority"],
            c["verified"],
            fixed,
        ),
    )
    _scoring.feature_bound(
        params,
        (
            c["matched"], c["tagged"], c["matched_idf"], overdue, c["nterms"], c["created"],
            c["pinned"], c["feedback"], fixed, features,
        ),
    )  # fmt: skip
    out = kernel(rows, policy, n_query=n_query, query_idf=query_idf)
    kept = out["keep"] & ~out["overdue"]
    assert np.all(first[kept] >= features[kept])
    assert np.all(features[kept] >= out["score"][kept])


# ---------------------------------------------------------------- the semantic blend


def test_the_semantic_part_rises_from_floor_to_full() -> None:
    s = blend_of(DEFAULT)
    middle = (s.floor + s.full) / 2
    sims = [-0.5, s.floor, middle, s.full, 0.95]
    out = kernel([Row(matched=1.0)] * 5, sims=sims)
    assert np.allclose(out["semantic_part"], [0.0, 0.0, 0.5, 1.0, 1.0])


def test_a_trace_is_recalled_on_meaning_alone_only_from_alone() -> None:
    s = blend_of(DEFAULT)
    sims = [s.alone - 0.05, s.alone - 1e-9, s.alone, s.full]
    fused = kernel([Row()] * 4, sims=sims)
    assert fused["cue"][0] == 0.0 and fused["cue"][1] == 0.0
    assert not fused["keep"][1] and fused["keep"][2]
    assert fused["cue"][3] == pytest.approx(s.weight)
    # A tag the query names is backed whatever the meaning; the meaning only lifts it.
    hit = kernel([Row(tagged=1.0)] * 4, n_query=0, n_tags=1, sims=sims)
    assert np.all(hit["cue"] == 1.0) and hit["keep"].all()


def test_a_word_match_is_recalled_only_when_the_meaning_backs_it() -> None:
    s = blend_of(DEFAULT)
    sims = [s.support - 0.05, s.support, s.alone, math.nan]
    out = kernel([Row(matched=1.0, matched_idf=1.0)] * 4, n_query=1, query_idf=1.0, sims=sims)
    # A shared word in a trace less similar than chance is not relevance.
    assert out["cue"][0] == 0.0 and not out["keep"][0]
    assert out["keep"][1:].all()
    # Meaning lifts the words' cue, never lowers it.
    plain = kernel([Row(matched=1.0, matched_idf=1.0)], n_query=1, query_idf=1.0)["cue"][0]
    assert np.all(out["cue"][1:] >= plain) and out["cue"][3] == plain
    # WordLlama's similarities are too weak to judge a match: it asks no support.
    static = DEFAULT.semantic.blend("wordllama")
    assert static.support == -1.0


def test_no_similarity_leaves_the_cue_of_words_and_tags_alone() -> None:
    rows = [Row(matched=1.0, nterms=n) for n in (1, 4, 40)]
    plain = kernel(rows, n_query=2, query_idf=1.0)
    without_vectors = kernel(rows, n_query=2, query_idf=1.0, sims=[math.nan] * 3)
    assert np.array_equal(plain["cue"], plain["lexical"])
    # A trace whose vector is still being made is judged by its words, as without any.
    assert np.array_equal(without_vectors["cue"], plain["cue"])
    assert np.array_equal(without_vectors["score"], plain["score"])
    assert np.array_equal(plain["keep"], without_vectors["keep"])


def test_the_policy_section_is_checked() -> None:
    policy = msgspec.convert({"enabled": False, "weight": 0.3}, SemanticPolicy)
    assert policy == SemanticPolicy(enabled=False, weight=0.3)
    with pytest.raises(msgspec.ValidationError, match="unknown field `wieght`"):
        msgspec.convert({"wieght": 0.3}, SemanticPolicy)
    with pytest.raises(msgspec.ValidationError, match="full must be greater"):
        msgspec.convert({"floor": 0.6, "full": 0.5}, SemanticPolicy)
    with pytest.raises(msgspec.ValidationError, match=r"\$.weight"):
        msgspec.convert({"weight": 1.5}, SemanticPolicy)


# ---------------------------------------------------------------- candidates


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 300), max_size=60), max_size=12),  # past 8: the heap
    st.lists(st.sets(st.integers(0, 300), max_size=30), max_size=2),
    st.sets(st.integers(0, 300), max_size=20),
    st.booleans(),
    st.data(),
)
def test_the_merge_is_a_count_and_an_idf_sum_per_document(
    terms_held: list[set[int]],
    tags_held: list[set[int]],
    overdue: set[int],
    with_idf: bool,
    data: st.DataObject,
) -> None:
    """Each document of any list, ascending, with how many term and tag lists hold it,
    its term lists' idf added up in list order, and whether it is overdue."""
    idf = [data.draw(st.floats(0.01, 12)) for _ in terms_held] if with_idf else None

    def listed(docs: set[int]) -> npt.NDArray[np.uint32]:
        return np.array(sorted(docs), dtype=np.uint32)

    found = merged(
        [listed(d) for d in terms_held],
        [listed(d) for d in tags_held],
        listed(overdue),
        None if idf is None else np.array(idf),
    )
    everyone = sorted(set().union(*terms_held, *tags_held, overdue))
    assert found.docs.tolist() == everyone
    for i, doc in enumerate(everyone):
        holding = [k for k, d in enumerate(terms_held) if doc in d]
        assert found.matched[i] == len(holding)
        assert found.tagged[i] == sum(doc in d for d in tags_held)
        summed = 0.0
        for k in holding:
            summed += 0.0 if idf is None else idf[k]
        assert found.matched_idf[i] == summed
        assert found.overdue[i] == (doc in overdue)


# ---------------------------------------------------------------- bad input


def test_the_kernel_refuses_arrays_it_cannot_read() -> None:
    params = kernel_params(DEFAULT, blend=blend_of(DEFAULT), now_ms=NOW, n_query=1)
    ok = np.zeros(3)
    flags = np.zeros(3, dtype=bool)
    with pytest.raises(TypeError, match="matched: not a one-dimensional array"):
        _scoring.first_bound(params, (ok.astype(np.float32), ok, ok, flags, np.empty(3)))
    with pytest.raises(ValueError, match="tagged: 2 elements, not 3"):
        _scoring.first_bound(params, (ok, ok[:2], ok, flags, np.empty(3)))
    with pytest.raises(TypeError, match="tuple of 5 arrays"):
        _scoring.first_bound(params, (ok, ok, ok, flags))
    with pytest.raises(ValueError, match=r"read-only|writable"):
        read_only = np.empty(3)
        read_only.flags.writeable = False
        _scoring.first_bound(params, (ok, ok, ok, flags, read_only))
    with pytest.raises(TypeError, match=r"params: not what _scoring\.params made"):
        _scoring.first_bound(object(), (ok, ok, ok, flags, np.empty(3)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="room for 1 documents, not 3"):
        lists = (np.arange(3, dtype=np.uint32), np.zeros(0, dtype=np.uint32))
        room = (np.empty(1, dtype=np.uint32), *(np.empty(1) for _ in range(3)), np.empty(1, bool))
        _scoring.merge(lists, 1, 0, None, room)  # type: ignore[arg-type]


# ---------------------------------------------------------------- tiers


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([-1.0, 0.0, 0.05, 0.3, 0.3000001, 0.7, 1.2, np.inf]), max_size=300)
    | st.lists(st.floats(-1, 2), max_size=40)
)
def test_grouping_is_a_stable_sort_by_falling_bound(values: list[float]) -> None:
    """The kernel's counting sort of the first bounds against NumPy's stable sort: the same
    order, the same runs."""
    bound = np.array(values, dtype=np.float64)
    order = np.empty(len(bound), dtype=np.int64)
    grouped = _scoring.group((bound, order))
    live = np.flatnonzero(bound >= 0)
    expected = live[np.argsort(-bound[live], kind="stable")]
    if len(np.unique(bound[live])) > 256:
        assert grouped is None
        return
    assert grouped is not None
    count, runs = grouped
    assert count == len(live) and np.array_equal(order[:count], expected)
    ordered = bound[expected]
    starts = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()] if count else []
    assert [start for start, _ in runs] == starts
    assert [value for _, value in runs] == [float(ordered[s]) for s in starts]


def test_past_256_bounds_grouping_falls_back_to_a_sort() -> None:
    bound = np.linspace(0, 1, 300)
    order = np.empty(300, dtype=np.int64)
    assert _scoring.group((bound, order)) is None
    tiers, floors = grouped(bound)
    assert np.array_equal(np.concatenate(tiers), np.arange(300)[::-1])
    assert floors[0] == 1.0 and floors[-1] == -np.inf
