"""Every refusal rule of REFERENCE.md "Trace and store rules", through the real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.model.errors import (
    AgentRestricted,
    ConflictError,
    HikmahError,
    InvalidInput,
    NotFound,
    PolicyError,
    ProvenanceRefused,
    SecretDetected,
)
from hikmah.model.policy import KernelPolicy, parse_policy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Fulfill, Purge, Remember
from hikmah.rules.writes import build_trace
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import NOW, remember, write

AGENT = AgentSession(host="claude-code", session_id="s-1", variables=("CLAUDECODE",))


def refused(store: Store, draft: Draft, session: AgentSession | None = None) -> HikmahError:
    (outcome,) = store.apply(
        [Remember(draft=draft, session=session)], now_ms=NOW, policy=KernelPolicy()
    )
    assert isinstance(outcome, HikmahError)
    return outcome


def test_defaults_on_write(store: Store) -> None:
    trace = remember(store, "  the build uses ruff  ")
    assert trace.content == "the build uses ruff"
    assert (trace.kind, trace.privacy, trace.scope) == ("observation", "private", "global")
    assert (trace.salience, trace.confidence) == (0.5, 0.5)
    assert trace.provenance.authority == 0.5
    assert trace.provenance.source == "unknown"
    assert trace.provenance.verified is False
    assert trace.created_at == NOW


def test_a_text_over_the_policys_size_limit_is_refused_and_one_at_it_is_kept(
    store: Store,
) -> None:
    policy = KernelPolicy(max_trace_bytes=4096)
    at_limit = "é" * 2048  # 4096 bytes in UTF-8, 2048 characters
    trace = build_trace(Draft(content=at_limit), now_ms=NOW, policy=policy)
    assert trace.content == at_limit
    for over in ("é" * 2049, "x" * 40_000_000):
        with pytest.raises(InvalidInput, match="over the policy's max_trace_bytes") as caught:
            build_trace(Draft(content=over), now_ms=NOW, policy=policy)
        assert "é" not in str(caught.value) and "xxx" not in str(caught.value)
    assert KernelPolicy().max_trace_bytes == 256 * 1024


def test_ids_are_time_sortable_and_distinct(store: Store) -> None:
    ids = [remember(store, f"note {i}", now=NOW + i).id for i in range(50)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 50


@pytest.mark.parametrize(
    ("draft", "error"),
    [
        (Draft(content="   "), InvalidInput),
        (Draft(content="x", kind="prediction"), InvalidInput),
        (Draft(content="x", salience=1.5), InvalidInput),
        (Draft(content="x", confidence=-0.1), InvalidInput),
        (Draft(content="x", authority=2.0), InvalidInput),
        (Draft(content="x", salience=float("nan")), InvalidInput),
        (Draft(content="x", claim_key="k"), InvalidInput),
        (Draft(content="x", claim_value="v"), InvalidInput),
        (Draft(content="x", claim_key="k", claim_value="  "), InvalidInput),
        (Draft(content="x", deadline="next tuesday"), InvalidInput),
        (Draft(content="x", scope="not a scope"), InvalidInput),
        (Draft(content="x", family="f"), InvalidInput),
        (Draft(content="x", tags=("a\x00b",)), InvalidInput),
        (Draft(content="x", source="model:gpt", verified=True), ProvenanceRefused),
        (Draft(content="x", locator="agent-session:codex:1", verified=True), ProvenanceRefused),
        (Draft(content="x", privacy="sensitive"), PolicyError),
        (Draft(content="x", supersedes="tr_missing"), NotFound),
        (Draft(content="password=hunter2hunter2"), SecretDetected),
        (Draft(content="x", tags=("ghp_" + "a1" * 18,)), SecretDetected),
        (
            Draft(content="x", claim_key="db", claim_value="postgres://u:s3cretpw@db"),
            SecretDetected,
        ),
        (Draft(content="x", locator="https://x:hunter22@host/p"), SecretDetected),
        (Draft(content="x", source="AKIA" + "ABCDEFGHIJKLMNOP"), SecretDetected),
    ],
)
def test_refusals(store: Store, draft: Draft, error: type[HikmahError]) -> None:
    outcome = refused(store, draft)
    assert type(outcome) is error
    assert store.read(queries.counts)["active"] == 0
    assert maintenance.verify(store).records == 0  # nothing partial was written


def test_secret_refusal_names_the_field_and_not_the_value(store: Store) -> None:
    token = "ghp_" + "Zq9" * 12
    outcome = refused(store, Draft(content="ok", claim_key="ci.token", claim_value=token))
    assert "claim_value" in str(outcome)
    assert token not in str(outcome) and token[:10] not in str(outcome)


def test_model_source_cannot_supersede(store: Store) -> None:
    old = remember(store, "region is us-east-1")
    outcome = refused(store, Draft(content="region is eu", source="model:x", supersedes=old.id))
    assert isinstance(outcome, ProvenanceRefused)


def test_unverified_cannot_supersede_verified(store: Store) -> None:
    old = remember(store, "region is us-east-1", verified=True, source="human:ana")
    outcome = refused(store, Draft(content="region is eu", supersedes=old.id))
    assert isinstance(outcome, ProvenanceRefused)
    newer = remember(store, "region is eu", verified=True, supersedes=old.id)
    assert store.read(queries.get, old.id).status == "superseded"
    assert store.read(queries.get, old.id).superseded_by == newer.id


def test_superseded_trace_must_be_active(store: Store) -> None:
    old = remember(store, "v1")
    remember(store, "v2", supersedes=old.id)
    outcome = refused(store, Draft(content="v3", supersedes=old.id))
    assert isinstance(outcome, ConflictError)


def test_a_trace_cannot_supersede_itself() -> None:
    draft = Draft(content="x", supersedes="tr_same")
    with pytest.raises(InvalidInput):
        build_trace(draft, now_ms=NOW, policy=KernelPolicy(), trace_id="tr_same")


def test_agent_session_writes_are_stamped(store: Store) -> None:
    (written,) = write(
        store, Remember(draft=Draft(content="x", locator="file.py:3"), session=AGENT)
    )
    assert written.trace is not None
    assert written.trace.provenance.locator == "agent-session:claude-code:s-1; file.py:3"


def test_agent_session_cannot_verify_or_purge(store: Store) -> None:
    outcome = refused(store, Draft(content="x", verified=True), session=AGENT)
    assert isinstance(outcome, AgentRestricted)
    assert "CLAUDECODE" in str(outcome)
    trace = remember(store, "to purge")
    (purge,) = store.apply(
        [Purge(id=trace.id, reason="gdpr", session=AGENT)], now_ms=NOW, policy=KernelPolicy()
    )
    assert isinstance(purge, AgentRestricted)


def test_sensitive_is_accepted_only_with_the_vault(store: Store, tmp_path: Path) -> None:
    policy = parse_policy("allow_sensitive_persistence = true\n[vault]\nenabled = true")
    sensitive = [Remember(draft=Draft(content="x", privacy="sensitive"))]
    # A policy that claims the vault is not enough: the store must hold its keys.
    (outcome,) = store.apply(sensitive, now_ms=NOW, policy=policy)
    assert isinstance(outcome, PolicyError)
    assert "encrypted" in str(outcome)
    with Store(tmp_path / "vaulted", vault=HeldKeys().loader()) as vaulted:
        (outcome,) = vaulted.apply(sensitive, now_ms=NOW, policy=policy)
    assert not isinstance(outcome, HikmahError)


def test_deadline_forms(store: Store) -> None:
    assert remember(store, "a", deadline="+2h").deadline == NOW + 7_200_000
    assert remember(store, "b", deadline="+1d").deadline == NOW + 86_400_000
    assert remember(store, "c", deadline=NOW + 5).deadline == NOW + 5
    assert remember(store, "d", deadline="2026-12-01").deadline == 1_796_083_200_000
    assert remember(store, "e", deadline="2026-12-01T10:30").deadline == 1_796_121_000_000


def test_tags_are_trimmed_lowercased_and_distinct(store: Store) -> None:
    assert remember(store, "x", tags=(" Deploy ", "deploy", "", "CI")).tags == ("deploy", "ci")


def test_one_refusal_in_a_batch_costs_the_others_nothing(store: Store) -> None:
    outcomes = store.apply(
        [
            Remember(draft=Draft(content="first")),
            Remember(draft=Draft(content="")),
            Remember(draft=Draft(content="third")),
        ],
        now_ms=NOW,
        policy=KernelPolicy(),
    )
    assert [isinstance(o, HikmahError) for o in outcomes] == [False, True, False]
    assert maintenance.verify(store).records == 2


def test_fulfill_rules(store: Store) -> None:
    note = remember(store, "an observation")
    todo = remember(store, "ship it", kind="commitment", deadline="+1d")
    (wrong_kind,) = store.apply([Fulfill(id=note.id)], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(wrong_kind, InvalidInput)
    write(store, Fulfill(id=todo.id))
    assert store.read(queries.get, todo.id).status == "fulfilled"
    assert store.read(queries.commitments) == []
    (again,) = store.apply([Fulfill(id=todo.id)], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(again, ConflictError)
