"""Resonance Recall's exclusions and filters: superseded, predictions, sensitive, kinds, scopes,
statuses, sources, verified, matched terms and the limit."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from hikmah.access.principal import AgentSession
from hikmah.model.policy import parse_policy, reference_policy
from hikmah.model.recall import RecallQuery
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmah.store.core import Store
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import DAY, NOW, remember, remember_forecast, write
from tests.kernel.recall_cases import ask, contents


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


def test_ties_newer_first_and_limits(store: Store) -> None:
    for i in range(12):
        remember(store, f"token rotation step {i}", now=NOW - i)
    results = ask(store, "token rotation", limit=50)
    assert len(results) == 8  # min(limit, recall_limit)
    assert len(ask(store, "token rotation", limit=3)) == 3
    same_score = [r for r in results if r.score == results[0].score]
    created = [r.trace.created_at for r in same_score]
    assert created == sorted(created, reverse=True)


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
