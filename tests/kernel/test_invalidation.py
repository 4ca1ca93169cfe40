"""Invalidation: which traces a pattern selects, and the correction each one gets."""

from __future__ import annotations

import pytest

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.learning.invalidation import (
    check_pattern,
    invalidation_draft,
    invalidation_plan,
    matching,
)
from hikmah.model.errors import InvalidInput, ProvenanceRefused
from hikmah.model.trace import Provenance, Trace
from hikmah.rules.operations import Remember
from hikmah.store.core import Store
from tests.harness.store import NOW, remember, write


def test_matching_ignores_case_and_spacing_and_needs_every_tag(store: Store) -> None:
    a = remember(store, "Deploy  with Fabric to web-1", tags=("ops",))
    b = remember(store, "deploy with fabric to web-2")
    remember(store, "fabric softener")
    traces = [a, b]
    assert matching(traces, "deploy WITH fabric", ()) == [a, b]
    assert matching(traces, "deploy with fabric", ("OPS",)) == [a]
    assert matching(traces, "", ("ops",)) == [a]
    with pytest.raises(InvalidInput, match="pattern"):
        check_pattern("  ", ())


def test_a_correction_per_trace_that_can_be_undone(store: Store) -> None:
    old = remember(store, "db is mysql", claim_key="db", claim_value="mysql", tags=("infra",))
    draft = invalidation_draft(old, reason="migrated", stale=False, verified=True, source=None)
    (written,) = write(store, Remember(draft=draft))
    assert written.trace is not None
    assert written.trace.content == "Invalidated (migrated): db is mysql"
    assert written.trace.claim_key is None and "invalidated" in written.trace.tags
    assert store.read(queries.get, old.id).status == "superseded"
    # Undo: supersede the correction with the original statement.
    (restored,) = write(
        store,
        Remember(
            draft=invalidation_draft(
                written.trace, reason="undo", stale=False, verified=True, source=None
            )
        ),
    )
    assert (
        store.read(queries.get, written.trace.id).status == "superseded"
        and restored.trace is not None
    )


def test_stale_keeps_the_claim_at_half_confidence(store: Store) -> None:
    old = remember(store, "cache ttl is 60s", claim_key="ttl", claim_value="60", confidence=0.8)
    draft = invalidation_draft(old, reason="unsure", stale=True, verified=False, source=None)
    assert (draft.claim_key, draft.confidence) == ("ttl", 0.4)
    assert draft.content.startswith("Stale (unsure): ")
    with pytest.raises(InvalidInput, match="say why"):
        invalidation_draft(old, reason=" ", stale=True, verified=False, source=None)


def test_an_unverified_invalidation_cannot_touch_a_verified_trace(store: Store) -> None:
    rule = remember(store, "never force-push", kind="constraint", verified=True)
    draft = invalidation_draft(rule, reason="x", stale=False, verified=False, source=None)
    with pytest.raises(ProvenanceRefused):
        write(store, Remember(draft=draft))


def test_an_agent_session_leaves_verified_traces_to_a_person() -> None:
    checked = Trace(
        id="tr_1", kind="procedure", content="deploy with make", created_at=NOW,
        provenance=Provenance(source="human:ana", verified=True),
    )  # fmt: skip
    loose = Trace(id="tr_2", kind="observation", content="deploy is slow", created_at=NOW)
    agent = AgentSession(host="codex", session_id="1", variables=("CODEX_SESSION_ID",))
    plan = invalidation_plan(
        [checked, loose], session=agent, source="agent:codex", reason="moved", stale=False
    )
    assert [t.id for t in plan.chosen] == ["tr_2"]
    assert [(r.id, r.reason) for r in plan.refused] == [
        ("tr_1", "verified: only a person can invalidate it")
    ]
    assert [d.supersedes for d in plan.drafts] == ["tr_2"] and not plan.drafts[0].verified
    assert plan.drafts[0].source == "agent:codex"
    person = invalidation_plan(
        [checked, loose], session=None, source="human:ana", reason="moved", stale=False
    )
    assert [t.id for t in person.chosen] == ["tr_1", "tr_2"] and not person.refused
    assert all(d.verified and d.source == "human:ana" for d in person.drafts)
