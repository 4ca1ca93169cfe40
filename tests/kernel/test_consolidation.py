"""Quiet Replay: proposals exactly by REFERENCE.md "Consolidation", and explicit promotion."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.access.principal import AgentSession
from hikmah.learning.consolidation import claim_proposals, proposals, source_name
from hikmah.model.errors import AgentRestricted, ConflictError
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Provenance, Trace
from hikmah.rules.operations import Promote
from hikmah.store.core import Store
from tests.harness.store import NOW, remember, write

POLICY = KernelPolicy()
AGENT = AgentSession(host="codex", session_id="s1", variables=("CODEX_THREAD_ID",))


def claim(store: Store, value: str, source: str, key: str = "db.engine", **kw: Any) -> Trace:
    return remember(
        store, f"the db is {value}", claim_key=key, claim_value=value, source=source, **kw
    )


def test_a_group_needs_support_sources_confidence_and_no_rival(store: Store) -> None:
    a = claim(store, "postgres", "human:ana", confidence=0.8, verified=True)
    b = claim(store, "postgres", "agent:codex", confidence=0.6)
    claim(store, "redis", "human:bo", key="cache.engine", confidence=0.9)
    (pg, cache) = store.read(proposals, POLICY)
    assert (pg.key, pg.value, pg.support, pg.independent_sources) == ("db.engine", "postgres", 2, 2)
    # 0.7 · mean confidence + 0.3 · share verified
    assert pg.confidence == pytest.approx(0.7 * 0.7 + 0.3 * 0.5)
    assert pg.eligible and pg.evidence == sorted([a.id, b.id]) and pg.origin == "claims"
    assert not cache.eligible and cache.support == 1  # eligible first

    claim(store, "mysql", "human:cy", confidence=0.9)
    rivals = {p.value: p for p in store.read(proposals, POLICY) if p.key == "db.engine"}
    assert not rivals["postgres"].eligible and rivals["postgres"].conflicting_values == ["mysql"]


def test_unattributed_sources_count_once_and_models_and_predictions_not_at_all(
    store: Store,
) -> None:
    for source in ("", "unknown", " User ", "model:gpt"):
        claim(store, "postgres", source, confidence=1.0)
    (proposal,) = store.read(proposals, POLICY)
    assert (proposal.support, proposal.independent_sources) == (3, 1)
    assert not proposal.eligible
    assert source_name("  Human:Ana ") == "human:ana"


def test_promotion_writes_a_belief_with_its_evidence_once(store: Store) -> None:
    claim(store, "postgres", "human:ana", confidence=0.9)
    claim(store, "postgres", "human:bo", confidence=0.9)
    (proposal,) = store.read(proposals, POLICY)
    (written,) = write(store, Promote(proposal=proposal.id, source="human:ana", verified=True))
    belief = written.trace
    assert belief is not None and belief.kind == "belief"
    assert (belief.claim_key, belief.claim_value) == ("db.engine", "postgres")
    assert belief.provenance.evidence == tuple(proposal.evidence)
    assert belief.provenance.verified
    assert store.read(proposals, POLICY) == []  # it restates an active trace now


def test_a_proposal_whose_evidence_changed_is_refused(store: Store) -> None:
    claim(store, "postgres", "human:ana", confidence=0.9)
    claim(store, "postgres", "human:bo", confidence=0.9)
    (shown,) = store.read(proposals, POLICY)
    claim(store, "postgres", "human:cy", confidence=0.9)  # more evidence since it was shown
    (refused,) = store.apply([Promote(proposal=shown.id)], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(refused, ConflictError) and "evidence changed" in str(refused)
    (current,) = store.read(proposals, POLICY)
    assert current.id != shown.id and current.support == 3


def test_only_a_person_promotes_as_verified(store: Store) -> None:
    claim(store, "postgres", "human:ana", confidence=0.9)
    claim(store, "postgres", "human:bo", confidence=0.9)
    (proposal,) = store.read(proposals, POLICY)
    verified = Promote(proposal=proposal.id, verified=True, session=AGENT)
    (refused,) = store.apply([verified], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(refused, AgentRestricted)
    (written,) = write(store, Promote(proposal=proposal.id, session=AGENT, source="agent:codex"))
    assert written.trace is not None and not written.trace.provenance.verified
    assert written.trace.provenance.locator == "agent-session:codex:s1"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.sampled_from(["human:ana", "human:bo", "agent:x", "", "user"]),
            st.floats(0, 1),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_proposals_match_a_direct_reading_of_the_rules(
    rows: list[tuple[str, str, float, bool]],
) -> None:
    traces = [
        Trace(
            id=f"tr_{i:022d}",
            kind="observation",
            content="x",
            created_at=NOW,
            confidence=confidence,
            provenance=Provenance(source=source, observed_at=NOW, verified=verified),
            claim_key="k",
            claim_value=value,
        )
        for i, (value, source, confidence, verified) in enumerate(rows)
    ]
    proposals = {p.value: p for p in claim_proposals(traces, POLICY)}
    values = {value for value, *_ in rows}
    assert set(proposals) == values
    for value, proposal in proposals.items():
        members = [r for r in rows if r[0] == value]
        names = {
            ("" if s.strip().lower() in ("", "unknown", "user") else s) for _, s, _, _ in members
        }
        mean = sum(c for _, _, c, _ in members) / len(members)
        share = sum(v for *_, v in members) / len(members)
        assert proposal.support == len(members)
        assert proposal.independent_sources == len(names)
        assert proposal.confidence == pytest.approx(0.7 * mean + 0.3 * share)
        assert proposal.eligible == (
            len(members) >= 2
            and len(names) >= 2
            and proposal.confidence >= 0.6
            and len(values) == 1
        )
    ordered = claim_proposals(traces, POLICY)
    keys = [(not p.eligible, -p.confidence) for p in ordered]
    assert keys == sorted(keys)


def test_the_thresholds_are_the_policys(store: Store) -> None:
    claim(store, "postgres", "human:ana", confidence=0.9)
    claim(store, "postgres", "human:bo", confidence=0.9)
    strict = KernelPolicy(consolidation_min_support=3)
    assert store.read(proposals, POLICY)[0].eligible
    assert not store.read(proposals, strict)[0].eligible
