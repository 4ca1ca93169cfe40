"""``focus.*``: focus capsules, the working set of a task."""

from __future__ import annotations

import msgspec

from hikmah.model.recall import RecallQuery
from hikmah.model.wire.base import NoParams, Params, Result, Signature
from hikmah.model.wire.memory import StoredTrace


class CapsuleParams(Params, frozen=True):
    """``focus.open``, ``focus.read`` and ``focus.close``."""

    name: str


class CapsuleTraceParams(Params, frozen=True):
    """``focus.pin`` and ``focus.unpin``."""

    name: str
    id: str


class AbsorbParams(RecallQuery, Params, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``focus.absorb``: a recall, and the capsule its results go into."""

    name: str


class NoteParams(Params, frozen=True):
    name: str
    text: str
    importance: float = 0.5


class Note(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A working-memory note of a capsule."""

    text: str
    importance: float  # 0-1: the least important note leaves first
    at: int  # when it was pushed, epoch ms


class CapsuleTrace(StoredTrace, frozen=True, kw_only=True):
    """A trace a capsule holds: as stored, with its place in the capsule."""

    activation: float  # the scores it was absorbed with, summed
    pinned: bool  # kept whatever is absorbed later


class CapsuleResult(Result, frozen=True):
    """The capsule view: ``focus.open`` and ``focus.read``, and the start of the replies
    that change what a capsule holds."""

    name: str  # the capsule
    limit: int  # most traces it holds
    traces: list[CapsuleTrace]  # pinned first, then by activation
    notes: list[Note]  # in the order pushed
    purged: list[str]  # held traces purged since they were absorbed, dropped now


class AbsorbResult(CapsuleResult, frozen=True):
    absorbed: list[str]  # the recalled ids, best first
    evicted: list[str]  # the ids that left, possibly some just absorbed


class CapsulePinResult(CapsuleResult, frozen=True):
    """``focus.pin`` and ``focus.unpin``."""

    evicted: list[str]  # the ids that left to make room (or to meet a lowered limit)


class NoteResult(Result, frozen=True):
    name: str  # the capsule
    notes: list[Note]  # every note now held, in the order pushed
    evicted: list[Note]  # the notes that left, possibly the new one


class CloseResult(Result, frozen=True):
    name: str  # the capsule
    closed: bool  # always true: a capsule that is not open is not_found


class CapsuleSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An open capsule, as listed."""

    name: str
    size: int  # traces held
    limit: int
    pinned: int  # traces pinned
    notes: int  # notes held
    idle_s: int  # whole seconds since it was last used


class FocusListResult(Result, frozen=True):
    capsules: list[CapsuleSummary]  # by name


METHODS = {
    "focus.open": Signature(CapsuleParams, CapsuleResult),
    "focus.read": Signature(CapsuleParams, CapsuleResult),
    "focus.absorb": Signature(AbsorbParams, AbsorbResult),
    "focus.pin": Signature(CapsuleTraceParams, CapsulePinResult),
    "focus.unpin": Signature(CapsuleTraceParams, CapsulePinResult),
    "focus.note": Signature(NoteParams, NoteResult),
    "focus.close": Signature(CapsuleParams, CloseResult),
    "focus.list": Signature(NoParams, FocusListResult),
}
