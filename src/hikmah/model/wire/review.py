"""``review.*``: what agents wrote that waits for a person's look."""

from __future__ import annotations

from typing import Annotated

import msgspec

from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Hold
from hikmah.model.wire.base import Params, Result, Signature
from hikmah.model.wire.learning import Refused

# Why an agent's trace is held from agents until a person decides: a standing rule of
# an agent's, or text the screen found reading as instructions to an agent.
_IDS = Annotated[list[str], msgspec.Meta(min_length=1, max_length=1000)]


class Reason(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A screen rule a held trace matched: its name, what it means, what it matched."""

    rule: str
    meaning: str
    matched: str


class ReviewItem(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A held trace as the person's inbox shows it."""

    trace: Trace
    state: Hold
    reasons: list[Reason]  # empty unless quarantined
    writer: str | None  # agent:<host> when the daemon stamped it, else None
    session: str | None  # the agent session's id, from the stamp


class ReviewListParams(Params, frozen=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100


class ReviewListResult(Result, frozen=True):
    waiting: int  # every held trace that waits, beyond ``limit`` too
    items: list[ReviewItem]  # newest first


class ReviewAcceptParams(Params, frozen=True):
    ids: _IDS
    # The person's edit of the one trace named: accepted in place of its text.
    content: str | None = None


class ReviewRejectParams(Params, frozen=True):
    ids: _IDS
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class Decided(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str  # the held trace
    by: str  # the trace that accepted or rejected it


class ReviewDecisionResult(Result, frozen=True):
    """``review.accept`` and ``review.reject``."""

    decided: list[Decided]
    refused: list[Refused]  # the traces that do not wait for review, and why


METHODS = {
    "review.list": Signature(ReviewListParams, ReviewListResult),
    "review.accept": Signature(ReviewAcceptParams, ReviewDecisionResult),
    "review.reject": Signature(ReviewRejectParams, ReviewDecisionResult),
}
