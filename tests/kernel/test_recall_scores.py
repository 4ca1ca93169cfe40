"""Resonance Recall's score: the formula, its explanation, listing mode, urgency, feedback and
pins, each pinned under the reference policy."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hikmah.model.policy import KernelPolicy
from hikmah.model.tokenizer import terms
from hikmah.rules.operations import Feedback, Fulfill, Pin
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, remember, write
from tests.kernel.recall_cases import WORDS, ask, contents, policies, unit

_counter = itertools.count()


def expected_score(
    p: KernelPolicy,
    query: str,
    content: str,
    q_tags: set[str],
    tags: set[str],
    *,
    salience: float,
    confidence: float,
    authority: float,
    verified: bool,
    age_days: float,
    kind: str,
    deadline_days: float | None,
) -> tuple[float, float]:
    """The seed's formula, written out independently of the implementation."""
    r = p.recall
    q, d = terms(query), terms(content)
    m = len(q & d)
    lexical = (
        max(r.lexical_coverage * m / len(q) + r.lexical_jaccard * m / len(q | d), r.match_floor)
        if m
        else 0.0
    )
    tag_cov = len(q_tags & tags) / len(q_tags) if q_tags else 0.0
    if q and q_tags:
        cue = r.cue_lexical * lexical + r.cue_tag * tag_cov
    else:
        cue = lexical if q else tag_cov
    recency = 1 / (1 + age_days / r.recency_scale_days)
    provenance = authority * (1 if verified else r.unverified_provenance_factor)
    if deadline_days is not None:
        urgency = 1.0 if deadline_days <= 0 else 1 / (1 + deadline_days / r.prospective_scale_days)
    else:
        urgency = r.undated_commitment_urgency if kind == "commitment" else 0.0
    meta = (
        r.meta_recency * recency
        + r.meta_salience * salience
        + r.meta_confidence * confidence
        + r.meta_provenance * provenance
        + r.meta_prospective * urgency
    )
    return cue, cue * (r.relevance_base + r.metadata_share * meta)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    policy=policies(),
    query_words=st.lists(st.sampled_from(WORDS), min_size=0, max_size=4),
    content_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    q_tags=st.sets(st.sampled_from(["a", "b", "c"]), max_size=2),
    tags=st.sets(st.sampled_from(["a", "b", "c"]), max_size=3),
    salience=unit,
    confidence=unit,
    authority=unit,
    verified=st.booleans(),
    age_days=st.floats(0, 800),
    kind=st.sampled_from(["observation", "commitment", "belief"]),
    deadline_days=st.none() | st.floats(0.01, 30),
)
def test_score_equals_the_formula(
    tmp_path: Path,
    policy: KernelPolicy,
    query_words: list[str],
    content_words: list[str],
    q_tags: set[str],
    tags: set[str],
    salience: float,
    confidence: float,
    authority: float,
    verified: bool,
    age_days: float,
    kind: str,
    deadline_days: float | None,
) -> None:
    query, content = " ".join(query_words), " ".join(content_words)
    if not query_words and not q_tags:
        return  # listing mode has its own test
    created = NOW - int(age_days * DAY)
    deadline = None if deadline_days is None else NOW + int(deadline_days * DAY)
    with Store(tmp_path / f"s{next(_counter)}", map_size=1 << 20) as store:
        remember(
            store,
            content,
            now=created,
            tags=tuple(tags),
            salience=salience,
            confidence=confidence,
            authority=authority,
            verified=verified,
            kind=kind,
            deadline=deadline,
            source="human:t",
        )
        results = ask(store, query, policy, tags=tuple(q_tags))
    age = (NOW - created) / DAY
    left = None if deadline is None else (deadline - NOW) / DAY
    cue, score = expected_score(
        policy,
        query,
        content,
        q_tags,
        tags,
        salience=salience,
        confidence=confidence,
        authority=authority,
        verified=verified,
        age_days=age,
        kind=kind,
        deadline_days=left,
    )
    if cue < policy.minimum_recall_score:
        assert results == []
        return
    (result,) = results
    assert math.isclose(result.cue, cue, rel_tol=1e-5, abs_tol=1e-6)
    assert math.isclose(result.score, score, rel_tol=1e-5, abs_tol=1e-6)


