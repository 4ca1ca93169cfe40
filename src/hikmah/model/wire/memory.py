"""``memory.*``: the params and results of writing, recalling and reading traces.

The objects of the replies that read traces (:class:`StoredTrace`, a claim's values,
its conflicts, the record that wrote a trace) are the index's own results: the index
builds them (:mod:`hikmah.index.queries`) and the daemon answers with them as they are.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from hikmah.model import recall
from hikmah.model.moment import AsOf, Moment
from hikmah.model.trace import BaseDraft, Trace
from hikmah.model.vocabulary import STANDING_KINDS, Hold, Kind, Status
from hikmah.model.wire.base import Params, Result, Signature

# The furthest ahead a read of commitments looks: a century, any further is "everything".
MAX_HOURS = 24 * 366 * 100
WithinHours = Annotated[float, msgspec.Meta(ge=0, le=MAX_HOURS)]


# --- the objects of the replies ------------------------------------------------------


class StoredTrace(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A trace with the state the ledger has given it since it was written."""

    trace: Trace
    status: Status  # active, superseded or fulfilled
    superseded_by: str | None  # the trace that superseded it (the first, of several)
    # Read as of a point before its purge: when it was purged (its text is gone). Only
    # such a read has it, so it is left out when None.
    purged: Moment | None = None


class Commitment(StoredTrace, frozen=True, kw_only=True):
    """An open commitment of the promise queue, and how far its deadline is from now."""

    overdue: bool  # its deadline is now or past
    due_in_ms: int  # deadline - now; negative when overdue


class Origin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The device a trace was written on."""

    device: str  # its device id
    name: str | None  # the name it was paired with (this device's own name, for this one)
    this_device: bool


class Recalled(recall.RecallResult, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One recall result as a caller reads it: where it was written, and whether it waits
    for the person's review."""

    origin: Origin | None  # None while this device does not sync
    held: Hold | None  # only an active trace, and only a person ever reads a held one


