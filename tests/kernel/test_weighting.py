"""Lexical weighting ("reference" and "idf-cosine") and the fusion of the semantic part."""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.fusion import fuse, fused_bound, semantic_part
from hikmah.policy import KernelPolicy, SemanticPolicy, reference_policy
from hikmah.recall import RecallQuery, recall
from hikmah.rules import Remember
from hikmah.store import Store
from hikmah.tokenizer import terms
from hikmah.trace import Draft
from hikmah.weighting import (
    WEIGHTINGS,
    inverse_document_frequency,
    lexical_bound,
    lexical_scores,
)

NOW = 1_790_000_000_000
P = KernelPolicy().recall
WEIGHTS = {
    "coverage_weight": P.lexical_coverage,
    "overlap_weight": P.lexical_jaccard,
    "match_floor": P.match_floor,
}
WORDS = ["deploy", "cache", "billing", "token", "replica", "friday", "kafka", "schema", "lease"]


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
        matched = np.array([float(len(r.why.matched_terms))])
        ours = lexical_scores(
            weighting,  # type: ignore[arg-type]
            matched=matched,
            n_query=len(q),
            nterms=[len(terms(r.trace.content))],
            matched_idf=np.array([sum(idf[t] for t in r.why.matched_terms)]),
            query_idf=float(sum(idf.values())),
            **WEIGHTS,
        )
        assert ours.coverage[0] == pytest.approx(r.why.coverage, rel=1e-12)
        assert ours.overlap[0] == pytest.approx(r.why.overlap, rel=1e-12)
        assert ours.lexical[0] == pytest.approx(r.why.lexical, rel=1e-12)
        if weighting == "reference":  # bit for bit, as the reference computes them
            assert (ours.coverage[0], ours.overlap[0], ours.lexical[0]) == (
                r.why.coverage,
                r.why.jaccard,
                r.why.lexical,
            )


def test_idf_is_positive_and_falls_with_document_frequency() -> None:
    idf = inverse_document_frequency([0, 1, 10, 100, 1000], 1000)
    assert np.all(idf > 0) and np.all(np.diff(idf) < 0)


def test_idf_cosine_weighs_a_rare_term_above_a_common_one() -> None:
    idf = dict(
        zip(
            ["test_invoice_pdf_render", "keep", "fail"],
            inverse_document_frequency([1, 40, 30], 200),
            strict=True,
        )
    )
    query_idf = sum(idf.values())
    # Two traces of equal length, one matching the rare identifier, one the two common words.
    rare, common = lexical_scores(
        "idf-cosine",
        matched=np.array([1.0, 2.0]),
        n_query=3,
        nterms=[12, 12],
        matched_idf=np.array([idf["test_invoice_pdf_render"], idf["keep"] + idf["fail"]]),
        query_idf=query_idf,
        **WEIGHTS,
    ).lexical
    assert rare > common
    uniform_rare, uniform_common = lexical_scores(
        "reference", matched=np.array([1.0, 2.0]), n_query=3, nterms=[12, 12], **WEIGHTS
    ).lexical
    assert uniform_rare < uniform_common  # what the reference gets wrong


def test_idf_cosine_punishes_length_by_its_square_root_only() -> None:
    lengths = np.array([5.0, 20.0, 80.0, 320.0])
    ones = np.ones(4)
    kwargs = {"matched": 2 * ones, "n_query": 3, "nterms": lengths, **WEIGHTS}
    ref = lexical_scores("reference", **kwargs)
    ours = lexical_scores("idf-cosine", matched_idf=2 * ones, query_idf=3.0, **kwargs)
    assert np.allclose(ours.overlap[1:] / ours.overlap[:-1], 0.5)  # 4x longer, half the overlap
    assert np.all(ours.overlap >= ref.overlap)
    assert ours.overlap[-1] / ref.overlap[-1] > 6


def test_no_match_is_zero_and_a_match_is_at_least_the_floor() -> None:
    for weighting in WEIGHTINGS:
        out = lexical_scores(
            weighting,
            matched=np.array([0.0, 1.0]),
            n_query=8,
            nterms=[3000, 3000],
            matched_idf=np.array([0.0, 0.01]),
            query_idf=20.0,
            **WEIGHTS,
        )
        assert out.lexical[0] == 0.0 and out.lexical[1] == P.match_floor
    assert KernelPolicy().recall.weighting == "idf-cosine"
    with pytest.raises(ValueError, match="matched_idf"):
        lexical_scores("idf-cosine", matched=np.ones(1), n_query=1, nterms=[1], **WEIGHTS)


