"""``memory.*`` by which memory learns: forecasts, their outcomes, calibration, feedback,
pins and invalidation."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from hikmah.model.trace import Trace
from hikmah.model.vocabulary import PredictionType
from hikmah.model.wire.base import Params, Result, Signature


class PredictParams(Params, frozen=True):
    family: str
    question: str
    type: PredictionType
    p: float
    value: str | None = None
    answer_space: tuple[str, ...] = ()
    source: str | None = None
    locator: str | None = None
    tags: tuple[str, ...] = ()
    scope: str | None = None
    deadline: int | str | None = None  # when the outcome should be known


class PredictResult(Result, frozen=True):
    """The forecast as stored, and the active traces claiming another value for its claim."""

    trace: Trace
    conflicts: list[str]


class OutcomeParams(Params, frozen=True):
    prediction: str
    observed: str
    source: str | None = None
    locator: str | None = None
    note: str | None = None


class OutcomeResult(Result, frozen=True):
    trace: Trace  # the outcome as stored
    resolved: str  # the prediction it resolves


class CalibrationParams(Params, frozen=True):
    family: str | None = None
    family_prefix: str | None = None


class Bin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The forecasts whose p lies in [lower, upper) (the last bin includes 1.0)."""

    lower: float
    upper: float
    n: int
    # None when the bin is empty.
    mean_p: float | None
    mean_o: float | None


class FamilyCalibration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The calibration report of one family, or of every family under a prefix.

    Every number is None when there is nothing to compute it from: no
    outcomes; a skill when the base-rate Brier score is 0 (all outcomes
    equal); Z with a score outcome, or when every forecast is 0, 0.5 or 1.
    """

    # The family, or the prefix followed by "*" for a prefix's aggregate.
    family: str
    n: int
    measurable: bool
    brier: float | None
    base_rate_brier: float | None
    skill: float | None
    ece: float | None
    spiegelhalter_z: float | None
    bins: list[Bin]
    # Why the numbers cannot be trusted yet; empty once measurable.
    note: str


class CalibrationResult(Result, frozen=True):
    families: list[FamilyCalibration]  # by family; a prefix's pooled report first


class FeedbackParams(Params, frozen=True):
    ids: Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=100)]
    outcome: Literal["good", "bad"]


class FeedbackResult(Result, frozen=True):
    ids: list[str]  # the traces acted on, as asked
    outcome: Literal["good", "bad"]  # as asked


class PinParams(Params, frozen=True):
    id: str


class PinResult(Result, frozen=True):
    """``memory.pin`` and ``memory.unpin``."""

    id: str  # the trace
    pinned: bool  # whether the trace is pinned now


class InvalidateParams(Params, frozen=True):
    pattern: str
    reason: str
    tags: tuple[str, ...] = ()
    stale: bool = False
    dry_run: bool = False


class Refused(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A trace left alone, and why."""

    id: str
    reason: str


class Invalidated(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str  # the trace invalidated
    correction: str  # the trace that supersedes it


class InvalidateResult(Result, frozen=True):
    matched: list[Trace]  # the active traces the pattern selects
    refused: list[Refused]  # matched traces left alone, and those whose write failed
    dry_run: bool  # as asked: when true, nothing was written
    written: list[Invalidated]  # empty on a dry run


METHODS = {
    "memory.predict": Signature(PredictParams, PredictResult),
    "memory.outcome": Signature(OutcomeParams, OutcomeResult),
    "memory.calibration": Signature(CalibrationParams, CalibrationResult),
    "memory.feedback": Signature(FeedbackParams, FeedbackResult),
    "memory.pin": Signature(PinParams, PinResult),
    "memory.unpin": Signature(PinParams, PinResult),
    "memory.invalidate": Signature(InvalidateParams, InvalidateResult),
}