class ConflictValue(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One value of an open conflict, and the active traces claiming it."""

    value: str  # normalised (NFC, whitespace collapsed; case kept)
    ids: list[str]


class ConflictGroup(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An open conflict: a claim key with several values among active traces."""

    key: str  # normalised (NFC, whitespace collapsed, lowercase)
    values: list[ConflictValue]


class ClaimValue(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One value a claim key was given: by which trace, who, when, and until when."""

    id: str  # the trace that set it
    value: str  # as its trace wrote it
    source: str
    locator: str | None  # an agent session's stamp says who wrote it, whatever the source
    verified: bool  # a person checked it
    written: Moment  # the record that wrote it
    status: Status
    ended: Moment | None  # when it stopped holding (superseded or fulfilled)
    superseded_by: str | None  # the correction that superseded it


class OwnRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The ledger record that wrote a trace (``device``: a paired device's chain, whose
    record it is; None for this device's ledger)."""

    seq: int  # its place in its chain
    hash: str | None  # as the record states it; None only when the ledger no longer holds it
    at: int  # when it was written
    device: str | None = None


class Sampled(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A trace of a selection, as its preview shows it."""

    id: str
    kind: Kind
    preview: str  # its text, credentials redacted, at most 80 characters


class Refusal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A trace a write left as it was, and why."""

    id: str
    reason: str  # the error that refused it


# --- the methods ---------------------------------------------------------------------


class RememberParams(BaseDraft, Params, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``memory.remember``: a trace and where it comes from, flat."""


class RememberResult(Result, frozen=True, kw_only=True):
    """The trace as stored, and the active traces claiming another value for its claim."""

    trace: Trace
    conflicts: list[str]


class RecallParams(
    recall.RecallQuery, Params, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """``memory.recall``: what to recall, and where to put the results."""

    focus: str | None = None  # absorb the results into this focus capsule
    as_of: AsOf | None = None  # a ledger sequence number, or a time


class RecallResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """The results, best first. ``as_of`` and ``evicted`` are there only when asked for
    (a recall as of the past; one with a focus), so None leaves them out."""

    results: list[Recalled]  # by score, best first
    as_of: Moment | None = None  # the record read as of
    evicted: list[str] | None = None  # what the focus capsule let go to stay in its limit


class ShowParams(Params, frozen=True, kw_only=True):
    """``memory.show``: one trace."""

    id: str
    as_of: AsOf | None = None  # a ledger sequence number, or a time


class ShowResult(StoredTrace, Result, frozen=True, kw_only=True, omit_defaults=True):
    """The trace with its state, and all that a person looks at it for. ``as_of`` only
    for a read as of the past (None leaves it out)."""

    held: Hold | None  # waits for the person's review
    history: list[StoredTrace]  # its correction chain, oldest first, itself included
    record: OwnRecord  # the ledger record that wrote it
    successors: list[str]  # every trace that supersedes it
    origin: Origin | None  # the device it was written on (None: this one does not sync)
    as_of: Moment | None = None  # the record read as of


class ConflictsParams(Params, frozen=True, kw_only=True):
    """``memory.conflicts``: every open conflict, or one."""

    key: str | None = None  # only the conflict on this claim key
    as_of: AsOf | None = None


class ConflictsResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """Open conflicts by key. ``as_of`` only for a read as of the past."""

    conflicts: list[ConflictGroup]  # by key
    as_of: Moment | None = None  # the record read as of


class HistoryParams(Params, frozen=True, kw_only=True):
    """``memory.history``: a claim key's values."""

    key: str
    as_of: AsOf | None = None


class HistoryResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """Every value the key was given, in write order. ``as_of`` only for a read as of
    the past."""

    key: str  # as asked
    values: list[ClaimValue]
    as_of: Moment | None = None  # the record read as of


class IdParams(Params, frozen=True, kw_only=True):
    """The params of a method that takes one trace: ``memory.fulfill`` (and
    ``memory.pin``, ``memory.unpin``)."""

    id: str


class FulfillResult(Result, frozen=True, kw_only=True):
    """The commitment, now fulfilled."""

    id: str  # the commitment
    status: Literal["fulfilled"]


class ContextParams(Params, frozen=True, kw_only=True):
    """``memory.context``: what a session starts with, in a scope."""

    scope: str | None = None  # e.g. project:/path; global traces are always included
    kinds: tuple[Kind, ...] = STANDING_KINDS  # the kinds of standing rules
    verified_only: bool = False
    within_hours: WithinHours = 24.0  # commitments due within this many hours
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20  # most standing traces


class ContextResult(Result, frozen=True, kw_only=True):
    """Standing rules, commitments due soon, open conflicts, and how many held traces
    wait for the person (never which)."""

    scope: str  # as asked ("global" for none)
    standing: list[StoredTrace]  # verified first, then by authority, then newest
    commitments: list[Commitment]  # due by then, soonest first
    conflicts: list[ConflictGroup]  # every open one
    awaiting_review: int  # held traces waiting for the person


class VerifyParams(Params, frozen=True, kw_only=True):
    """``memory.verify``: the traces of a source that a person checked."""

    source: str  # e.g. tool:mem0: the provenance source of the traces to verify
    scope: str | None = None
    kinds: tuple[Kind, ...] = ()
    # The "selection" of the preview the person confirmed; without it, only the preview.
    confirm: str | None = None


class VerifyResult(Result, frozen=True, kw_only=True):
    """The selection, and (confirmed) what verifying it did."""

    matched: int  # how many traces the selection holds
    selection: str  # its name: a digest of its ids
    sample: list[Sampled]  # its first ones
    verified: int  # copies written (0 for a preview)
    already: int  # copies another call wrote meanwhile
    refused: list[Refusal]


class PurgeParams(Params, frozen=True, kw_only=True):
    """``memory.purge``: a trace to delete for good, and why."""

    id: str
    reason: str


class PurgeResult(Result, frozen=True, kw_only=True):
    """The trace purged, and what purging did and did not remove."""

    id: str  # the trace
    status: Literal["purged"]
    key_destroyed: bool  # it was sealed, and its data key is gone
    note: str  # what purging did and did not remove


METHODS = {
    "memory.remember": Signature(RememberParams, RememberResult),
    "memory.recall": Signature(RecallParams, RecallResult),
    "memory.show": Signature(ShowParams, ShowResult),
    "memory.conflicts": Signature(ConflictsParams, ConflictsResult),
    "memory.history": Signature(HistoryParams, HistoryResult),
    "memory.fulfill": Signature(IdParams, FulfillResult),
    "memory.context": Signature(ContextParams, ContextResult),
    "memory.verify": Signature(VerifyParams, VerifyResult),
    "memory.purge": Signature(PurgeParams, PurgeResult),
}