def test_why_explains_the_score(store: Store) -> None:
    remember(
        store,
        "deploys fail on friday",
        tags=("ops",),
        salience=0.9,
        verified=True,
        source="human:a",
    )
    (r,) = ask(store, "deploy friday cache", tags=("ops",))
    assert r.why.matched_terms == ["deploy", "friday"]
    assert math.isclose(r.why.coverage, 2 / 3)
    assert math.isclose(r.why.jaccard, 2 / 4)
    assert r.why.tag_coverage == 1.0
    assert r.why.salience == pytest.approx(0.9)
    assert r.why.provenance == pytest.approx(0.5)
    assert r.why.recency == 1.0
    assert r.why.urgency == 0.0 and r.why.overdue is False
    encoded = msgspec.json.decode(msgspec.json.encode(r))
    assert set(encoded) == {
        "trace",
        "status",
        "score",
        "cue",
        "meta",
        "duplicates",
        "conflicts",
        "supersedes",
        "superseded_by",
        "why",
    }


def test_stopword_only_query_returns_nothing(store: Store) -> None:
    remember(store, "the thing")
    remember(store, "late", kind="commitment", deadline=NOW - DAY)
    assert ask(store, "the of and") == []


def test_listing_mode_orders_by_meta(store: Store) -> None:
    remember(store, "old and dull", now=NOW - 300 * DAY, salience=0.1)
    remember(store, "fresh and salient", salience=0.9)
    results = ask(store, "")
    assert contents(results) == ["fresh and salient", "old and dull"]
    assert results[0].cue == 0.0
    assert results[0].score == pytest.approx(0.5 * results[0].meta)


def test_overdue_commitment_is_recalled_without_a_cue(store: Store) -> None:
    remember(store, "file the taxes", kind="commitment", deadline=NOW - DAY)
    remember(store, "file the report", kind="commitment", deadline=NOW + 10 * DAY)
    remember(store, "kafka partitions are 12")
    results = ask(store, "kafka")
    assert contents(results) == ["kafka partitions are 12", "file the taxes"]
    assert results[1].score == pytest.approx(0.15)
    assert results[1].why.overdue and results[1].why.urgency == 1.0


def test_fulfilled_commitment_is_no_longer_urgent(store: Store) -> None:
    todo = remember(store, "file the taxes", kind="commitment", deadline=NOW - DAY)
    write(store, Fulfill(id=todo.id))
    assert ask(store, "kafka") == []
    (r,) = ask(store, "taxes")
    assert r.status == "fulfilled" and r.why.urgency == 0.0


def test_metadata_never_makes_an_irrelevant_trace_recallable(store: Store) -> None:
    remember(store, "queue consumer", salience=1.0, confidence=1.0, authority=1.0, verified=True)
    assert ask(store, "friday") == []


def test_feedback_moves_meta_by_its_small_weight_and_never_gates(store: Store) -> None:
    helped = remember(store, "retry the flaky upload with backoff")
    misled = remember(store, "a flaky upload is fixed by one quick retry, never wait")
    unrelated = remember(store, "the cafeteria closes at three")
    before = {r.trace.id: r for r in ask(store, "retry flaky upload")}
    write(store, *(Feedback(id=helped.id, outcome="good") for _ in range(3)))
    write(store, Feedback(id=misled.id, outcome="bad"), Feedback(id=unrelated.id, outcome="good"))
    after = {r.trace.id: r for r in ask(store, "retry flaky upload")}
    p = KernelPolicy().recall
    # (good - bad) / (good + bad + 2): three good → 0.6, one bad → -1/3.
    assert after[helped.id].why.feedback == pytest.approx(0.6)
    assert after[misled.id].why.feedback == pytest.approx(-1 / 3)
    assert after[helped.id].meta - before[helped.id].meta == pytest.approx(p.meta_feedback * 0.6)
    assert after[misled.id].meta - before[misled.id].meta == pytest.approx(-p.meta_feedback / 3)
    assert unrelated.id not in after  # feedback never makes an irrelevant trace recallable


def test_a_pinned_trace_does_not_age_and_ignores_bad_outcomes(store: Store) -> None:
    old = remember(store, "the vpn config lives in the infra repo", now=NOW - 300 * DAY)
    write(store, Feedback(id=old.id, outcome="bad"))
    (aged,) = ask(store, "vpn config")
    write(store, Pin(id=old.id, pinned=True))
    (pinned,) = ask(store, "vpn config")
    assert aged.why.recency < 0.1 and aged.why.feedback < 0 and not aged.why.pinned
    assert pinned.why.recency == 1.0 and pinned.why.feedback == 0.0 and pinned.why.pinned
    assert pinned.score > aged.score
    write(store, Pin(id=old.id, pinned=False))
    (unpinned,) = ask(store, "vpn config")
    assert unpinned.score == pytest.approx(aged.score)
