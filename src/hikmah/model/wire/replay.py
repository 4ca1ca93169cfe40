"""``replay.*``: consolidation's proposals, promoting one, and ingesting a transcript."""

from __future__ import annotations

from hikmah.model.trace import Trace
from hikmah.model.wire.base import Params, Result, Signature


class PromoteParams(Params, frozen=True):
    id: str
    verified: bool = False
    source: str | None = None


class PromoteResult(Result, frozen=True):
    """The belief written, the active traces claiming another value, and its proposal."""

    trace: Trace
    conflicts: list[str]
    proposal: str


METHODS = {
    "replay.promote": Signature(PromoteParams, PromoteResult),
}
