"""Person presence in the kernel: the passphrase's Argon2id hash, the state the ledger
gives (its records checked), and the write rule that only a present person changes it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from hikmah.access.presence import PresenceState, check_passphrase, hash_passphrase
from hikmah.access.principal import UNPROVEN_PERSON, AgentSession
from hikmah.model.errors import AgentRestricted, InvalidInput, PresenceRequired
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember, SetPresence
from hikmah.store import core as store_module
from hikmah.store.core import Store

AGENT = AgentSession(host="codex", session_id="c-1", variables=("CODEX_SESSION_ID",))


def test_a_passphrase_is_kept_as_an_argon2id_hash_only() -> None:
    hashed = hash_passphrase("correct horse battery")
    assert hashed.startswith("$argon2id$") and "correct horse" not in hashed
    assert check_passphrase(hashed, "correct horse battery")
    assert not check_passphrase(hashed, "correct horse batterY")
    assert not check_passphrase("not a hash", "correct horse battery")
    with pytest.raises(InvalidInput, match="at least 8"):
        hash_passphrase("short")


def test_only_a_present_person_changes_presence_and_the_store_keeps_the_state(
    tmp_path: Path,
) -> None:
    policy = KernelPolicy()
    with Store(tmp_path, durable=False) as store:
        for session, error in ((AGENT, AgentRestricted), (UNPROVEN_PERSON, PresenceRequired)):
            (outcome,) = store.apply(
                [SetPresence(action="set", hash="$argon2id$x", session=session)],
                now_ms=1, policy=policy,
            )  # fmt: skip
            assert isinstance(outcome, error), outcome
        assert not store.presence.on
        store.apply([SetPresence(action="set", hash="$argon2id$x")], now_ms=2, policy=policy)
        assert store.presence.on and store.presence.action == "set"
        (refused,) = store.apply(
            [Remember(draft=Draft(content="x", kind="observation", verified=True),
                      session=UNPROVEN_PERSON)], now_ms=3, policy=policy,
        )  # fmt: skip
        assert isinstance(refused, PresenceRequired)
        (plain,) = store.apply(
            [Remember(draft=Draft(content="y", kind="observation"), session=UNPROVEN_PERSON)],
            now_ms=4, policy=policy,
        )  # fmt: skip
        assert not isinstance(plain, Exception) and plain.trace is not None
        assert plain.trace.provenance.locator is None  # a person's write: not stamped
        (bad,) = store.apply(
            [SetPresence(action="remove", hash="$argon2id$y")], now_ms=5, policy=policy
        )
        assert isinstance(bad, InvalidInput)
    with Store(tmp_path, durable=False) as store:  # read back from the ledger
        assert store.presence.hash == "$argon2id$x" and store.presence.seq == 1


def test_opening_a_store_does_not_walk_the_ledger_for_presence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The walk reads every record: before READY it cost 1.5 s at a million (bench/run).
    policy = KernelPolicy()
    with Store(tmp_path, durable=False) as store:
        store.apply([SetPresence(action="set", hash="$argon2id$x")], now_ms=1, policy=policy)
    walks: list[int | None] = []
    real = store_module.read_state

    def counted(records: Iterable[tuple[int, bytes]], head: int | None) -> PresenceState:
        walks.append(head)
        return real(records, head)

    monkeypatch.setattr(store_module, "read_state", counted)
    with Store(tmp_path, durable=False) as store:
        assert walks == []
        assert store.presence.on and store.presence.seq == 1  # read on first use
        assert walks == [1]
        (refused,) = store.apply(
            [Remember(draft=Draft(content="x", kind="observation", verified=True),
                      session=UNPROVEN_PERSON)], now_ms=2, policy=policy,
        )  # fmt: skip
        assert isinstance(refused, PresenceRequired)
        assert walks == [1]  # once: the store keeps it from then on
    with Store(tmp_path, durable=False) as store:  # a write first reads it too
        (refused,) = store.apply(
            [Remember(draft=Draft(content="x", kind="observation", verified=True),
                      session=UNPROVEN_PERSON)], now_ms=3, policy=policy,
        )  # fmt: skip
        assert isinstance(refused, PresenceRequired)
