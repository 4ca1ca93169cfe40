"""The methods by which memory learns: forecasts and outcomes, feedback, pins,
invalidation, and consolidation proposals with their promotion."""

from __future__ import annotations

import getpass
import hashlib
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import trio

from hikmah import queries
from hikmah.calibration import calibrate, resolved_pair
from hikmah.consolidation import proposals
from hikmah.errors import ConflictError, HikmahError, InvalidInput
from hikmah.invalidation import check_pattern, invalidation_draft, matching
from hikmah.paths import project_scope
from hikmah.rules import Feedback, Pin, Promote, Remember
from hikmah.trace import Draft, Trace
from hikmah.transcripts import TRANSCRIPT_TAG, Transcript, parse_transcript
from hikmah.vocabulary import PredictionType

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
        with store.snapshot() as snapshot:
            active = (e.trace for e in queries.traces(snapshot, include_inactive=False))
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
    daemon = ctx.daemon
    found = await trio.to_thread.run_sync(daemon.store.read, proposals, daemon.policy)
    return {"proposals": to_json(found)}


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
    pairs = await trio.to_thread.run_sync(ctx.daemon.store.read, queries.resolutions)
    resolved = [resolved_pair(prediction, outcome) for prediction, outcome in pairs]
    reports = calibrate(resolved, family=params.family, family_prefix=params.family_prefix)
    return {"families": to_json(reports)}


# A message longer than this is pasted material (logs, files); its start is kept.
MAX_MESSAGE_CHARS = 16_000
MAX_TRANSCRIPT_BYTES = 256 << 20


class IngestParams(Params, frozen=True):
    path: str  # absolute: the daemon does not share the client's working directory


@registry.method("replay.ingest", IngestParams)
async def ingest(ctx: Context, params: IngestParams) -> JSON:
    """Read one Claude Code or Codex session transcript into episode and observation
    traces, idempotently by message id; candidates appear in replay.consolidate."""
    path = Path(params.path)
    if not path.is_absolute():
        raise InvalidInput("give the transcript's absolute path")
    # A FIFO or a device would block a worker thread or never end.
    if not path.is_file():
        raise InvalidInput(f"{path} is not a regular file (a transcript is a .jsonl file)")
    if path.stat().st_size > MAX_TRANSCRIPT_BYTES:
        raise InvalidInput(
            f"{path} is over {MAX_TRANSCRIPT_BYTES >> 20} MiB: not a session transcript"
        )
    try:
        transcript = await trio.to_thread.run_sync(read_transcript, path)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    scope = await trio.to_thread.run_sync(transcript_scope, transcript)
    person = f"human:{getpass.getuser()}"
    # The person's words become episodes and the agent's replies observations;
    # tool traffic, injected context and subagent prompts are left out.
    chosen = [m for m in transcript.messages if m.text and (m.person or m.role == "assistant")]
    operations = [
        Remember(
            draft=Draft(
                kind="episode" if message.person else "observation",
                content=message.text[:MAX_MESSAGE_CHARS],
                source=person if message.person else f"agent:{transcript.format}",
                locator=f"transcript:{path}#{message.id}",
                tags=(TRANSCRIPT_TAG, transcript.format),
                scope=scope,
            ),
            session=ctx.session,
            trace_id=message_trace_id(transcript.session_id, message.id, message.timestamp_ms),
            created_at=message.timestamp_ms,
        )
        for message in chosen
    ]
    outcomes = await submit_all(ctx, operations)
    written = already = 0
    refused = []
    for message, outcome in zip(chosen, outcomes, strict=True):
        # Its id is taken: this message was ingested before (ids come from message ids).
        if isinstance(outcome, ConflictError) and "exists already" in str(outcome):
            already += 1
        elif isinstance(outcome, HikmahError):
            refused.append({"message": message.id, "reason": str(outcome)})
        else:
            written += 1
    return {
        "path": str(path),
        "format": transcript.format,
        "session_id": transcript.session_id,
        "scope": scope,
        "messages": len(chosen),
        "written": written,
        "already": already,
        "refused": refused,
        "skipped_lines": transcript.skipped,
    }


def read_transcript(path: Path) -> Transcript:
    with path.open("rb") as lines:
        return parse_transcript(lines)


def transcript_scope(transcript: Transcript) -> str:
    """The project the session worked in, else global."""
    if transcript.cwd and Path(transcript.cwd).is_absolute():
        return project_scope(Path(transcript.cwd))
    return "global"


def message_trace_id(session_id: str, message_id: str, at_ms: int | None) -> str:
    """The same id for the same message every time, so a second ingest writes nothing.

    Time-sortable like every id (``tr_`` + 12 hex digits of milliseconds) with 10
    hex digits of a digest of the session and message ids in place of randomness.
    """
    digest = hashlib.blake2b(f"{session_id}\0{message_id}".encode(), digest_size=5).hexdigest()
    return f"tr_{(at_ms or 0) & 0xFFFF_FFFF_FFFF:012x}{digest}"
