"""Resonance Recall's early stop: candidates come from the index, and the bound a candidate's
features give holds, so stopping early returns what scoring everything returns."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Literal

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Draft
from hikmah.recall import folding
from hikmah.recall.fusion import embed_now
from hikmah.rules.operations import Feedback, Pin, Remember
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, remember, write
from tests.kernel.recall_cases import REFERENCE, WORDS, ask, contents, policies, unit

from .strategies import examples, notes_of, query_of

_counter = itertools.count()


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
