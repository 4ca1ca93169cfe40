"""The methods by which memory learns: forecasts and outcomes, feedback, pins,
invalidation, and consolidation proposals with their promotion."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
import trio

from hikmah.calibration import calibrate, resolved_pair
from hikmah.errors import HikmahError
from hikmah.invalidation import check_pattern, invalidation_draft, matching
from hikmah.store import Feedback, Pin, Promote, Remember
from hikmah.trace import Draft, PredictionType, Trace

from .context import Context
from .methods import IdParams, outcome_or_raise, submit_all, to_json
from .rpc import JSON, NoParams, Params, Registry

registry = Registry()


class PredictParams(Params, frozen=True):
    family: str
    question: str
    type: PredictionType
    p: float
    value: str | None = None
    answer_space: tuple[str, ...] = ()
    source: str | None = None
    locator: str | None = None
    tags: tuple[str, ...] = ()
    scope: str | None = None
    deadline: int | str | None = None  # when the outcome should be known


@registry.method("memory.predict", PredictParams)
async def predict(ctx: Context, params: PredictParams) -> JSON:
    draft = Draft(
        kind="prediction",
        content=params.question,
        family=params.family,
        prediction_type=params.type,
        probability=params.p,
        value=params.value,
        answer_space=params.answer_space,
        source=params.source,
        locator=params.locator,
        tags=params.tags,
        scope=params.scope,
        deadline=params.deadline,
    )
    operation = Remember(draft=draft, session=ctx.session, allow_prediction=True)
    written = outcome_or_raise(await ctx.daemon.writer.submit(operation))
    return {"trace": to_json(written.trace), "conflicts": written.conflicts}


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
        source=params.source,
        locator=params.locator,
    )
    written = outcome_or_raise(
        await ctx.daemon.writer.submit(Remember(draft=draft, session=ctx.session))
    )
    return {"trace": to_json(written.trace), "resolved": params.prediction}


class FeedbackParams(Params, frozen=True):
    ids: Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=100)]
    outcome: Literal["good", "bad"]


@registry.method("memory.feedback", FeedbackParams)
async def feedback(ctx: Context, params: FeedbackParams) -> JSON:
    """Recalled traces that were acted on led to a good or a bad outcome."""
    operations = [Feedback(id=i, outcome=params.outcome, session=ctx.session) for i in params.ids]
    outcomes = await submit_all(ctx, operations)
    for outcome in outcomes:
        outcome_or_raise(outcome)
    return {"ids": list(params.ids), "outcome": params.outcome}


@registry.method("memory.pin", IdParams)
async def pin(ctx: Context, params: IdParams) -> JSON:
    """Keep a trace at full weight in recall: it does not age, bad outcomes do not lower it."""
    outcome_or_raise(
        await ctx.daemon.writer.submit(Pin(id=params.id, pinned=True, session=ctx.session))
    )
    return {"id": params.id, "pinned": True}


@registry.method("memory.unpin", IdParams)
async def unpin(ctx: Context, params: IdParams) -> JSON:
    operation = Pin(id=params.id, pinned=False, session=ctx.session)
    outcome_or_raise(await ctx.daemon.writer.submit(operation))
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
    store, session = ctx.daemon.store, ctx.session

    def find() -> list[Trace]:
        active = (entry.trace for entry in store.traces(include_inactive=False))
        return matching(active, params.pattern, params.tags)

    found = await trio.to_thread.run_sync(find)
    refused = [
        {"id": t.id, "reason": "verified: only a person can invalidate it"}
        for t in found
        if session is not None and t.provenance.verified
    ]
    chosen = [t for t in found if session is None or not t.provenance.verified]
    drafts = [
        invalidation_draft(
            t, reason=params.reason, stale=params.stale, verified=session is None, source=None
        )
        for t in chosen
    ]
    reply: dict[str, JSON] = {
        "matched": [to_json(t) for t in chosen],
        "refused": refused,
        "dry_run": params.dry_run,
        "written": [],
    }
    if params.dry_run or not drafts:
        return reply
    outcomes = await submit_all(ctx, [Remember(draft=d, session=session) for d in drafts])
    written, failed = [], []
    for trace, outcome in zip(chosen, outcomes, strict=True):
        if isinstance(outcome, HikmahError):
            failed.append({"id": trace.id, "reason": str(outcome)})
        else:
            written.append({"id": trace.id, "correction": outcome.id})
    reply["written"] = written
    reply["refused"] = [*refused, *failed]
    return reply


@registry.method("replay.consolidate", NoParams)
async def consolidate(ctx: Context, params: NoParams) -> JSON:
    """Proposals of durable beliefs (REFERENCE.md "Consolidation"); never writes."""
    proposals = await trio.to_thread.run_sync(ctx.daemon.store.proposals)
    return {"proposals": to_json(proposals)}


class PromoteParams(Params, frozen=True):
    id: str
    verified: bool = False
    source: str | None = None


@registry.method("replay.promote", PromoteParams)
async def promote(ctx: Context, params: PromoteParams) -> JSON:
    """Write the belief a current proposal describes; refused if its evidence changed."""
    operation = Promote(
        proposal=params.id, verified=params.verified, source=params.source, session=ctx.session
    )
    written = outcome_or_raise(await ctx.daemon.writer.submit(operation))
    return {"trace": to_json(written.trace), "conflicts": written.conflicts, "proposal": params.id}


class CalibrationParams(Params, frozen=True):
    family: str | None = None
    family_prefix: str | None = None


@registry.method("memory.calibration", CalibrationParams)
async def calibration(ctx: Context, params: CalibrationParams) -> JSON:
    """Brier, base-rate Brier, ECE and Spiegelhalter's Z per family of predictions."""
    pairs = await trio.to_thread.run_sync(ctx.daemon.store.resolutions)
    resolved = [resolved_pair(prediction, outcome) for prediction, outcome in pairs]
    reports = calibrate(resolved, family=params.family, family_prefix=params.family_prefix)
    return {"families": to_json(reports)}
