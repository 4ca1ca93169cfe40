"""What a recalled trace says beyond its text: its claim, deadline, folded duplicates,
conflicts and corrections, read once for every renderer.

A renderer says them its own way (a person's terminal: :mod:`hikmah_cli.render`;
an agent's context: :mod:`hikmah_client.agent_text`) by giving a phrase for each
note, in the order it says them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# How a renderer says each note, by name, in the order it says them.
Phrases = Mapping[str, Callable[[Any], str]]


def said(item: Mapping[str, Any], phrases: Phrases) -> list[str]:
    """The notes of a recall result (or ``{"trace", …}``) that apply, phrased."""
    trace = item["trace"]
    found = {
        "claim": (trace["claim_key"], trace["claim_value"]) if trace.get("claim_key") else None,
        "deadline": trace.get("deadline"),
        "duplicates": item.get("duplicates") or None,
        "conflicts": item.get("conflicts") or None,
        "supersedes": item.get("supersedes") or None,
        "superseded_by": item.get("superseded_by") or None,
        "held": item.get("held"),  # for a person: it waits for their review
    }
    return [say(found[name]) for name, say in phrases.items() if found[name] is not None]
