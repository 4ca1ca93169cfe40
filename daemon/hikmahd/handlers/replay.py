"""``replay.*``: consolidation proposals, their promotion, and ingesting session transcripts."""

from __future__ import annotations

from pathlib import Path

from hikmah.learning.consolidation import proposals
from hikmah.learning.transcripts import TRANSCRIPT_TAG, Transcript, parse_transcript
from hikmah.model.errors import ConflictError, HikmahError, InvalidInput
from hikmah.model.paths import person_source, project_scope
from hikmah.model.trace import Draft, derived_trace_id
from hikmah.model.wire.base import NoParams
from hikmah.model.wire.replay import (
    ConsolidateResult,
    IngestParams,
    IngestResult,
    MessageRefused,
    PromoteParams,
    PromoteResult,
)
from hikmah.rules.operations import Promote, Remember

from ..context import Context
from ..rpc import Registry

registry = Registry()

# A message longer than this is pasted material (logs, files); its start is kept.
MAX_MESSAGE_CHARS = 16_000
MAX_TRANSCRIPT_BYTES = 256 << 20


@registry.blocking("replay.consolidate")
def consolidate(ctx: Context, params: NoParams) -> ConsolidateResult:
    """Proposals of durable beliefs (docs/learning.md, "Consolidation"); never writes."""
    return ConsolidateResult(proposals=ctx.services.store.read(proposals, ctx.services.policy))


@registry.method("replay.promote")
async def promote(ctx: Context, params: PromoteParams) -> PromoteResult:
    """Write the belief a current proposal describes; refused if its evidence changed."""
    operation = Promote(
        proposal=params.id,
        verified=params.verified,
        source=ctx.source(params.source),
        session=ctx.session,
    )
    written = await ctx.services.writer.write(operation, person=ctx.person)
    assert written.trace is not None  # a promotion writes a trace
    return PromoteResult(trace=written.trace, conflicts=written.conflicts, proposal=params.id)


@registry.method("replay.ingest")
async def ingest(ctx: Context, params: IngestParams) -> IngestResult:
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
        transcript: Transcript = await ctx.services.offload(lambda: read_transcript(path))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    scope: str = await ctx.services.offload(lambda: transcript_scope(transcript))
    person = person_source()
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
            # The same id for the same message every time, so a second ingest writes nothing.
            trace_id=derived_trace_id(
                message.timestamp_ms, f"{transcript.session_id}\0{message.id}"
            ),
            created_at=message.timestamp_ms,
        )
        for message in chosen
    ]
    outcomes = await ctx.services.writer.submit_all(operations)
    written = already = 0
    refused = []
    for message, outcome in zip(chosen, outcomes, strict=True):
        # Its id is taken: this message was ingested before (ids come from message ids).
        if isinstance(outcome, ConflictError) and "exists already" in str(outcome):
            already += 1
        elif isinstance(outcome, HikmahError):
            refused.append(MessageRefused(message=message.id, reason=str(outcome)))
        else:
            written += 1
    return IngestResult(
        path=str(path),
        format=transcript.format,
        session_id=transcript.session_id,
        scope=scope,
        messages=len(chosen),
        written=written,
        already=already,
        refused=refused,
        skipped_lines=transcript.skipped,
    )


def read_transcript(path: Path) -> Transcript:
    with path.open("rb") as lines:
        return parse_transcript(lines)


def transcript_scope(transcript: Transcript) -> str:
    """The project the session worked in, else global."""
    if transcript.cwd and Path(transcript.cwd).is_absolute():
        return project_scope(Path(transcript.cwd))
    return "global"
