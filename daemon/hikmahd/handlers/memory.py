"""``memory.*``: write a trace, recall, show, conflicts, a claim's history, fulfil,
session context, verify in bulk, purge.

Forecasts, feedback, pins and invalidation are :mod:`.learning`; export and
import are :mod:`.transfer`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from hikmah.index import fates, queries, review
from hikmah.index.past import AsOf, moment
from hikmah.index.snapshot import Snapshot
from hikmah.model.errors import ConflictError, HikmahError, InvalidInput, NotFound
from hikmah.model.recall import RecallQuery
from hikmah.model.secrets import preview
from hikmah.model.trace import Draft, Trace
from hikmah.model.vocabulary import STANDING_KINDS, Kind
from hikmah.model.wire.base import Params
from hikmah.model.wire.memory import RememberParams, RememberResult
from hikmah.model.wire.review import Hold
from hikmah.rules import verification
from hikmah.rules.operations import Fulfill, Purge, Remember

from ..context import Context
from ..rpc import JSON, Registry, to_json
from .asof import past, reading
from .promises import HOUR_MS, MAX_HOURS, due

registry = Registry()


class IdParams(Params, frozen=True):
    id: str


@registry.method("memory.remember")
async def remember(ctx: Context, params: RememberParams) -> RememberResult:
    draft = Draft(**{**msgspec.structs.asdict(params), "source": ctx.source(params.source)})
    operation = Remember(draft=draft, session=ctx.session)
    written = await ctx.services.writer.write(operation, person=ctx.person)
    assert written.trace is not None  # a remember writes a trace
    return RememberResult(trace=written.trace, conflicts=written.conflicts)


class RecallParams(RecallQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    focus: str | None = None  # absorb the results into this focus capsule
    as_of: AsOf | None = None  # a ledger sequence number, or a time


def origin(ctx: Context, snapshot: Snapshot, trace_id: str, here: str | None = None) -> JSON:
    """The device a trace was written on, for a result (None: this device does not sync);
    ``here``: this device's id, read once for many (:func:`hikmah.index.queries.origin`)."""
    found = queries.origin(snapshot, trace_id, here)
    if found is None:
        return None
    name = ctx.services.syncing.name if found.here else found.name
    return {"device": found.device, "name": name, "this_device": found.here}


def held(ctx: Context, snapshot: Snapshot, trace: Trace, status: str) -> Hold | None:
    """Whether a trace shown to a person waits for their review (only an active one)."""
    if status != "active":
        return None
    return review.hold_in(snapshot, trace, ctx.services.policy.review)


@registry.method("memory.recall", RecallParams, early=True)
async def recall(ctx: Context, params: RecallParams) -> JSON:
    services = ctx.services
    point = None
    if params.as_of is not None:
        if params.focus is not None:
            raise InvalidInput("a recall as of the past cannot fill a focus capsule (now)")
        point = services.store.read(moment, params.as_of, services.now_ms())
    hide = ctx.agent is not None
    services.semantics.recalled()
    results = await services.recalls.recall(params, ctx, point=point, hide_held=hide)
    found = to_json(results)
    with services.store.snapshot() as snapshot:
        here = fates.this_device(snapshot)
        for result, item in zip(found, results, strict=True):
            result["origin"] = origin(ctx, snapshot, result["trace"]["id"], here)
            result["held"] = held(ctx, snapshot, item.trace, item.status)
    reply: dict[str, JSON] = {"results": found}
    if point is not None:
        reply["as_of"] = to_json(point)
    if params.focus is not None:
        capsule = services.capsules.open(
            params.focus, services.policy.working_set_limit, services.now_ms()
        )
        reply["evicted"] = capsule.absorb((r.trace.id, r.score) for r in results)
    return reply


class ShowParams(Params, frozen=True):
    id: str
    as_of: AsOf | None = None  # a ledger sequence number, or a time


@registry.method("memory.show", ShowParams)
async def show(ctx: Context, params: ShowParams) -> JSON:
    with reading(ctx.services, params.as_of) as snapshot:
        current = queries.get(snapshot, params.id)
        if ctx.hides(current.trace):
            raise NotFound(f"{params.id} waits for the person's review: no agent reads it")
        history = [entry for entry in queries.history(snapshot, params.id)
                   if not ctx.hides(entry.trace)]  # fmt: skip
        record = queries.record_of(snapshot, params.id)
        successors = queries.successors(snapshot, params.id)
        where = origin(ctx, snapshot, params.id)
        waits = held(ctx, snapshot, current.trace, current.status)
    reply = {
        **to_json(current),
        "held": waits,
        "history": to_json(history),
        "record": to_json(record),
        "successors": list(successors),
        "origin": where,
    }
    return past(reply, snapshot)


