"""A person's word that traces they checked are right: a verified correction of each;
and their word on an agent's trace held for review (:mod:`hikmah.index.review`).

What an import (or an agent) writes is never verified. A person who has
checked what came in verifies it in one step (``hikmah verify --source
tool:mem0``): each chosen trace is superseded by a copy of itself that is
verified, keeping its kind, text, claim, scope, source, time and the
record's locator, so the history still says where the claim came from, and
recall and writeback treat it as the person's. The daemon serves this to a
person only (``memory.verify`` is declared ``person=``), and the CLI shows the
selection and asks before it writes; the write names the selection it
confirms (:func:`selection_digest`), so traces that arrived after the person
looked are never verified with them.

Verifying is idempotent: a copy's id derives from the trace it verifies, and
a verified trace is never selected again. A later import of a record the
peer changed leaves the verified trace alone (the import sees its version
superseded by someone else).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from hikmah.access.principal import AgentSession
from hikmah.model.display import AGENT_LOCATOR_PREFIX, is_agent_locator, stamped_agent
from hikmah.model.trace import Draft, Trace, derived_trace_id, draft_fields
from hikmah.rules.operations import Remember


def verifiable(
    traces: Iterable[Trace], *, source: str, scope: str | None, kinds: Sequence[str]
) -> list[Trace]:
    """The unverified traces of ``source`` (in ``scope`` and of ``kinds``, when given).

    ``traces`` are the active ones. Forecasts and the outcomes that close a
    commitment or a forecast are left out: their state is not a claim to vouch for.
    """
    return [
        t
        for t in traces
        if t.provenance.source == source
        and not t.provenance.verified
        and t.kind != "prediction"
        and t.fulfills is None
        and (scope is None or t.scope == scope)
        and (not kinds or t.kind in kinds)
    ]


def selection_digest(traces: Iterable[Trace]) -> str:
    """What names a selection: 16 hex digits of a digest of its trace ids, in any order."""
    ids = "\n".join(sorted(t.id for t in traces))
    return hashlib.blake2b(ids.encode(), digest_size=8).hexdigest()


def verification(trace: Trace, session: AgentSession | None) -> Remember:
    """The write that verifies ``trace``: a verified copy that supersedes it.

    An agent session's stamp leaves the locator (a verified trace never carries
    one): the person vouches for the record the locator names. ``session`` is
    the writer's, so that the write rules refuse an agent session's verification
    even where nothing else did.
    """
    provenance = trace.provenance
    fields = {**draft_fields(trace), **draft_fields(provenance)}
    fields.update(locator=_unstamped(provenance.locator), verified=True, supersedes=trace.id)
    draft = Draft(**fields)
    return Remember(
        draft=draft,
        session=session,
        trace_id=derived_trace_id(trace.created_at, f"verified\0{trace.id}"),
        created_at=trace.created_at,
    )


def _unstamped(locator: str | None) -> str | None:
    if locator is None or not locator.startswith(AGENT_LOCATOR_PREFIX):
        return locator
    _stamp, _, caller = locator.partition("; ")
    return caller or None


REJECTED_TAG: Final = "rejected"


def acceptance(trace: Trace, content: str | None, session: AgentSession | None) -> Remember:
    """The write that accepts a held trace: a verified copy that supersedes it, with
    ``content`` in place of its text when the person edited it."""
    accepted = verification(trace, session)
    stamp = trace.provenance.locator
    if is_agent_locator(stamp):  # who wrote what the person vouches for stays on record
        accepted = msgspec.structs.replace(
            accepted, draft=msgspec.structs.replace(accepted.draft, locator=f"reviewed: {stamp}")
        )
    if content is None or content == trace.content:
        return accepted
    draft = msgspec.structs.replace(accepted.draft, content=content)
    key = f"accepted\0{trace.id}\0{content}"
    return msgspec.structs.replace(
        accepted, draft=draft, trace_id=derived_trace_id(trace.created_at, key)
    )


def rejection(trace: Trace, reason: str, session: AgentSession | None) -> Remember:
    """The write that rejects a held trace: a correction that supersedes it. It names
    the kind and the writer, never the text, so the rejection is safe for agents."""
    reason = " ".join(reason.split())
    writer = stamped_agent(trace.provenance.locator) or "an agent"
    draft = Draft(
        kind="correction",
        content=f"Rejected in review ({reason}): a {trace.kind} written by {writer}",
        tags=(REJECTED_TAG,),
        supersedes=trace.id,
        scope=trace.scope,
        verified=True,
    )
    return Remember(
        draft=draft,
        session=session,
        trace_id=derived_trace_id(trace.created_at, f"rejected\0{trace.id}"),
    )
