"""The write operations: what a writer asks the store for, and what it wrote."""

from __future__ import annotations

from typing import Literal

import msgspec

from hikmah.access.principal import AgentSession
from hikmah.model.errors import (
    HikmahError,
)
from hikmah.model.trace import (
    Draft,
    Trace,
)
from hikmah.model.vocabulary import Status
from hikmah.sync.chain import Position
from hikmah.sync.plan import Step


class Remember(msgspec.Struct, frozen=True, kw_only=True):
    """Write a trace (and supersede the one it names)."""

    draft: Draft
    session: AgentSession | None = None
    trace_id: str | None = None
    created_at: int | None = None
    allow_prediction: bool = False


class Fulfill(msgspec.Struct, frozen=True, kw_only=True):
    """Mark an active commitment done."""

    id: str
    by: str | None = None
    session: AgentSession | None = None


class Feedback(msgspec.Struct, frozen=True, kw_only=True):
    """A trace that was recalled and acted on led to a good or a bad outcome."""

    id: str
    outcome: Literal["good", "bad"]
    session: AgentSession | None = None


class Pin(msgspec.Struct, frozen=True, kw_only=True):
    """Keep a trace at full weight in recall (``pinned``), or let it decay again."""

    id: str
    pinned: bool
    session: AgentSession | None = None


class Promote(msgspec.Struct, frozen=True, kw_only=True):
    """Write the belief a consolidation proposal describes, if its evidence is unchanged."""

    proposal: str
    verified: bool = False
    source: str | None = None
    session: AgentSession | None = None


class Purge(msgspec.Struct, frozen=True, kw_only=True):
    """Retention deletion: a tombstone, and the trace leaves every index."""

    id: str
    reason: str
    session: AgentSession | None = None


class SetPresence(msgspec.Struct, frozen=True, kw_only=True):
    """Turn person presence on (``set``), change its passphrase, or turn it off
    (``remove``; ``reset`` is the way back from a forgotten passphrase, with the daemon
    stopped). ``hash`` is the new passphrase's Argon2id hash (None to turn it off), and
    ``key`` the public half of the person key it unlocks with ``salt``
    (:mod:`hikmah.access.person`)."""

    action: Literal["set", "change", "remove", "reset"]
    hash: str | None = None
    key: bytes | None = None
    salt: bytes | None = None
    session: AgentSession | None = None


class Pair(msgspec.Struct, frozen=True, kw_only=True):
    """Trust a device a person paired (``hikmah sync invite`` / ``join``): its records
    count from now on, here and on every device that trusts this one."""

    device: str
    key: bytes
    name: str
    invite: str | None = None  # the invitation a join request answered, and the
    grant: bytes | None = None  # person's signature of it (hikmah.access.person.grant)


class RemoveDevice(msgspec.Struct, frozen=True, kw_only=True):
    """Stop trusting a paired device past what this device has applied of it."""

    device: str


class ApplyRemote(msgspec.Struct, frozen=True, kw_only=True):
    """Apply a paired device's records (one step of :func:`hikmah.sync.plan.plan_apply`).

    Nothing is appended to this device's ledger: the records are kept as that
    device published them, and the derived indexes reflect them
    (:mod:`hikmah.store.receive`). ``keys`` are the data keys of its sealed traces
    the daemon opened from envelopes (trace id → key), ``opened`` the seq of
    its chain they reach.
    """

    step: Step
    keys: dict[str, bytes] = msgspec.field(default_factory=dict)
    opened: int | None = None


# What a writer on this device asks for: each becomes records of its own ledger.
Operation = (
    Remember | Fulfill | Feedback | Pin | Promote | Purge | SetPresence | Pair | RemoveDevice
)
# Every way memory changes: this device's operations and other devices' records.
Change = Operation | ApplyRemote


class Applied(msgspec.Struct, frozen=True, kw_only=True):
    """What applying a paired device's records did: how many, the position reached, or
    why its chain halted (a record broke a rule: nothing of the step was applied)."""

    device: str
    records: int
    position: Position
    halted: str | None = None


class Written(msgspec.Struct, frozen=True, kw_only=True):
    """What one successful operation wrote."""

    id: str
    seq: int
    trace: Trace | None = None
    status: Status = "active"
    conflicts: list[str] = msgspec.field(default_factory=list)
    # A purge under the vault: the trace's data key was destroyed with it.
    key_destroyed: bool = False


Outcome = Written | HikmahError
