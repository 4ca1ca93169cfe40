"""The tools that write memory: appended to the ledger, never verified."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from hikmah.model.deadlines import DEADLINE_FORMS
from hikmah.model.vocabulary import RememberedKind
from hikmah.model.wire.memory import FulfillResult, RememberResult, ShowResult

from .framework import ADDS, ONCE, Args, Memory, Scope, Tags, TraceId, given, tool


class Remember(Args):
    """Record a memory. It is stored unverified, attributed to this agent session, and
    never becomes verified unless a person confirms it. Secrets are refused. Use predict
    for forecasts and correct to fix an earlier memory."""

    content: Annotated[str, Meta(description="What to remember, in one or two sentences.")]
    kind: Annotated[
        RememberedKind,
        Meta(description="observation (the default), belief, procedure, preference, ..."),
    ] = "observation"
    tags: Tags = None
    confidence: Annotated[float, Meta(ge=0, le=1, description="How sure you are, 0 to 1.")] = 0.5
    salience: Annotated[float, Meta(ge=0, le=1, description="How much it matters, 0 to 1.")] = 0.5
    locator: Annotated[
        str | None, Meta(description="Where it comes from: file:line, URL or command.")
    ] = None
    claim_key: Annotated[
        str | None,
        Meta(description="A structured claim's key, e.g. db.version (with claim_value)."),
    ] = None
    claim_value: Annotated[str | None, Meta(description="The claim's value, e.g. 16.")] = None
    deadline: Annotated[
        str | None,
        Meta(description=f"For a commitment: {DEADLINE_FORMS}."),
    ] = None
    scope: Scope = None


@tool(Remember, ADDS, "Remember")
def remember(memory: Memory, args: Remember) -> str:
    params: dict[str, Any] = {
        "content": args.content,
        "kind": args.kind,
        "tags": args.tags or [],
        "confidence": args.confidence,
        "salience": args.salience,
        "source": memory.writer.source,
        "scope": memory.scope(args.scope),
        **given(
            locator=args.locator,
            claim_key=args.claim_key,
            claim_value=args.claim_value,
            deadline=args.deadline,
        ),
    }
    return _written(memory.call("memory.remember", params, RememberResult))


class Correct(Args):
    """Supersede an unverified memory with a correction (the old one stays in history).
    A verified memory can only be corrected by a person."""

    id: TraceId
    content: Annotated[str, Meta(description="The corrected statement.")]
    claim_key: Annotated[str | None, Meta(description="The claim's key, if any.")] = None
    claim_value: Annotated[str | None, Meta(description="The corrected value.")] = None


@tool(Correct, ADDS, "Correct a memory")
def correct(memory: Memory, args: Correct) -> str:
    original = memory.call("memory.show", {"id": args.id}, ShowResult).trace
    params: dict[str, Any] = {
        "content": args.content,
        "kind": "correction",
        "supersedes": args.id,
        "source": memory.writer.source,
        "scope": original.scope,
        "tags": list(original.tags),
    }
    if args.claim_key is not None or args.claim_value is not None:
        params.update(claim_key=args.claim_key, claim_value=args.claim_value)
    written = _written(memory.call("memory.remember", params, RememberResult))
    return f"{written} It supersedes {args.id}."


class Fulfill(Args):
    """Mark a commitment done (recorded as done by this agent session)."""

    id: TraceId


@tool(Fulfill, ONCE, "Fulfil a commitment")
def fulfill(memory: Memory, args: Fulfill) -> str:
    fulfilled = memory.call("memory.fulfill", {"id": args.id}, FulfillResult)
    return f"Commitment {fulfilled.id} marked fulfilled."


def _written(result: RememberResult) -> str:
    trace = result.trace
    prov = trace.provenance
    line = (
        f"Remembered {trace.id} ({trace.kind}, unverified, {prov.source},"
        f" {prov.locator or 'no locator'})."
    )
    if result.conflicts:
        line += (
            f" It conflicts with {', '.join(result.conflicts)}: tell the person, who can"
            " resolve it with a verified correction."
        )
    return line
