"""The daemon's replies as the browser reads them (docs/protocol.md), decoded once.

Traces, proposals and the ledger's report are the kernel's own wire types
(:class:`hikmah.model.trace.Trace`, :class:`hikmah.model.proposal.Proposal`,
:class:`hikmah.ledger.chain.VerifyReport`: modules without the store), and a method
whose types :mod:`hikmah.model.wire` declares is read with them. The other shapes
are declared here, for the client, since the kernel declares them in the daemon:
they take what they name and ignore members a newer daemon may add.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from hikmah.ledger.chain import Head, VerifyReport
from hikmah.model.proposal import Proposal
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Hold
from hikmah.model.wire.memory import StoredTrace

__all__ = ["Head", "Proposal", "Trace", "VerifyReport", "decode"]

T = TypeVar("T")


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every reply shape."""


class CapsuleSummary(_Reply, frozen=True):
    name: str
    size: int
    limit: int
    pinned: int
    notes: int
    idle_s: int


class Capsules(_Reply, frozen=True):
    capsules: list[CapsuleSummary]


class Held(StoredTrace, frozen=True):
    # Defaults only because a field with one (``purged``) comes before; the daemon
    # always sends them.
    activation: float = 0.0
    pinned: bool = False


class Note(_Reply, frozen=True):
    text: str
    importance: float
    at: int


class Capsule(_Reply, frozen=True):
    """``focus.read``: a capsule's traces, most activated first, and its notes."""

    name: str
    limit: int
    traces: list[Held]
    notes: list[Note]


class Proposals(_Reply, frozen=True):
    proposals: list[Proposal]


class Principal(_Reply, frozen=True):
    """The agent session the daemon detected for this connection."""

    host: str
    session_id: str
    variables: list[str] = []


class Reminders(_Reply, frozen=True):
    scheduled: int
    overdue: int


class Waiting(_Reply, frozen=True):
    """How many held traces wait for the person (``daemon.status``'s ``review``, and
    the ``review.waiting`` notification's params)."""

    waiting: int = 0


class DaemonStatus(_Reply, frozen=True):
    pid: int
    version: str
    counts: dict[str, int]
    head: Head | None
    reminders: Reminders
    principal: Principal | None
    data_dir: str
    review: Waiting = msgspec.field(default_factory=Waiting)


class Refusal(_Reply, frozen=True):
    id: str
    reason: str


class Rewritten(_Reply, frozen=True):
    id: str
    correction: str


class Invalidated(_Reply, frozen=True):
    """``memory.invalidate``: what matched, what was refused, what was written."""

    matched: list[Trace]
    refused: list[Refusal]
    written: list[Rewritten]
    dry_run: bool


class Policy(_Reply, frozen=True):
    toml: str
    path: str
    error: str | None


class ReminderDue(_Reply, frozen=True):
    """A ``reminder.due`` notification."""

    trace: Trace
    stage: str
    due_at: int
    late: bool = False
    replayed: bool = False


class ReviewReason(_Reply, frozen=True):
    """A screen rule a quarantined trace matched: its name, what it means, what it
    matched (the agent's text: shown escaped)."""

    rule: str
    meaning: str
    matched: str


class ReviewItem(_Reply, frozen=True):
    """A held trace in the person's review inbox (``review.list``)."""

    trace: Trace
    state: Hold
    reasons: list[ReviewReason] = []
    writer: str | None = None  # agent:<host> when the daemon stamped it
    session: str | None = None  # the agent session's id, from the stamp


class ReviewInbox(_Reply, frozen=True):
    """``review.list``: every held trace that waits counts, ``items`` newest first."""

    waiting: int
    items: list[ReviewItem]


class Decided(_Reply, frozen=True):
    id: str  # the held trace
    by: str  # the trace that accepted or rejected it


class ReviewDecision(_Reply, frozen=True):
    """``review.accept`` and ``review.reject``: what was decided, what was refused."""

    decided: list[Decided]
    refused: list[Refusal]


def decode(value: Any, shape: type[T]) -> T:
    """A reply's JSON value as ``shape``.

    Raises:
        msgspec.ValidationError: the value does not have that shape.
    """
    return msgspec.convert(value, shape)
