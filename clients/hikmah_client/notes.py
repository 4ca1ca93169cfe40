"""What a recalled trace says beyond its text: its claim, deadline, folded duplicates,
conflicts and corrections, read once for every renderer.

A renderer says them its own way (a person's terminal: :mod:`hikmah_cli.render_memory`;
an agent's context: :mod:`hikmah_client.agent_text`) by giving a phrase for each
note, in the order it says them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the replies' types, for mypy only (the CLI reads replies as Reply)
    from hikmah.model.wire.memory import Recalled, StoredTrace

# How a renderer says each note, by name, in the order it says them.
Phrases = Mapping[str, Callable[[Any], str]]


def said(item: Recalled | StoredTrace, phrases: Phrases) -> list[str]:
    """The notes of a recall result (or a stored trace: what only a result has, it has not)
    that apply, phrased."""
    trace = item.trace
    found = {
        "claim": (trace.claim_key, trace.claim_value) if trace.claim_key else None,
        "deadline": trace.deadline,
        "duplicates": getattr(item, "duplicates", None) or None,
        "conflicts": getattr(item, "conflicts", None) or None,
        "supersedes": getattr(item, "supersedes", None) or None,
        "superseded_by": item.superseded_by or None,
        "held": getattr(item, "held", None),  # for a person: it waits for their review
    }
    return [say(found[name]) for name, say in phrases.items() if found[name] is not None]
