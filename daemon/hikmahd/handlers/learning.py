"""``memory.*`` by which memory learns: forecasts and their outcomes, calibration, outcome
feedback, pins, and invalidation."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from hikmah.index import queries
from hikmah.learning.calibration import calibrate, resolved_pair
from hikmah.learning.invalidation import check_pattern, invalidation_plan, matching
from hikmah.model.errors import HikmahError
from hikmah.model.trace import Draft, Trace, draft_fields
from hikmah.model.wire.base import Params
from hikmah.model.wire.learning import PredictParams, PredictResult
from hikmah.model.wire.memory import IdParams
from hikmah.rules.operations import Feedback, Pin, Remember

from ..context import Context
from ..rpc import JSON, Registry, to_json

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


class OutcomeParams(Params, frozen=True):
    prediction: str
    observed: str
    source: str | None = None
    locator: str | None = None
    note: str | None = None


@registry.method("memory.outcome", OutcomeParams)
async def outcome(ctx: Context, params: OutcomeParams) -> JSON:
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
    return {"trace": to_json(written.trace), "resolved": params.prediction}


class CalibrationParams(Params, frozen=True):
    family: str | None = None
    family_prefix: str | None = None


@registry.blocking("memory.calibration", CalibrationParams)
def calibration(ctx: Context, params: CalibrationParams) -> JSON:
    """Brier, base-rate Brier, ECE and Spiegelhalter's Z per family of predictions."""
    pairs = ctx.services.store.read(queries.resolutions)
    resolved = [resolved_pair(prediction, outcome) for prediction, outcome in pairs]
    reports = calibrate(resolved, family=params.family, family_prefix=params.family_prefix)
    return {"families": to_json(reports)}


class FeedbackParams(Params, frozen=True):
    ids: Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=100)]
    outcome: Literal["good", "bad"]


@registry.method("memory.feedback", FeedbackParams)
async def feedback(ctx: Context, params: FeedbackParams) -> JSON:
    """Recalled traces that were acted on led to a good or a bad outcome."""
    operations = [Feedback(id=i, outcome=params.outcome, session=ctx.session) for i in params.ids]
    for outcome in await ctx.services.writer.submit_all(operations):
        if isinstance(outcome, HikmahError):
            raise outcome
    return {"ids": list(params.ids), "outcome": params.outcome}


@registry.method("memory.pin", IdParams)
async def pin(ctx: Context, params: IdParams) -> JSON:
    """Keep a trace at full weight in recall: it does not age, bad outcomes do not lower it."""
    await ctx.services.writer.write(Pin(id=params.id, pinned=True, session=ctx.session))
    return {"id": params.id, "pinned": True}


@registry.method("memory.unpin", IdParams)
async def unpin(ctx: Context, params: IdParams) -> JSON:
    await ctx.services.writer.write(Pin(id=params.id, pinned=False, session=ctx.session))
    return {"id": params.id, "pinned": False}


class InvalidateParams(Params, frozen=True):
    pattern: str
    reason: str
    tags: tuple[str, ...] = ()
    stale: bool = False
    dry_run: bool = False


@registry.method("memory.invalidate", InvalidateParams)
async def invalidate(ctx: Context, params: InvalidateParams) -> JSON:
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
    reply: dict[str, JSON] = {
        "matched": to_json(plan.chosen),
        "refused": to_json(plan.refused),
        "dry_run": params.dry_run,
        "written": [],
    }
    if params.dry_run or not plan.drafts:
        return reply
    operations = [Remember(draft=d, session=session) for d in plan.drafts]
    written, failed = [], []
    for trace, done in zip(
        plan.chosen,
        await ctx.services.writer.submit_all(operations, person=ctx.person),
        strict=True,
    ):
        if isinstance(done, HikmahError):
            failed.append({"id": trace.id, "reason": str(done)})
        else:
            written.append({"id": trace.id, "correction": done.id})
    reply["written"] = written
    reply["refused"] = [*to_json(plan.refused), *failed]
    return reply
