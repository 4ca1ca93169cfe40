"""``promises.*``: the promise queue, commitments by deadline."""

from __future__ import annotations

from hikmah.model.moment import AsOf, Moment
from hikmah.model.wire.base import Params, Result, Signature
from hikmah.model.wire.memory import Commitment, WithinHours


class PromisesParams(Params, frozen=True, kw_only=True):
    """``promises.list``: which commitments of the queue."""

    within_hours: WithinHours | None = None  # only those due within this many hours
    overdue: bool = False  # only those due by now (whatever within_hours says)
    as_of: AsOf | None = None  # the queue as it stood then (its now is then)


class PromisesResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """Open commitments with a deadline, soonest first. ``as_of`` only for a read as of
    the past (None leaves it out)."""

    commitments: list[Commitment]
    as_of: Moment | None = None  # the record read as of


METHODS = {
    "promises.list": Signature(PromisesParams, PromisesResult),
}