class ConflictsParams(Params, frozen=True):
    key: str | None = None  # only the conflict on this claim key
    as_of: AsOf | None = None


@registry.method("memory.conflicts", ConflictsParams)
async def conflicts(ctx: Context, params: ConflictsParams) -> JSON:
    with reading(ctx.services, params.as_of) as snapshot:
        found = queries.conflicts(snapshot, params.key, ctx.hides)
    return past({"conflicts": to_json(found)}, snapshot)


class HistoryParams(Params, frozen=True):
    key: str
    as_of: AsOf | None = None


@registry.method("memory.history", HistoryParams)
async def history(ctx: Context, params: HistoryParams) -> JSON:
    """Every value a claim key was given, in write order, with who set it and when."""
    with reading(ctx.services, params.as_of) as snapshot:
        values = queries.claim_history(snapshot, params.key, ctx.hides)
    return past({"key": params.key, "values": to_json(values)}, snapshot)


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


@registry.method("memory.context", ContextParams, early=True)
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
            hide_held=ctx.services.policy.review if ctx.agent is not None else None,
        )
        commitments = due(snapshot, now, until, scope=params.scope, hides=ctx.hides)
        open_conflicts = queries.conflicts(snapshot, hides=ctx.hides)
        waiting = review.waiting(snapshot, ctx.services.policy.review)
    return {
        "scope": params.scope or "global",
        "standing": to_json(standing),
        "commitments": commitments,
        "conflicts": to_json(open_conflicts),
        "awaiting_review": waiting,
    }


class VerifyParams(Params, frozen=True):
    source: str  # e.g. tool:mem0: the provenance source of the traces to verify
    scope: str | None = None
    kinds: tuple[Kind, ...] = ()
    # The "selection" of the preview the person confirmed; without it, only the preview.
    confirm: str | None = None


# Traces of a selection shown in its preview.
VERIFY_SAMPLE = 10


@registry.method("memory.verify", VerifyParams, person="verify traces in bulk")
async def verify(ctx: Context, params: VerifyParams) -> JSON:
    """Verify what a person checked: every unverified active trace of a source (in a
    scope, of kinds), each superseded by a verified copy; a preview unless confirmed."""
    store = ctx.services.store

    def select() -> list[Trace]:
        with store.snapshot() as snapshot:
            active = (e.trace for e in queries.traces(snapshot, include_inactive=False))
            return verification.verifiable(
                active, source=params.source, scope=params.scope, kinds=params.kinds
            )

    chosen: list[Trace] = await ctx.services.offload(select)
    selection = verification.selection_digest(chosen)
    reply: dict[str, JSON] = {
        "matched": len(chosen),
        "selection": selection,
        "sample": [
            {"id": t.id, "kind": t.kind, "preview": preview(t.content)}
            for t in chosen[:VERIFY_SAMPLE]
        ],
        "verified": 0,
        "already": 0,
        "refused": [],
    }
    if params.confirm is None or not chosen:
        return reply
    if params.confirm != selection:
        raise ConflictError(
            f"the traces to verify changed since you looked ({len(chosen)} match now):"
            " nothing was verified; run hikmah verify again and check the new list"
        )
    operations = [verification.verification(t, ctx.session) for t in chosen]
    outcomes = await ctx.services.writer.submit_all(operations, person=ctx.person)
    failed = [
        (trace, operation, outcome)
        for trace, operation, outcome in zip(chosen, operations, outcomes, strict=True)
        if isinstance(outcome, HikmahError)
    ]
    with store.snapshot() as snapshot:  # a copy of its own: verified by a call meanwhile
        refused = [
            {"id": trace.id, "reason": str(error)}
            for trace, operation, error in failed
            if queries.lookup(snapshot, operation.trace_id or "") is None
        ]
    reply.update(
        verified=len(chosen) - len(failed), already=len(failed) - len(refused), refused=refused
    )
    return reply


class PurgeParams(Params, frozen=True):
    id: str
    reason: str


# A person alone purges: the write rules refuse an agent's purge, on every path.
@registry.method("memory.purge", PurgeParams)
async def purge(ctx: Context, params: PurgeParams) -> JSON:
    operation = Purge(id=params.id, reason=params.reason, session=ctx.session)
    written = await ctx.services.writer.write(operation, person=ctx.person)
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
