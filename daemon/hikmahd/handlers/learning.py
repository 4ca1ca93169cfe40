"""``memory.*`` by which memory learns: forecasts and their outcomes, calibration, outcome
feedback, pins, and invalidation."""

from __future__ import annotations

from hikmah.index import queries
from hikmah.learning.calibration import calibrate, resolved_pair
from hikmah.learning.invalidation import check_pattern, invalidation_plan, matching
from hikmah.model.errors import HikmahError
from hikmah.model.trace import Draft, Trace, draft_fields
from hikmah.model.wire.learning import (
    CalibrationParams,
    CalibrationResult,
    FeedbackParams,
    FeedbackResult,
    Invalidated,
    InvalidateParams,
    InvalidateResult,
    OutcomeParams,
    OutcomeResult,
    PinParams,
    PinResult,
    PredictParams,
    PredictResult,
    Refused,
)
from hikmah.rules.operations import Feedback, Pin, Remember

from ..context import Context
from ..rpc import Registry

registry = Registry()


@registry.method("memory.predict")
async def predict(ctx: Context, params: PredictParams) -> PredictResult:
    # The forecast's own wire names: question, type and p.
    draft = Draft(
        **{**draft_fields(params), "source": ctx.source(params.source)},
        kind="prediction",
        content=params.question,
        prediction_type=params.type,
        probability=params.p,
    )
    operation = Remember(draft=draft, session=ctx.session, allow_prediction=True)
    written = await ctx.services.writer.write(operation)
    assert written.trace is not None  # a remember writes a trace
    return PredictResult(trace=written.trace, conflicts=written.conflicts)


@registry.method("memory.outcome")
async def outcome(ctx: Context, params: OutcomeParams) -> OutcomeResult:
    """Resolve a prediction, once, with what was observed."""
    draft = Draft(
        kind="outcome",
        content=params.note or f"observed {params.observed} for prediction {params.prediction}",
        fulfills=params.prediction,
        value=params.observed,
        source=ctx.source(params.source),
        locator=params.locator,
    )
    operation = Remember(draft=draft, session=ctx.session)
    written = await ctx.services.writer.write(operation, person=ctx.person)
    assert written.trace is not None  # a remember writes a trace
    return OutcomeResult(trace=written.trace, resolved=params.prediction)


@registry.blocking("memory.calibration")
def calibration(ctx: Context, params: CalibrationParams) -> CalibrationResult:
    """Brier, base-rate Brier, ECE and Spiegelhalter's Z per family of predictions."""
    pairs = ctx.services.store.read(queries.resolutions)
    resolved = [resolved_pair(prediction, outcome) for prediction, outcome in pairs]
    reports = calibrate(resolved, family=params.family, family_prefix=params.family_prefix)
    return CalibrationResult(families=reports)


@registry.method("memory.feedback")
async def feedback(ctx: Context, params: FeedbackParams) -> FeedbackResult:
    """Recalled traces that were acted on led to a good or a bad outcome."""
    operations = [Feedback(id=i, outcome=params.outcome, session=ctx.session) for i in params.ids]
    for outcome in await ctx.services.writer.submit_all(operations):
        if isinstance(outcome, HikmahError):
            raise outcome
    return FeedbackResult(ids=list(params.ids), outcome=params.outcome)


@registry.method("memory.pin")
async def pin(ctx: Context, params: PinParams) -> PinResult:
    """Keep a trace at full weight in recall: it does not age, bad outcomes do not lower it."""
    await ctx.services.writer.write(Pin(id=params.id, pinned=True, session=ctx.session))
    return PinResult(id=params.id, pinned=True)


@registry.method("memory.unpin")
async def unpin(ctx: Context, params: PinParams) -> PinResult:
    await ctx.services.writer.write(Pin(id=params.id, pinned=False, session=ctx.session))
    return PinResult(id=params.id, pinned=False)


@registry.method("memory.invalidate")
async def invalidate(ctx: Context, params: InvalidateParams) -> InvalidateResult:
    """Supersede every active trace matching a pattern with a correction of its own."""
    check_pattern(params.pattern, params.tags)
    store, session = ctx.services.store, ctx.session

    def find() -> list[Trace]:
        with store.snapshot() as snapshot:
            active = (e.trace for e in queries.traces(snapshot, include_inactive=False))
            return matching(active, params.pattern, params.tags)

    plan = invalidation_plan(
        await ctx.services.offload(find),
        session=session,
        source=ctx.source(None),
        reason=params.reason,
        stale=params.stale,
    )
    written: list[Invalidated] = []
    refused = list(plan.refused)
    if not params.dry_run and plan.drafts:
        operations = [Remember(draft=d, session=session) for d in plan.drafts]
        for trace, done in zip(
            plan.chosen,
            await ctx.services.writer.submit_all(operations, person=ctx.person),
            strict=True,
        ):
            if isinstance(done, HikmahError):
                refused.append(Refused(id=trace.id, reason=str(done)))
            else:
                written.append(Invalidated(id=trace.id, correction=done.id))
    return InvalidateResult(
        matched=plan.chosen, refused=refused, dry_run=params.dry_run, written=written
    )
