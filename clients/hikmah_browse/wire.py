"""The daemon's replies as the browser reads them (docs/protocol.md), decoded once.

Traces, proposals, why a trace is held and the ledger's report are the kernel's own wire
types (:class:`hikmah.model.trace.Trace`, :class:`hikmah.model.proposal.Proposal`,
:data:`hikmah.model.wire.review.Hold`, :class:`hikmah.ledger.chain.VerifyReport`: modules
without the store), and a method whose Result :mod:`hikmah.model.wire` declares is read
with it (:mod:`hikmah_browse.api`). The other shapes are declared here, for the client,
since the kernel declares them beside the store (recall's results) or in the daemon: they
take what they name and ignore members a newer daemon may add.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from hikmah.ledger.chain import Head, VerifyReport
from hikmah.model.proposal import Proposal
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Status
from hikmah.model.wire.review import Hold

__all__ = ["Head", "Hold", "Proposal", "Trace", "VerifyReport", "decode"]

T = TypeVar("T")


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every reply shape."""


class Why(_Reply, frozen=True):
    """Every term of a recall score (``memory.recall``'s ``why``; the kernel's own is
    in :mod:`hikmah.recall.ranking`, which loads the store)."""

    matched_terms: list[str]
    coverage: float
    jaccard: float
    lexical: float
    tag_coverage: float
    recency: float
    salience: float
    confidence: float
    provenance: float
    urgency: float
    feedback: float = 0.0
    pinned: bool = False
    overdue: bool = False
    redundancy: float = 0.0


class Hit(_Reply, frozen=True):
    """One recall result."""

    trace: Trace
    status: Status
    score: float
    cue: float
    meta: float
    duplicates: int
    conflicts: list[str]
    supersedes: str | None
    superseded_by: str | None
    why: Why
    held: Hold | None = None  # waits for the person's review (a person's recall only)


class Recalled(_Reply, frozen=True):
    results: list[Hit]


class Moment(_Reply, frozen=True):
    """A ledger record and when it was written (``as_of``, ``purged``, ``written``)."""

    seq: int
    at: int


class Stored(_Reply, frozen=True):
    """A trace with the state the ledger gave it (a StoredTrace); read as of the past,
    ``purged`` when it has been purged since (its text is gone)."""

    trace: Trace
    status: Status
    superseded_by: str | None
    purged: Moment | None = None


class OwnRecord(_Reply, frozen=True):
    """The ledger record that wrote a trace."""

    seq: int
    hash: str | None
    at: int


class Shown(Stored, frozen=True):
    """``memory.show``: the trace, its whole correction chain, oldest first, and the
    record that wrote it."""

    # Defaults only because a field with one (``purged``) comes before; the daemon
    # always sends them.
    history: list[Stored] = msgspec.field(default_factory=list)
    record: OwnRecord | None = None
    held: Hold | None = None  # waits for the person's review


class ClaimValue(_Reply, frozen=True):
    """One value of a claim key's history (``memory.history``)."""

    id: str
    value: str
    source: str
    verified: bool
    written: Moment
    status: Status
    ended: Moment | None
    superseded_by: str | None
    locator: str | None = None


class ClaimHistory(_Reply, frozen=True):
    key: str
    values: list[ClaimValue]


class Past(_Reply, frozen=True):
    """The ``as_of`` of a reply read as of the past."""

    as_of: Moment | None = None


class ConflictValue(_Reply, frozen=True):
    value: str
    ids: list[str]


class Conflict(_Reply, frozen=True):
    key: str
    values: list[ConflictValue]


class Conflicts(_Reply, frozen=True):
    conflicts: list[Conflict]


class Commitment(Stored, frozen=True):
    overdue: bool = False  # (defaults: see Shown)
    due_in_ms: int = 0


class Commitments(_Reply, frozen=True):
    commitments: list[Commitment]


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


class Purged(_Reply, frozen=True):
    id: str
    note: str


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
