"""``memory.*`` by which memory learns: forecasts, their outcomes, calibration, feedback,
pins and invalidation."""

from __future__ import annotations

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


METHODS = {
    "memory.predict": Signature(PredictParams, PredictResult),
}
