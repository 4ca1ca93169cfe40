"""``memory.*``: write a trace, recall, show, conflicts, fulfil, session context, purge.

Forecasts, feedback, pins and invalidation are :mod:`.learning`; export and
import are :mod:`.transfer`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from hikmah import queries
from hikmah.recall import RecallQuery
from hikmah.rules import Fulfill, Purge, Remember
from hikmah.trace import BaseDraft, Draft
from hikmah.vocabulary import STANDING_KINDS, Kind

from ..context import Context
from ..rpc import JSON, NoParams, Params, Registry, to_json
from .promises import HOUR_MS, MAX_HOURS, due

registry = Registry()


class IdParams(Params, frozen=True):
    id: str


@registry.method("memory.remember", BaseDraft)
async def remember(ctx: Context, params: BaseDraft) -> JSON:
    draft = Draft(**msgspec.structs.asdict(params))
    written = await ctx.services.writer.write(Remember(draft=draft, session=ctx.session))
    return {"trace": to_json(written.trace), "conflicts": written.conflicts}


class RecallParams(RecallQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    focus: str | None = None  # absorb the results into this focus capsule


@registry.method("memory.recall", RecallParams)
async def recall(ctx: Context, params: RecallParams) -> JSON:
    services = ctx.services
    results = await services.recalls.recall(params, ctx)
    reply: dict[str, JSON] = {"results": to_json(results)}
    if params.focus is not None:
        capsule = services.capsules.open(
            params.focus, services.policy.working_set_limit, services.now_ms()
        )
        reply["evicted"] = capsule.absorb((r.trace.id, r.score) for r in results)
    return reply


@registry.method("memory.show", IdParams)
async def show(ctx: Context, params: IdParams) -> JSON:
    with ctx.services.store.snapshot() as snapshot:
        current = queries.get(snapshot, params.id)
        history = queries.history(snapshot, params.id)
    return {**to_json(current), "history": to_json(history)}


@registry.method("memory.conflicts", NoParams)
async def conflicts(ctx: Context, params: NoParams) -> JSON:
    return {"conflicts": to_json(ctx.services.store.read(queries.conflicts))}


@registry.method("memory.fulfill", IdParams)
async def fulfill(ctx: Context, params: IdParams) -> JSON:
    await ctx.services.writer.write(Fulfill(id=params.id, session=ctx.session))
    return {"id": params.id, "status": "fulfilled"}


class ContextParams(Params, frozen=True):
    scope: str | None = None  # e.g. project:/path; global traces are always included
    kinds: tuple[Kind, ...] = STANDING_KINDS
    verified_only: bool = False
    within_hours: Annotated[float, msgspec.Meta(ge=0, le=MAX_HOURS)] = 24.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20


@registry.method("memory.context", ContextParams)
async def context(ctx: Context, params: ContextParams) -> JSON:
    """What a session should start with: standing rules, commitments due soon, open conflicts."""
    now = ctx.services.now_ms()
    until = now + int(params.within_hours * HOUR_MS)
    with ctx.services.store.snapshot() as snapshot:
        standing = queries.standing(
            snapshot,
            kinds=params.kinds,
            scope=params.scope,
            verified_only=params.verified_only,
            limit=params.limit,
        )
        commitments = due(snapshot, now, until, scope=params.scope)
        open_conflicts = queries.conflicts(snapshot)
    return {
        "scope": params.scope or "global",
        "standing": to_json(standing),
        "commitments": commitments,
        "conflicts": to_json(open_conflicts),
    }


class PurgeParams(Params, frozen=True):
    id: str
    reason: str


# A person alone purges: the write rules refuse an agent's purge, on every path.
@registry.method("memory.purge", PurgeParams)
async def purge(ctx: Context, params: PurgeParams) -> JSON:
    operation = Purge(id=params.id, reason=params.reason, session=ctx.session)
    written = await ctx.services.writer.write(operation)
    gone = "the trace is gone from recall, show, export and every index"
    if written.key_destroyed:
        note = f"{gone}; its data key was destroyed, so its encrypted text is unrecoverable"
    else:
        note = f"{gone}; its text remains in the ledger until you run hikmah compact"
    return {
        "id": params.id,
        "status": "purged",
        "key_destroyed": written.key_destroyed,
        "note": note,
    }
