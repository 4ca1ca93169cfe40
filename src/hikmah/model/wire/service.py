"""The daemon's own methods: status, backup, stop, the policy, events, and an agent
session's declaration."""

from __future__ import annotations

from typing import Literal

import msgspec

from hikmah.model.head import Head
from hikmah.model.trace import Trace
from hikmah.model.wire.base import NoParams, Params, Result, Signature
from hikmah.model.wire.focus import CapsuleSummary
from hikmah.model.wire.presence import PresenceStatusResult

# The semantic channel's state (hikmahd.semantics says what each means).
SemanticState = Literal["off", "loading", "building", "ready", "unavailable"]

# --- the objects of the replies ------------------------------------------------------


class AgentSession(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A detected coding-agent session (:mod:`hikmah.access.principal` detects it).

    Attributes:
        host: ``claude-code``, ``codex``, ``cursor``, ``gemini-cli``, ``opencode`` or
            ``ai-agent``.
        session_id: The host's session id, or ``"unknown"``.
        variables: Sorted names (never values) of every detected variable.
        processes: The host processes recognised above the peer (their executable,
            or the script their interpreter runs), nearest first.
    """

    host: str
    session_id: str
    variables: tuple[str, ...]
    processes: tuple[str, ...] = ()


class PolicyFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    path: str  # the policy file the daemon reads
    error: str | None  # why its last change is not applied (the one before stays)


class SemanticChannel(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """The semantic channel: its state, and its vectors once the store holds an index of
    them (without one, ``serving`` and the counts are left out: None)."""

    enabled: bool  # [semantic] enabled
    model: str  # the policy's model
    state: SemanticState
    error: str | None  # why it is unavailable
    fallback: str | None  # why another model serves than the policy's
    serving: str | None = None  # the model the vectors are of
    version: str | None = None  # its version
    vectors: int | None = None  # held, in both indexes (a long document holds several)
    graph: int | None = None  # of them in the HNSW graph
    documents: int | None = None  # documents the vectors reflect or are behind on
    behind: int | None = None  # of them, how many still wait for their vectors


class Reminders(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The promise queue in brief."""

    scheduled: int  # active commitments with a deadline
    overdue: int  # of which the deadline has passed
    next: Trace | None  # the soonest the caller may see


class Waiting(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How many held traces wait for the person (``daemon.status``'s ``review``, and the
    ``review.waiting`` notification's params)."""

    waiting: int


# --- the methods ---------------------------------------------------------------------


class DaemonStatusResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """The daemon, the store, the policy, the reminders. Served from the first moments of
    a start, while presence is still read from the ledger: then ``loading`` names it and
    ``presence`` is left out, and the other way round once it is read (None leaves each
    out)."""

    pid: int
    version: str  # hikmahd's
    uptime_s: float
    socket: str
    data_dir: str
    counts: dict[str, int]  # traces by status
    head: Head | None  # the acknowledged head; None for an empty ledger
    policy: PolicyFile
    vault: bool  # text is sealed at rest
    semantic: SemanticChannel
    reminders: Reminders
    review: Waiting
    principal: AgentSession | None  # the agent session of this connection, if any
    focus: list[CapsuleSummary]  # the open focus capsules, by name
    subscribers: int  # connections subscribed to events
    presence: PresenceStatusResult | None = None  # as presence.status tells it
    loading: list[str] | None = None  # what is still being read: ["presence"]


class BackupParams(Params, frozen=True):
    dir: str  # absolute: the daemon does not share the client's working directory


class BackupResult(Result, frozen=True, kw_only=True):
    """The backup's directory, and its manifest (``manifest.json`` in it)."""

    dir: str
    format: Literal["hikmah-backup"]
    version: int  # the backup layout's
    hikmah: str  # the version of hikmahd that made it
    created_at: int  # epoch ms
    records: int  # ledger records in the copy
    head: Head | None  # the copy's acknowledged head; None for an empty store
    data_bytes: int  # size of lmdb/data.mdb
    data_blake3: str  # its hex BLAKE3


class StopResult(Result, frozen=True, kw_only=True):
    pid: int  # the daemon's process: a client waits for it to exit
    # systemd passed the socket: its socket unit starts a daemon again on the next connection
    socket_activated: bool


class PolicyParams(Params, frozen=True):
    defaults: bool = False  # the built-in defaults instead of the policy in force


class PolicyResult(Result, frozen=True, kw_only=True):
    toml: str  # the policy, every field, as TOML
    defaults: bool  # as asked
    path: str  # the policy file
    exists: bool  # whether there is one
    error: str | None  # why its last change is not applied (the one before stays)


class SubscribeResult(Result, frozen=True, kw_only=True):
    subscribed: bool  # always true
    already: bool  # this connection was subscribed before
    events: list[str]  # the notifications it receives


class RestrictParams(Params, frozen=True):
    host: str  # the agent tool, e.g. claude-code
    session_id: str | None = None


class RestrictResult(Result, frozen=True, kw_only=True):
    restricted: bool  # always true
    principal: AgentSession  # the connection's agent session from now on


METHODS = {
    "daemon.status": Signature(NoParams, DaemonStatusResult),
    "daemon.backup": Signature(BackupParams, BackupResult),
    "daemon.stop": Signature(NoParams, StopResult),
    "policy.get": Signature(PolicyParams, PolicyResult),
    "events.subscribe": Signature(NoParams, SubscribeResult),
    "session.restrict": Signature(RestrictParams, RestrictResult),
}
