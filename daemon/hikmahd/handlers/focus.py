"""``focus.*``: named, bounded working sets (focus capsules) in the daemon's memory."""

from __future__ import annotations

from msgspec.structs import asdict

from hikmah.index import queries
from hikmah.model.errors import NotFound
from hikmah.model.secrets import check_fields
from hikmah.model.wire.base import NoParams
from hikmah.model.wire.focus import (
    AbsorbParams,
    AbsorbResult,
    CapsuleParams,
    CapsulePinResult,
    CapsuleResult,
    CapsuleTrace,
    CapsuleTraceParams,
    CloseResult,
    FocusListResult,
    NoteParams,
    NoteResult,
)
from hikmah.working.focus import FocusCapsule, check_note

from ..context import Context
from ..rpc import Registry

registry = Registry()


def view(ctx: Context, capsule: FocusCapsule) -> CapsuleResult:
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
            traces.append(
                CapsuleTrace(
                    trace=stored.trace,
                    status=stored.status,
                    superseded_by=stored.superseded_by,
                    activation=held.activation,
                    pinned=held.pinned,
                )
            )
    return CapsuleResult(
        name=capsule.name,
        limit=capsule.limit,
        traces=traces,
        notes=list(capsule.notes),
        purged=gone,
    )


def _open(ctx: Context, name: str) -> FocusCapsule:
    services = ctx.services
    return services.capsules.open(name, services.policy.working_set_limit, services.now_ms())


@registry.method("focus.open")
async def focus_open(ctx: Context, params: CapsuleParams) -> CapsuleResult:
    return view(ctx, _open(ctx, params.name))


@registry.method("focus.read")
async def focus_read(ctx: Context, params: CapsuleParams) -> CapsuleResult:
    return view(ctx, ctx.services.capsules.get(params.name, ctx.services.now_ms()))


@registry.method("focus.absorb")
async def focus_absorb(ctx: Context, params: AbsorbParams) -> AbsorbResult:
    capsule = _open(ctx, params.name)
    results = await ctx.services.recalls.recall(params, ctx, hide_held=ctx.agent is not None)
    evicted = capsule.absorb((r.trace.id, r.score) for r in results)
    absorbed = [r.trace.id for r in results]
    return AbsorbResult(**asdict(view(ctx, capsule)), absorbed=absorbed, evicted=evicted)


@registry.method("focus.pin")
async def focus_pin(ctx: Context, params: CapsuleTraceParams) -> CapsulePinResult:
    capsule = ctx.services.capsules.get(params.name, ctx.services.now_ms())
    ctx.services.store.read(queries.get, params.id)  # NotFound for an unknown or purged trace
    evicted = capsule.pin(params.id)
    return CapsulePinResult(**asdict(view(ctx, capsule)), evicted=evicted)


@registry.method("focus.unpin")
async def focus_unpin(ctx: Context, params: CapsuleTraceParams) -> CapsulePinResult:
    capsule = ctx.services.capsules.get(params.name, ctx.services.now_ms())
    evicted = capsule.unpin(params.id)
    return CapsulePinResult(**asdict(view(ctx, capsule)), evicted=evicted)


@registry.method("focus.note")
async def focus_note(ctx: Context, params: NoteParams) -> NoteResult:
    check_fields([("text", params.text)])
    check_note(params.text, params.importance)  # before a capsule is made for it
    capsule = _open(ctx, params.name)
    evicted = capsule.note(params.text, params.importance, ctx.services.now_ms())
    return NoteResult(name=capsule.name, notes=list(capsule.notes), evicted=evicted)


@registry.method("focus.close")
async def focus_close(ctx: Context, params: CapsuleParams) -> CloseResult:
    ctx.services.capsules.close(params.name)
    return CloseResult(name=params.name, closed=True)


@registry.method("focus.list")
async def focus_list(ctx: Context, params: NoParams) -> FocusListResult:
    capsules, now = ctx.services.capsules, ctx.services.now_ms()
    return FocusListResult(capsules=[capsules.summary(name, now) for name in capsules.names()])
