"""Resonance Recall's folding: near duplicates fold and are counted, a partial overlap is
penalised, conflicting claims are never folded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.model.tokenizer import terms
from hikmah.model.trace import Trace, normalize_content
from hikmah.recall.folding import Selected
from hikmah.store.core import Store
from tests.harness.store import NOW, remember
from tests.kernel.recall_cases import ask


def test_near_duplicates_fold_and_count(store: Store) -> None:
    for _ in range(3):
        remember(store, "The deploy failed on Friday")
    remember(store, "the  DEPLOY failed on friday")
    remember(store, "deploy pipeline is green")
    results = ask(store, "deploy friday")
    assert [r.duplicates for r in results] == [3, 0]
    assert results[0].trace.content == "the  DEPLOY failed on friday"  # equal scores: newest first


_CONTENT = st.lists(
    st.sampled_from(["Deploy", "deploy", "DEPLOY", "the", "ΣΟΦΊΑΣ", "σοφίας", "日本", "x", "42"]),
    max_size=5,
).flatmap(
    lambda words: st.lists(
        st.sampled_from([" ", "  ", "\t", "\n", "\u2028", "\x1f", " , ", "-"]),
        min_size=len(words) + 1,
        max_size=len(words) + 1,
    ).map(lambda gaps: gaps[0] + "".join(w + g for w, g in zip(words, gaps[1:], strict=True)))
)


@given(a=_CONTENT, b=_CONTENT)
def test_overlap_is_one_for_the_same_content_else_the_jaccard(a: str, b: str) -> None:
    # The walk compares contents only when neither has a term: the same content (whitespace
    # collapsed, lowercase) always has the same terms, so its Jaccard is 1 already.
    first, second = (
        Selected(Trace(id=f"t{i}", kind="observation", content=text, created_at=NOW), i, 1.0)
        for i, text in enumerate((a, b))
    )
    ta, tb = terms(a), terms(b)
    if normalize_content(a) == normalize_content(b):
        expected = 1.0
    else:
        expected = len(ta & tb) / len(ta | tb) if ta | tb else 0.0
    assert first.overlap(second) == expected


def test_partial_overlap_is_penalised_not_folded(store: Store) -> None:
    a = remember(store, "kafka queue lag alarms page the team")
    remember(store, "kafka queue lag alarms page nobody")
    results = ask(store, "kafka queue lag alarms")
    assert len(results) == 2
    assert results[0].trace.id == a.id or results[0].why.redundancy == 0.0
    assert results[1].why.redundancy == pytest.approx(5 / 7)  # 5 shared terms of 7
    assert results[1].score < results[0].score


def test_conflicting_claims_are_never_folded(store: Store) -> None:
    a = remember(store, "the region is us-east-1", claim_key="region", claim_value="us-east-1")
    b = remember(store, "the region is us-east-1", claim_key="region", claim_value="eu-west-1")
    results = ask(store, "region")
    assert {r.trace.id for r in results} == {a.id, b.id}
    assert all(r.duplicates == 0 and r.why.redundancy == 0 for r in results)
    by_id = {r.trace.id: r for r in results}
    assert by_id[a.id].conflicts == [b.id] and by_id[b.id].conflicts == [a.id]
