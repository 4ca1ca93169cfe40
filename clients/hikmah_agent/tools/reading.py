"""The tools that read memory: recall, what to know before starting, open conflicts,
commitments, one memory's history."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from hikmah.model.vocabulary import Kind
from hikmah.model.wire.memory import ConflictsResult, ContextResult, RecallResult, ShowResult
from hikmah.model.wire.promises import PromisesResult
from hikmah_client import agent_text as framing

from .framework import READS, Args, Budget, Memory, Scope, Tags, TraceId, given, tool


class Recall(Args):
    """Recall memories relevant to a query, best first, as dated observations with their
    source, whether a person verified them, confidence, conflicts and corrections.
    Global memories and those of the project are searched."""

    query: Annotated[str, Meta(description="Words to recall by (meaningful words count).")]
    tags: Tags = None
    kinds: Annotated[list[Kind] | None, Meta(description="Only these kinds.")] = None
    limit: Annotated[int, Meta(ge=1, le=50, description="Most results.")] = 10
    budget: Budget = 1500
    why: Annotated[
        bool, Meta(description="Also explain each score (matched terms, cue, meta).")
    ] = False
    scope: Scope = None


@tool(Recall, READS, "Recall memories")
def recall(memory: Memory, args: Recall) -> str:
    params = {
        "query": args.query,
        "tags": args.tags or [],
        "kinds": args.kinds or [],
        "limit": args.limit,
        "scope": memory.scope(args.scope),
    }
    results = memory.call("memory.recall", params, RecallResult).results
    if args.why:
        results = [
            msgspec.structs.replace(
                result,
                trace=msgspec.structs.replace(
                    result.trace,
                    content=f"{result.trace.content} [why: matched"
                    f" {', '.join(result.why.matched_terms) or 'nothing'};"
                    f" cue {result.cue:.2f}, meta {result.meta:.2f}]",
                ),
            )
            for result in results
        ]
    return framing.recalled(results, args.budget)


class Context(Args):
    """What to know before starting work here: standing preferences, constraints and
    procedures of this project and global ones (verified first), commitments due soon,
    and open conflicts."""

    budget: Budget = 2000
    within_hours: Annotated[
        float, Meta(ge=0, le=24 * 365, description="Commitments due within this many hours.")
    ] = 24
    scope: Scope = None


@tool(Context, READS, "What to know before starting")
def context(memory: Memory, args: Context) -> str:
    params = {"scope": memory.scope(args.scope), "within_hours": args.within_hours, "limit": 50}
    result = memory.call("memory.context", params, ContextResult)
    return framing.context(result, args.budget) or "Hikmah has no standing memory for this scope."


class Conflicts(Args):
    """Open conflicts: one claim with several active values. Ask the person which holds
    rather than choosing."""


@tool(Conflicts, READS, "Open conflicts")
def conflicts(memory: Memory, args: Conflicts) -> str:
    groups = memory.call("memory.conflicts", {}, ConflictsResult).conflicts
    return "\n".join(map(framing.conflict, groups)) or "No open conflicts."


class Commitments(Args):
    """The promise queue: open commitments with deadlines, soonest first."""

    within_hours: (
        Annotated[float, Meta(ge=0, description="Only those due within this many hours.")] | None
    ) = None
    overdue: Annotated[bool, Meta(description="Only overdue ones.")] = False


@tool(Commitments, READS, "Open commitments")
def commitments(memory: Memory, args: Commitments) -> str:
    params = {"overdue": args.overdue, **given(within_hours=args.within_hours)}
    items = memory.call("promises.list", params, PromisesResult).commitments
    return "\n".join(map(framing.commitment, items)) or "No open commitments."


class Inspect(Args):
    """One memory in full with its history: what it corrects and what corrected it."""

    id: TraceId


@tool(Inspect, READS, "Inspect a memory")
def inspect(memory: Memory, args: Inspect) -> str:
    result = memory.call("memory.show", {"id": args.id}, ShowResult)
    lines = [framing.observation(entry) for entry in result.history]
    return framing.within_budget(lines, 20_000, header=f"{framing.HEADER} History, oldest first:")
