"""``memory.*``: write a trace, recall, show, conflicts, a claim's history, fulfil,
session context, verify in bulk, purge.

Forecasts, feedback, pins and invalidation are :mod:`.learning`; export and
import are :mod:`.transfer`.
"""

from __future__ import annotations

import msgspec

from hikmah.index import fates, queries, review
from hikmah.index.past import moment
from hikmah.index.snapshot import Snapshot
from hikmah.model import recall as recall_model
from hikmah.model.errors import ConflictError, HikmahError, InvalidInput, NotFound
from hikmah.model.secrets import preview
from hikmah.model.trace import Draft, Trace
from hikmah.model.vocabulary import Hold, Status
from hikmah.model.wire.memory import (
    ConflictsParams,
    ConflictsResult,
    ContextParams,
    ContextResult,
    FulfillResult,
    HistoryParams,
    HistoryResult,
    IdParams,
    Origin,
    PurgeParams,
    PurgeResult,
    Recalled,
    RecallParams,
    RecallResult,
    Refusal,
    RememberParams,
    RememberResult,
    Sampled,
    ShowParams,
    ShowResult,
    VerifyParams,
    VerifyResult,
)
from hikmah.rules import verification
from hikmah.rules.operations import Fulfill, Purge, Remember

from ..context import Context
from ..rpc import Registry
from .asof import reading
from .promises import HOUR_MS, due

registry = Registry()


@registry.method("memory.remember")
async def remember(ctx: Context, params: RememberParams) -> RememberResult:
    draft = Draft(**{**msgspec.structs.asdict(params), "source": ctx.source(params.source)})
    operation = Remember(draft=draft, session=ctx.session)
    written = await ctx.services.writer.write(operation, person=ctx.person)
    assert written.trace is not None  # a remember writes a trace
    return RememberResult(trace=written.trace, conflicts=written.conflicts)


def origin(
    ctx: Context, snapshot: Snapshot, trace_id: str, here: str | None = None
) -> Origin | None:
    """The device a trace was written on, for a result (None: this device does not sync);
    ``here``: this device's id, read once for many (:func:`hikmah.index.queries.origin`)."""
    found = queries.origin(snapshot, trace_id, here)
    if found is None:
        return None
    name = ctx.services.syncing.name if found.here else found.name
    return Origin(device=found.device, name=name, this_device=found.here)


def held(ctx: Context, snapshot: Snapshot, trace: Trace, status: Status) -> Hold | None:
    """Whether a trace shown to a person waits for their review (only an active one)."""
    if status != "active":
        return None
    return review.hold_in(snapshot, trace, ctx.services.policy.review)


@registry.method("memory.recall", early=True)
async def recall(ctx: Context, params: RecallParams) -> RecallResult:
    services = ctx.services
    point = None
    if params.as_of is not None:
        if params.focus is not None:
            raise InvalidInput("a recall as of the past cannot fill a focus capsule (now)")
        point = services.store.read(moment, params.as_of, services.now_ms())

    def placed(present: Snapshot, results: list[recall_model.RecallResult]) -> list[Recalled]:
        """Each result with where it was written and whether it waits for review, read in
        the snapshot of the recall itself."""
        here = fates.this_device(present)
        return [
            Recalled(
                **msgspec.structs.asdict(result),
                origin=origin(ctx, present, result.trace.id, here),
                held=held(ctx, present, result.trace, result.status),
            )
            for result in results
        ]

    services.semantics.recalled()
    results = await services.recalls.recall_then(
        params, placed, ctx, point=point, hide_held=ctx.agent is not None
    )
    evicted = None
    if params.focus is not None:
        capsule = services.capsules.open(
            params.focus, services.policy.working_set_limit, services.now_ms()
        )
        evicted = capsule.absorb((r.trace.id, r.score) for r in results)
    return RecallResult(results=results, as_of=point, evicted=evicted)


@registry.method("memory.show")
async def show(ctx: Context, params: ShowParams) -> ShowResult:
    with reading(ctx.services, params.as_of) as snapshot:
        current = queries.get(snapshot, params.id)
        if ctx.hides(current.trace):
            raise NotFound(f"{params.id} waits for the person's review: no agent reads it")
        history = [entry for entry in queries.history(snapshot, params.id)
                   if not ctx.hides(entry.trace)]  # fmt: skip
        return ShowResult(
            **msgspec.structs.asdict(current),
            held=held(ctx, snapshot, current.trace, current.status),
            history=history,
            record=queries.record_of(snapshot, params.id),
            successors=list(queries.successors(snapshot, params.id)),
            origin=origin(ctx, snapshot, params.id),
            as_of=snapshot.point,
        )


@registry.method("memory.conflicts")
async def conflicts(ctx: Context, params: ConflictsParams) -> ConflictsResult:
    with reading(ctx.services, params.as_of) as snapshot:
        found = queries.conflicts(snapshot, params.key, ctx.hides)
    return ConflictsResult(conflicts=found, as_of=snapshot.point)


@registry.method("memory.history")
async def history(ctx: Context, params: HistoryParams) -> HistoryResult:
    """Every value a claim key was given, in write order, with who set it and when."""
    with reading(ctx.services, params.as_of) as snapshot:
        values = queries.claim_history(snapshot, params.key, ctx.hides)
    return HistoryResult(key=params.key, values=values, as_of=snapshot.point)


@registry.method("memory.fulfill")
async def fulfill(ctx: Context, params: IdParams) -> FulfillResult:
    await ctx.services.writer.write(Fulfill(id=params.id, session=ctx.session))
    return FulfillResult(id=params.id, status="fulfilled")


@registry.method("memory.context", early=True)
async def context(ctx: Context, params: ContextParams) -> ContextResult:
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
    return ContextResult(
        scope=params.scope or "global",
        standing=standing,
        commitments=commitments,
        conflicts=open_conflicts,
        awaiting_review=waiting,
    )


# Traces of a selection shown in its preview.
VERIFY_SAMPLE = 10


@registry.method("memory.verify", person="verify traces in bulk")
async def verify(ctx: Context, params: VerifyParams) -> VerifyResult:
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
    reply = VerifyResult(
        matched=len(chosen),
        selection=selection,
        sample=[
            Sampled(id=t.id, kind=t.kind, preview=preview(t.content))
            for t in chosen[:VERIFY_SAMPLE]
        ],
        verified=0,
        already=0,
        refused=[],
    )
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
            Refusal(id=trace.id, reason=str(error))
            for trace, operation, error in failed
            if queries.lookup(snapshot, operation.trace_id or "") is None
        ]
    return msgspec.structs.replace(
        reply,
        verified=len(chosen) - len(failed),
        already=len(failed) - len(refused),
        refused=refused,
    )


# A person alone purges: the write rules refuse an agent's purge, on every path.
@registry.method("memory.purge")
async def purge(ctx: Context, params: PurgeParams) -> PurgeResult:
    operation = Purge(id=params.id, reason=params.reason, session=ctx.session)
    written = await ctx.services.writer.write(operation, person=ctx.person)
    gone = "the trace is gone from recall, show, export and every index"
    if written.key_destroyed:
        note = f"{gone}; its data key was destroyed, so its encrypted text is unrecoverable"
    else:
        note = f"{gone}; its text remains in the ledger until you run hikmah compact"
    return PurgeResult(
        id=params.id, status="purged", key_destroyed=written.key_destroyed, note=note
    )
