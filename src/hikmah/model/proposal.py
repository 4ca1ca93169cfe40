"""A consolidation proposal, as the kernel makes it and every client reads it.

Its own module, without the store, so that a client can decode proposals with
the kernel's own type (:mod:`hikmah.learning.consolidation` makes them over a snapshot).
"""

from __future__ import annotations

from typing import Literal

import msgspec

Origin = Literal["claims", "transcript"]


class Proposal(msgspec.Struct, frozen=True, kw_only=True):
    """A belief consolidation would write if a person (or agent) promoted it."""

    id: str
    key: str
    value: str
    support: int
    independent_sources: int
    confidence: float
    eligible: bool
    conflicting_values: list[str]
    evidence: list[str]
    origin: Origin
    kind: str = "belief"  # what promotion writes
    content: str  # the statement promotion writes
    quote: str | None = None  # transcript origin: the person's own words
    scope: str = "global"  # where the promoted trace holds
