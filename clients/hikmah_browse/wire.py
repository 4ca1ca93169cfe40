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

__all__ = ["Head", "Hold", "Proposal", "Trace", "VerifyReport", "decode"]

T = TypeVar("T")


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every reply shape."""


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


def decode(value: Any, shape: type[T]) -> T:
    """A reply's JSON value as ``shape``.

    Raises:
        msgspec.ValidationError: the value does not have that shape.
    """
    return msgspec.convert(value, shape)
