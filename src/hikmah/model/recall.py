"""What a recall asks and what it answers: a query, and each result with why it came back.

These are the wire shapes of ``memory.recall``; the ranking is :mod:`hikmah.recall.ranking`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Kind, SourceClass, Status


class RecallQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to recall (also the params of ``memory.recall``). An empty query with no
    tags lists traces by meta."""

    query: str = ""
    tags: tuple[str, ...] = ()
    kinds: tuple[Kind, ...] = ()
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    scope: str | None = None
    include_superseded: bool = False
    include_sensitive: bool = False
    # Only traces in these statuses (instead of active and fulfilled, and superseded
    # with include_superseded), by these classes of source, verified or not.
    statuses: tuple[Literal["active", "superseded", "fulfilled"], ...] = ()
    sources: tuple[SourceClass, ...] = ()
    verified: bool | None = None
    # Only traces sharing at least this many of the query's terms (all of them
    # when the query has fewer): the agent hooks ask for 2 to stay quiet.
    min_matched_terms: Annotated[int, msgspec.Meta(ge=0, le=64)] = 0


class Why(msgspec.Struct, frozen=True, kw_only=True):
    """Every term of a result's score, so a person can see why it came back."""

    matched_terms: list[str]
    weighting: str  # [recall] weighting: how coverage and overlap were computed
    coverage: float
    jaccard: float
    overlap: float  # the weighting's overlap term (the Jaccard under "reference")
    lexical: float
    tag_coverage: float
    semantic: float | None  # cosine of trace and query vectors; None: the channel had none
    semantic_part: float  # what it added to the cue, before the blend's weight
    recency: float
    salience: float
    confidence: float
    provenance: float
    urgency: float
    feedback: float
    pinned: bool
    overdue: bool
    redundancy: float


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    trace: Trace
    status: Status
    score: float
    cue: float
    meta: float
    duplicates: int
    conflicts: list[str]
    supersedes: str | None
    superseded_by: str | None
    why: Why
