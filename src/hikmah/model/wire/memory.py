"""``memory.*``: the params and results of writing, recalling and reading traces."""

from __future__ import annotations

from hikmah.model.trace import BaseDraft, Trace
from hikmah.model.wire.base import Params, Result, Signature


class RememberParams(BaseDraft, Params, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``memory.remember``: a trace and where it comes from, flat."""


class RememberResult(Result, frozen=True, kw_only=True):
    """The trace as stored, and the active traces claiming another value for its claim."""

    trace: Trace
    conflicts: list[str]


METHODS = {
    "memory.remember": Signature(RememberParams, RememberResult),
}
