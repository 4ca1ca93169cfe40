"""What the tests of Resonance Recall share: recall under the reference policy (uniform
coverage and Jaccard, no semantic channel), whose scores they pin, and policies drawn at random.
tests/kernel/test_semantic.py covers the default weighting and the channel."""

from __future__ import annotations

from hypothesis import strategies as st

from hikmah.model.policy import KernelPolicy, RecallPolicy, reference_policy
from hikmah.model.recall import RecallQuery, RecallResult
from hikmah.recall.ranking import recall
from hikmah.store.core import Store
from tests.harness.store import NOW

REFERENCE = reference_policy()
WORDS = ["deploy", "friday", "cache", "region", "ruff", "lint", "kafka", "queue", "token", "build"]


def ask(
    store: Store, query: str = "", policy: KernelPolicy | None = None, now: int = NOW, **kw: object
) -> list[RecallResult]:
    return store.read(
        recall, RecallQuery(query=query, **kw), now_ms=now, policy=policy or REFERENCE
    )  # type: ignore[arg-type]


def contents(results: list[RecallResult]) -> list[str]:
    return [r.trace.content for r in results]


unit = st.floats(0, 1, allow_nan=False)


@st.composite
def policies(draw: st.DrawFn) -> KernelPolicy:
    cov = draw(unit)
    cue_lex = draw(unit)
    base = draw(st.floats(0.01, 1))
    recall_policy = RecallPolicy(
        weighting="reference",
        lexical_coverage=cov,
        lexical_jaccard=draw(st.floats(0, 1 - cov)),
        match_floor=draw(unit),
        cue_lexical=cue_lex,
        cue_tag=draw(st.floats(0, 1 - cue_lex)),
        meta_recency=draw(unit),
        meta_salience=draw(unit),
        meta_confidence=draw(unit),
        meta_provenance=draw(unit),
        meta_prospective=draw(unit),
        relevance_base=base,
        metadata_share=draw(st.floats(0, 1 - base)),
        recency_scale_days=draw(st.floats(0.1, 365)),
        unverified_provenance_factor=draw(unit),
        prospective_scale_days=draw(st.floats(0.1, 60)),
        undated_commitment_urgency=draw(unit),
    )
    return reference_policy(
        KernelPolicy(recall=recall_policy, minimum_recall_score=draw(st.floats(0.001, 1)))
    )
