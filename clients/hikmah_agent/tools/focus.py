"""The working-memory tools: focus capsules, kept in the daemon's memory only."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from hikmah.model.wire.focus import AbsorbResult, CapsuleResult, NoteResult
from hikmah_client import agent_text as framing

from .framework import DISPLACES, ONCE, READS, Args, Budget, Memory, tool

CapsuleName = Annotated[str, Meta(description="The focus capsule, e.g. task:fix-login.")]


class CapsuleView(Args):
    """A focus capsule to show."""

    name: CapsuleName
    budget: Budget = 1500


class FocusOpen(CapsuleView):
    """Open (or return to) a focus capsule: a small named working set for one task."""


@tool(FocusOpen, ONCE, "Open a focus capsule")
def focus_open(memory: Memory, args: FocusOpen) -> str:
    return _capsule(memory.call("focus.open", {"name": args.name}, CapsuleResult), args.budget)


class FocusAbsorb(Args):
    """Recall by a query and absorb the results into a focus capsule; when it is full,
    the least active memories leave it (they stay in memory)."""

    name: CapsuleName
    query: Annotated[str, Meta(description="Words to recall by.")]
    limit: Annotated[int, Meta(ge=1, le=50, description="Most memories to absorb.")] = 10
    budget: Budget = 1500


@tool(FocusAbsorb, DISPLACES, "Absorb into a focus capsule")
def focus_absorb(memory: Memory, args: FocusAbsorb) -> str:
    params = {"name": args.name, "query": args.query, "limit": args.limit, "scope": memory.project}
    return _capsule(memory.call("focus.absorb", params, AbsorbResult), args.budget)


class FocusRead(CapsuleView):
    """What a focus capsule holds, most active first, with its notes."""


@tool(FocusRead, READS, "Read a focus capsule")
def focus_read(memory: Memory, args: FocusRead) -> str:
    return _capsule(memory.call("focus.read", {"name": args.name}, CapsuleResult), args.budget)


class FocusNote(Args):
    """Keep a working note in a focus capsule; notes vanish when the capsule closes, and
    the least important leave first when it holds too many."""

    name: CapsuleName
    text: Annotated[str, Meta(description="A short working note (not durable memory).")]
    importance: Annotated[float, Meta(ge=0, le=1, description="0 to 1.")] = 0.5


@tool(FocusNote, DISPLACES, "Note in a focus capsule")
def focus_note(memory: Memory, args: FocusNote) -> str:
    params = {"name": args.name, "text": args.text, "importance": args.importance}
    notes = memory.call("focus.note", params, NoteResult).notes
    return f"Noted in {args.name} ({len(notes)} notes)."


def _capsule(result: CapsuleResult, budget: int) -> str:
    lines = [framing.observation(entry) for entry in result.traces]
    lines += [f"Note (importance {n.importance:.2f}): {n.text}" for n in result.notes]
    if not lines:
        return f"Focus capsule {result.name} is empty."
    header = f"{framing.HEADER} Focus capsule {result.name}, most active first:"
    return framing.within_budget(lines, budget, header=header)
