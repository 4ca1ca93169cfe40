"""Invalidation (from hippo-memory): retire every trace a migration made wrong, in bulk.

Each matching active trace is superseded by a correction of its own, so the
history keeps what was believed and why it stopped being so, and each can be
undone on its own by superseding the correction in turn. ``stale`` keeps the
old text recallable at lower confidence instead of declaring it wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from hikmah.access.principal import UNPROVEN_PERSON, AgentSession
from hikmah.model.errors import InvalidInput
from hikmah.model.trace import Draft, Trace, normalize_tag
from hikmah.model.wire.learning import Refused

STALE_CONFIDENCE_FACTOR = 0.5


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def check_pattern(pattern: str, tags: Sequence[str]) -> None:
    """A pattern must say something, unless tags select the traces on their own.

    Raises:
        InvalidInput: it selects everything.
    """
    if not pattern.strip() and not tags:
        raise InvalidInput("give a pattern (text the traces contain) or at least one --tag")


def matching(traces: Iterable[Trace], pattern: str, tags: Sequence[str]) -> list[Trace]:
    """The traces whose content contains ``pattern`` (case and spacing ignored) and that
    carry every tag in ``tags``."""
    needle = _folded(pattern)
    wanted = {normalize_tag(tag) for tag in tags}
    return [t for t in traces if needle in _folded(t.content) and wanted <= set(t.tags)]


def invalidation_draft(
    trace: Trace, *, reason: str, stale: bool, verified: bool, source: str | None
) -> Draft:
    """The correction that supersedes ``trace``: invalid (or stale) for ``reason``."""
    reason = " ".join(reason.split())
    if not reason:
        raise InvalidInput("say why: --reason is kept in every correction")
    label = "Stale" if stale else "Invalidated"
    return Draft(
        kind="correction",
        content=f"{label} ({reason}): {trace.content}",
        tags=(*trace.tags, label.lower()),
        supersedes=trace.id,
        scope=trace.scope,
        source=source,
        verified=verified,
        confidence=trace.confidence * STALE_CONFIDENCE_FACTOR if stale else None,
        claim_key=trace.claim_key if stale else None,
        claim_value=trace.claim_value if stale else None,
    )


class InvalidationPlan(NamedTuple):
    """The matching traces to supersede, their corrections, and those left alone."""

    chosen: list[Trace]
    drafts: list[Draft]
    refused: list[Refused]


def invalidation_plan(
    found: Iterable[Trace],
    *,
    session: AgentSession | None,
    source: str,
    reason: str,
    stale: bool,
) -> InvalidationPlan:
    """What invalidating ``found`` writes, as ``source``. A person's corrections are
    verified; an agent session's are not, so it leaves the verified traces alone (a
    person retires those), and so are those of a person who has not proven presence
    while it is on.

    Raises:
        InvalidInput: a trace is chosen and ``reason`` is empty.
    """
    chosen, refused = [], []
    why = (
        "verified: invalidating it needs a person's presence (run hikmah presence first)"
        if session == UNPROVEN_PERSON
        else "verified: only a person can invalidate it"
    )
    for trace in found:
        if session is not None and trace.provenance.verified:
            refused.append(Refused(id=trace.id, reason=why))
        else:
            chosen.append(trace)
    drafts = [
        invalidation_draft(t, reason=reason, stale=stale, verified=session is None, source=source)
        for t in chosen
    ]
    return InvalidationPlan(chosen, drafts, refused)
