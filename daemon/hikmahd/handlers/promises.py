"""``promises.list``: the promise queue, soonest first."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from hikmah.index import queries
from hikmah.index.past import now_of
from hikmah.index.snapshot import Snapshot
from hikmah.model.trace import Trace
from hikmah.model.wire.memory import Commitment
from hikmah.model.wire.promises import PromisesParams, PromisesResult

from ..context import Context
from ..rpc import Registry
from .asof import reading

registry = Registry()
HOUR_MS = 3_600_000


@registry.method("promises.list")
async def promises(ctx: Context, params: PromisesParams) -> PromisesResult:
    with reading(ctx.services, params.as_of) as snapshot:
        now = now_of(snapshot, ctx.services.now_ms())
        until = None
        if params.overdue:
            until = now
        elif params.within_hours is not None:
            until = now + int(params.within_hours * HOUR_MS)
        found = due(snapshot, now, until, scope=None, hides=ctx.hides)
        return PromisesResult(commitments=found, as_of=snapshot.point)


def due(
    snapshot: Snapshot,
    now_ms: int,
    until: int | None,
    *,
    scope: str | None,
    hides: Callable[[Trace], bool],
) -> list[Commitment]:
    """Open commitments due by ``until``, soonest first (only those holding in ``scope``,
    and not those ``hides`` keeps from the caller), each with whether it is overdue and
    how long until it is due."""
    commitments: list[Commitment] = []
    for entry in queries.commitments(snapshot, until_ms=until):
        if scope is not None and entry.trace.scope not in ("global", scope):
            continue
        if hides(entry.trace):
            continue
        deadline = entry.trace.deadline
        assert deadline is not None
        commitments.append(
            Commitment(
                **msgspec.structs.asdict(entry),
                overdue=deadline <= now_ms,
                due_in_ms=deadline - now_ms,
            )
        )
    return commitments
