"""``focus.*``: named, bounded working sets (focus capsules) in the daemon's memory."""

from __future__ import annotations

from hikmah.index import queries
from hikmah.model.errors import NotFound
from hikmah.model.recall import RecallQuery
from hikmah.model.secrets import check_fields
from hikmah.model.wire.base import NoParams, Params
from hikmah.working.focus import FocusCapsule, check_note

from ..context import Context
from ..rpc import JSON, Registry, to_json

registry = Registry()


class FocusName(Params, frozen=True):
    name: str


class FocusTrace(Params, frozen=True):
    name: str
    id: str


class FocusAbsorb(RecallQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str


class FocusNote(Params, frozen=True):
    name: str
    text: str
    importance: float = 0.5


def view(ctx: Context, capsule: FocusCapsule) -> JSON:
    """A capsule with its traces resolved (purged ones dropped), most activated first."""
    traces, gone = [], []
    with ctx.services.store.snapshot() as snapshot:
        for held in capsule.ordered():
            try:
                stored = queries.get(snapshot, held.id)
            except NotFound:
                capsule.held.pop(held.id, None)
                gone.append(held.id)
                continue
            if ctx.hides(stored.trace):
                continue  # held for the person's review: never an agent's to read
            traces.append({**to_json(stored), "activation": held.activation, "pinned": held.pinned})
    return {
        "name": capsule.name,
        "limit": capsule.limit,
        "traces": traces,
        "notes": to_json(capsule.notes),
        "purged": gone,
    }


def _open(ctx: Context, name: str) -> FocusCapsule:
    services = ctx.services
    return services.capsules.open(name, services.policy.working_set_limit, services.now_ms())


@registry.method("focus.open", FocusName)
async def focus_open(ctx: Context, params: FocusName) -> JSON:
    return view(ctx, _open(ctx, params.name))


@registry.method("focus.read", FocusName)
async def focus_read(ctx: Context, params: FocusName) -> JSON:
    return view(ctx, ctx.services.capsules.get(params.name, ctx.services.now_ms()))


@registry.method("focus.absorb", FocusAbsorb)
async def focus_absorb(ctx: Context, params: FocusAbsorb) -> JSON:
    capsule = _open(ctx, params.name)
    results = await ctx.services.recalls.recall(params, ctx, hide_held=ctx.agent is not None)
    evicted = capsule.absorb((r.trace.id, r.score) for r in results)
    return {
        **view(ctx, capsule),
        "absorbed": [r.trace.id for r in results],
        "evicted": evicted,
    }


@registry.method("focus.pin", FocusTrace)
async def focus_pin(ctx: Context, params: FocusTrace) -> JSON:
    capsule = ctx.services.capsules.get(params.name, ctx.services.now_ms())
    ctx.services.store.read(queries.get, params.id)  # NotFound for an unknown or purged trace
    evicted = capsule.pin(params.id)
    return {**view(ctx, capsule), "evicted": evicted}


@registry.method("focus.unpin", FocusTrace)
async def focus_unpin(ctx: Context, params: FocusTrace) -> JSON:
    capsule = ctx.services.capsules.get(params.name, ctx.services.now_ms())
    evicted = capsule.unpin(params.id)
    return {**view(ctx, capsule), "evicted": evicted}


@registry.method("focus.note", FocusNote)
async def focus_note(ctx: Context, params: FocusNote) -> JSON:
    check_fields([("text", params.text)])
    check_note(params.text, params.importance)  # before a capsule is made for it
    capsule = _open(ctx, params.name)
    evicted = capsule.note(params.text, params.importance, ctx.services.now_ms())
    return {"name": capsule.name, "notes": to_json(capsule.notes), "evicted": to_json(evicted)}


@registry.method("focus.close", FocusName)
async def focus_close(ctx: Context, params: FocusName) -> JSON:
    ctx.services.capsules.close(params.name)
    return {"name": params.name, "closed": True}


@registry.method("focus.list", NoParams)
async def focus_list(ctx: Context, params: NoParams) -> JSON:
    capsules, now = ctx.services.capsules, ctx.services.now_ms()
    return {"capsules": [capsules.summary(name, now) for name in capsules.names()]}