@given(
    st.integers(1, 8).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n), st.integers(1, 400)), min_size=1, max_size=20),
            st.lists(st.floats(0.01, 9.0), min_size=n, max_size=n),
        )
    )
)
def test_the_bound_is_never_below_the_score(
    case: tuple[int, list[tuple[int, int]], list[float]],
) -> None:
    n, rows, idf = case
    matched = np.array([float(m) for m, _ in rows])
    nterms = np.array([float(max(m, t)) for m, t in rows])
    matched_idf = np.array([sum(sorted(idf)[:m]) for m, _ in rows])  # any m of the query's terms
    for weighting in WEIGHTINGS:
        extra = {"matched_idf": matched_idf, "query_idf": sum(idf)}
        score = lexical_scores(
            weighting, matched=matched, n_query=n, nterms=nterms, **extra, **WEIGHTS
        )
        bound = lexical_bound(weighting, matched=matched, n_query=n, **extra, **WEIGHTS)
        assert np.all(bound >= score.lexical - 1e-12)


# ---------------------------------------------------------------- fusion


DEFAULTS = SemanticPolicy()


def test_the_semantic_part_rises_from_floor_to_full() -> None:
    s = np.array([-0.5, 0.15, 0.325, 0.5, 0.9])
    assert np.allclose(semantic_part(s, DEFAULTS), [0.0, 0.0, 0.5, 1.0, 1.0])


def test_a_trace_is_recalled_on_semantics_alone_only_above_alone() -> None:
    gate = KernelPolicy().minimum_recall_score
    sims = np.array([0.25, 0.318, 0.34, 0.5])
    fused = fuse(np.zeros(4), sims, np.zeros(4, dtype=bool), DEFAULTS)
    assert fused[0] == 0.0 and fused[1] == 0.0  # the gate alone would have let 0.25 through
    assert fused[2] >= gate and fused[3] == pytest.approx(DEFAULTS.weight)
    # With a lexical or tag match the semantic part only adds, however low.
    hit = fuse(np.full(4, 0.3), sims, np.ones(4, dtype=bool), DEFAULTS)
    assert np.all(hit >= 0.15) and hit[0] == pytest.approx(0.5 * 0.3 + 0.5 * (0.1 / 0.35))


def test_disabled_leaves_the_cue_exactly_as_it_is() -> None:
    off = SemanticPolicy(enabled=False)
    cue = np.array([0.0, 0.2, 0.7])
    assert fuse(cue, np.array([0.9, 0.9, 0.0]), np.array([False, True, True]), off) is cue
    assert fused_bound(cue, off) is cue


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(-1, 1), st.booleans()), min_size=1, max_size=30),
    st.floats(0, 1),
)
def test_the_fused_bound_is_never_below_the_fused_cue(
    rows: list[tuple[float, float, bool]], weight: float
) -> None:
    policy = SemanticPolicy(weight=weight)
    cue = np.array([r[0] for r in rows])
    fused = fuse(cue, np.array([r[1] for r in rows]), np.array([r[2] for r in rows]), policy)
    assert np.all(fused_bound(cue, policy) >= fused - 1e-12)
    assert np.all((fused >= 0) & (fused <= 1))


def test_the_policy_section_is_checked() -> None:
    policy = msgspec.convert({"enabled": False, "weight": 0.3}, SemanticPolicy)
    assert policy == SemanticPolicy(enabled=False, weight=0.3)
    with pytest.raises(msgspec.ValidationError, match="unknown field `wieght`"):
        msgspec.convert({"wieght": 0.3}, SemanticPolicy)
    with pytest.raises(msgspec.ValidationError, match="full must be greater"):
        msgspec.convert({"floor": 0.6, "full": 0.5}, SemanticPolicy)
    with pytest.raises(msgspec.ValidationError, match=r"\$.weight"):
        msgspec.convert({"weight": 1.5}, SemanticPolicy)
