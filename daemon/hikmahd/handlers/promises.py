"""``promises.list``: the promise queue, soonest first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import msgspec

from hikmah.index import queries
from hikmah.index.past import AsOf, now_of
from hikmah.index.snapshot import Snapshot
from hikmah.model.trace import Trace
from hikmah.model.wire.base import Params

from ..context import Context
from ..rpc import JSON, Registry, to_json
from .asof import past, reading

registry = Registry()
HOUR_MS = 3_600_000
MAX_HOURS = 24 * 366 * 100  # a century: any further is "everything"


class PromisesParams(Params, frozen=True):
    within_hours: Annotated[float, msgspec.Meta(ge=0, le=MAX_HOURS)] | None = None
    overdue: bool = False
    as_of: AsOf | None = None  # the queue as it stood then (its now is then)


@registry.method("promises.list", PromisesParams)
async def promises(ctx: Context, params: PromisesParams) -> JSON:
    with reading(ctx.services, params.as_of) as snapshot:
        now = now_of(snapshot, ctx.services.now_ms())
        until = None
        if params.overdue:
            until = now
        elif params.within_hours is not None:
            until = now + int(params.within_hours * HOUR_MS)
        found = due(snapshot, now, until, scope=None, hides=ctx.hides)
        return past({"commitments": found}, snapshot)


def due(
    snapshot: Snapshot,
    now_ms: int,
    until: int | None,
    *,
    scope: str | None,
    hides: Callable[[Trace], bool],
) -> list[JSON]:
    """Open commitments due by ``until``, soonest first (only those holding in ``scope``,
    and not those ``hides`` keeps from the caller), each with whether it is overdue and
    how long until it is due."""
    commitments: list[JSON] = []
    for entry in queries.commitments(snapshot, until_ms=until):
        if scope is not None and entry.trace.scope not in ("global", scope):
            continue
        if hides(entry.trace):
            continue
        deadline = entry.trace.deadline
        assert deadline is not None
        commitments.append(
            {**to_json(entry), "overdue": deadline <= now_ms, "due_in_ms": deadline - now_ms}
        )
    return commitments
