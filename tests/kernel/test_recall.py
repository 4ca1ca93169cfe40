"""Resonance Recall: the formula, the modes, the exclusions, folding and annotations.

Every test here pins the reference's scores, so each runs under the reference policy
(uniform coverage and Jaccard, no semantic channel): tests/kernel/test_semantic.py covers
the default weighting and the channel."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Literal

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hikmah.access.principal import AgentSession
from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import KernelPolicy, RecallPolicy, parse_policy, reference_policy
from hikmah.model.recall import RecallQuery, RecallResult
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Draft, Trace, normalize_content
from hikmah.recall import folding
from hikmah.recall.folding import Selected
from hikmah.recall.fusion import embed_now
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Feedback, Fulfill, Pin, Remember
from hikmah.store.core import Store
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import DAY, NOW, remember, remember_forecast, write

from .strategies import examples, notes_of, query_of

REFERENCE = reference_policy()
WORDS = ["deploy", "friday", "cache", "region", "ruff", "lint", "kafka", "queue", "token", "build"]
_counter = itertools.count()


def ask(
    store: Store, query: str = "", policy: KernelPolicy | None = None, now: int = NOW, **kw: object
) -> list[RecallResult]:
    return store.read(
        recall, RecallQuery(query=query, **kw), now_ms=now, policy=policy or REFERENCE
    )  # type: ignore[arg-type]


def contents(results: list[RecallResult]) -> list[str]:
    return [r.trace.content for r in results]


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


def test_exclusions_and_what_brings_them_back(store: Store) -> None:
    old = remember(store, "cache ttl is 60")
    new = remember(store, "cache ttl is 300", supersedes=old.id)
    remember_forecast(store, "cache forecast hit rate")
    assert contents(ask(store, "cache ttl")) == ["cache ttl is 300"]
    with_history = ask(store, "cache ttl", include_superseded=True)
    by_id = {r.trace.id: r for r in with_history}
    assert by_id[old.id].superseded_by == new.id and by_id[old.id].status == "superseded"
    assert by_id[new.id].supersedes == old.id
    assert all(r.trace.kind != "prediction" for r in ask(store, "cache forecast"))
    assert contents(ask(store, "forecast", kinds=("prediction",))) == ["cache forecast hit rate"]


def test_sensitive_traces_are_hidden_unless_asked_for(tmp_path: Path) -> None:

    policy = reference_policy(
        parse_policy("allow_sensitive_persistence = true\n[vault]\nenabled = true")
    )
    with Store(tmp_path / "d", vault=HeldKeys().loader()) as store:
        store.apply(
            [Remember(draft=Draft(content="diagnosis notes", privacy="sensitive"))],
            now_ms=NOW,
            policy=policy,
        )
        assert ask(store, "diagnosis", policy) == []
        assert len(ask(store, "diagnosis", policy, include_sensitive=True)) == 1


def test_kind_and_scope_filters(store: Store) -> None:
    remember(store, "use ruff for lint", kind="preference", scope="project:/a")
    remember(store, "use ruff everywhere", kind="preference")
    remember(store, "ruff crashed once", kind="episode", scope="project:/b")
    assert sorted(contents(ask(store, "ruff", scope="project:/a"))) == [
        "use ruff everywhere",
        "use ruff for lint",
    ]
    assert contents(ask(store, "ruff", kinds=("episode",))) == ["ruff crashed once"]
    assert contents(ask(store, "ruff", scope="project:/none")) == ["use ruff everywhere"]


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


def test_ties_newer_first_and_limits(store: Store) -> None:
    for i in range(12):
        remember(store, f"token rotation step {i}", now=NOW - i)
    results = ask(store, "token rotation", limit=50)
    assert len(results) == 8  # min(limit, recall_limit)
    assert len(ask(store, "token rotation", limit=3)) == 3
    same_score = [r for r in results if r.score == results[0].score]
    created = [r.trace.created_at for r in same_score]
    assert created == sorted(created, reverse=True)


def test_metadata_never_makes_an_irrelevant_trace_recallable(store: Store) -> None:
    remember(store, "queue consumer", salience=1.0, confidence=1.0, authority=1.0, verified=True)
    assert ask(store, "friday") == []


def test_candidates_come_from_the_index_not_a_scan(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        remember(store, f"unrelated note {i}")
    remember(store, "the kafka broker")
    decoded: list[int] = []
    original = Snapshot.trace_at
    monkeypatch.setattr(
        Snapshot,
        "trace_at",
        lambda self, docno: decoded.append(docno) or original(self, docno),
    )
    assert contents(ask(store, "kafka")) == ["the kafka broker"]
    assert len(decoded) <= 2


# Stable ranking (every top k the start of the top k+1, under this policy and the
# default) is tests/kernel/test_semantic.py's property test.


@examples(40)
@given(notes=notes_of(WORDS, longest=5, most=120), query=query_of(WORDS), limit=st.integers(1, 8))
def test_early_stop_returns_what_scoring_everything_returns(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    notes: list[list[str]],
    query: list[str],
    limit: int,
) -> None:
    with Store(tmp_path / f"s{next(_counter)}", map_size=1 << 22) as store:
        write(
            store,
            *(
                Remember(draft=Draft(content=" ".join(n)), created_at=NOW - i)
                for i, n in enumerate(notes)
            ),
        )
        with monkeypatch.context() as patched:
            patched.setattr(folding, "margin", lambda limit: 0)
            early = ask(store, " ".join(query), limit=limit)
        with monkeypatch.context() as patched:
            patched.setattr(folding, "margin", lambda limit: 10**9)
            everything = ask(store, " ".join(query), limit=limit)
    assert early == everything


@st.composite
def scored_notes(draw: st.DrawFn) -> Remember:
    """A note with every feature meta reads drawn: a store where bounds can be wrong."""
    kind = draw(st.sampled_from(["observation", "commitment", "belief"]))
    deadline_days = draw(st.none() | st.floats(-30, 30))
    return Remember(
        draft=Draft(
            content=" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))),
            salience=draw(unit),
            confidence=draw(unit),
            authority=draw(unit),
            verified=draw(st.booleans()),
            kind=kind,
            deadline=None if deadline_days is None else NOW + int(deadline_days * DAY),
            source="human:t",
        ),
        created_at=NOW - int(draw(st.floats(0, 400)) * DAY),
    )


@examples(60)
@given(
    notes=st.lists(scored_notes(), min_size=1, max_size=60),
    marks=st.lists(st.tuples(st.integers(0, 59), st.sampled_from(["pin", "good", "bad"]))),
    policy=policies(),
    weighting=st.sampled_from(["reference", "idf-cosine"]),
    query=query_of(WORDS),
    limit=st.integers(1, 8),
)
def test_no_candidate_scores_above_the_bound_its_features_give(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    notes: list[Remember],
    marks: list[tuple[int, str]],
    policy: KernelPolicy,
    weighting: Literal["reference", "idf-cosine"],
    query: list[str],
    limit: int,
) -> None:
    """Recall scores a tier or two of a common word's candidates, by a bound from their
    features (salience, confidence, provenance, urgency, age, pins, feedback): the bound
    holds for every candidate, and so recall returns what scoring everything returns."""
    from hikmah.recall import ranking as recall_module

    policy = msgspec.structs.replace(
        policy, recall=msgspec.structs.replace(policy.recall, weighting=weighting)
    )
    with Store(tmp_path / f"s{next(_counter)}", map_size=1 << 22) as store:
        ids = [w.trace.id for w in write(store, *notes) if w.trace is not None]
        for at, mark in marks:
            if at < len(ids):
                op = Pin(id=ids[at], pinned=True) if mark == "pin" else None
                write(store, op or Feedback(id=ids[at], outcome=mark))  # type: ignore[arg-type]
        text = " ".join(query)

        def bounds_and_scores(snapshot: Snapshot) -> tuple[list[float], list[float]]:
            scorer = recall_module._Scorer(
                snapshot,
                None,
                RecallQuery(query=text),
                sorted(terms(text)),
                [],
                NOW,
                policy,
                embed_now,
            )
            found = scorer._candidates()
            scored = scorer._breakdown(found, None)
            kept = scored["keep"]
            bounds = scorer._feature_bounds(found)
            return bounds[kept].tolist(), scored["score"][kept].tolist()

        bounds, scores = store.read(bounds_and_scores)
        assert all(b >= s for b, s in zip(bounds, scores, strict=True))
        with monkeypatch.context() as patched:
            patched.setattr(folding, "margin", lambda limit: 0)
            early = ask(store, text, policy, limit=limit)
        with monkeypatch.context() as patched:
            patched.setattr(folding, "margin", lambda limit: 10**9)
            everything = ask(store, text, policy, limit=limit)
    assert early == everything


def test_a_bound_derived_from_features_follows_new_traces_and_policies(store: Store) -> None:
    """The meta a trace's fixed features allow is kept per document and policy: a trace
    written after a recall, or a policy that weighs salience alone, is bounded by its own."""
    for i in range(300):
        remember(store, f"cache note {i}", salience=0.1, confidence=0.1, now=NOW - i)
    assert len(ask(store, "cache", limit=3)) == 3
    best = remember(store, "cache note newest", salience=1.0, confidence=1.0, authority=1.0)
    assert ask(store, "cache", limit=1)[0].trace.id == best.id
    recall_policy = msgspec.structs.replace(
        REFERENCE.recall, meta_recency=0.0, meta_confidence=0.0, meta_provenance=0.0
    )
    salience_alone = msgspec.structs.replace(REFERENCE, recall=recall_policy)
    loud = remember(store, "cache note oldest", salience=1.0, confidence=0.0, now=NOW - 10**9)
    top = ask(store, "cache", salience_alone, limit=2)
    assert {r.trace.id for r in top} == {best.id, loud.id}


def test_min_matched_terms_keeps_only_traces_sharing_enough_words(store: Store) -> None:
    remember(store, "deploy the staging cluster on friday")
    remember(store, "deploy docs by hand")
    remember(store, "overdue chore", kind="commitment", deadline=NOW - DAY)
    assert contents(ask(store, "staging deploy", min_matched_terms=2)) == [
        "deploy the staging cluster on friday"
    ]
    assert len(ask(store, "staging deploy")) == 3  # without it: one word and overdue count
    # A one-word query needs that word only.
    assert sorted(contents(ask(store, "deploy", min_matched_terms=2))) == [
        "deploy docs by hand",
        "deploy the staging cluster on friday",
    ]


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


def test_recall_filters_by_status_source_and_verified_before_the_limit(store: Store) -> None:
    session = AgentSession(host="claude-code", session_id="s-1", variables=("CLAUDECODE",))
    old = remember(store, "the cache lives in redis", source="human:ana", verified=True)
    new = remember(
        store,
        "the cache lives in redis six",
        supersedes=old.id,
        source="tool:terraform",
        verified=True,
    )
    (stamped,) = write(
        store, Remember(draft=Draft(content="the cache lives in memcached"), session=session)
    )
    for i in range(12):  # enough others that a filter after the limit would find nothing
        remember(store, f"the cache lives in redis cluster {i}", source="doc:runbook")

    def ids(**filters: object) -> list[str]:
        return [r.trace.id for r in ask(store, "cache lives", limit=3, **filters)]

    assert ids(statuses=("superseded",)) == [old.id]
    assert ids(sources=("agent",)) == [stamped.id]  # stamped from a session: an agent's
    assert ids(sources=("person",), statuses=("superseded", "active")) == [old.id]
    assert sorted(ids(verified=True, include_superseded=True)) == sorted([old.id, new.id])
    assert ids(sources=("tool",)) == [new.id]
    assert len(ids(sources=("other",))) == 3 and ids(sources=("tool",), verified=False) == []
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"statuses": ["purged"]}, RecallQuery)
