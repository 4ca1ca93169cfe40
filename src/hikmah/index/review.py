"""Review: what agents write reaches later agents only after a person looks.

An agent's trace (its source class is ``agent``: the daemon stamped it, or it names
an ``agent:`` source) that no person verified is *held* when

* the screen finds signs of instructions to an agent in it (:mod:`hikmah.model.screen`,
  with ``[review] screen`` on): it is **quarantined**; or
* its kind is one of ``[review] kinds`` (the standing rules, by default), or it is
  an observation or an episode and ``[review] observations`` is on: it is
  **pending**.

A held trace is kept, with its stamp, and shown to the person, flagged; no agent
receives it, through any method, and consolidation leaves it out. A person accepts
it by a verified copy that supersedes it (the copy is theirs, so not held), or
rejects it by a correction that supersedes it and that repeats none of its text
(:func:`hikmah.rules.verification.acceptance`, :func:`~hikmah.rules.verification.rejection`).
Either way the history keeps what the agent wrote, who decided, and when.

Whether a trace is held depends on the policy, so it is decided when read: the
feature rows keep only what the policy cannot change, the screen's verdict
(``screened``), computed once when the trace is indexed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from hikmah.index.layout import KIND_CODE, SOURCE_CODE, STATUS_CODE
from hikmah.index.snapshot import Snapshot
from hikmah.model import screen
from hikmah.model.display import stamped_agent, stamped_session
from hikmah.model.policy import ReviewPolicy
from hikmah.model.trace import Trace, source_class
from hikmah.model.vocabulary import Hold
from hikmah.model.wire.review import Reason, ReviewItem

# The feature columns :func:`held_rows` reads.
HELD_FIELDS: Final = ("source", "verified", "kind", "screened")


def screened_text(trace: Trace) -> str:
    """Everything of a trace an agent would read: its text, claim and tags."""
    parts = [trace.content, trace.claim_key or "", trace.claim_value or "", " ".join(trace.tags)]
    return "\n".join(part for part in parts if part)


def screened(trace: Trace) -> bool:
    """The screen's verdict, for the feature row: an unverified agent trace that reads as
    instructions to an agent (whatever the policy says, which is applied when read)."""
    return (
        not trace.provenance.verified
        and source_class(trace) == "agent"
        and screen.quarantined(screened_text(trace))
    )


def held_kinds(policy: ReviewPolicy) -> tuple[str, ...]:
    extra = ("observation", "episode") if policy.observations else ()
    return (*policy.kinds, *extra)


def hold(trace: Trace, policy: ReviewPolicy, screened: bool | None = None) -> Hold | None:
    """Whether ``trace`` is held from agents, and why (None: agents may read it);
    ``screened``: the screen's verdict when known already (its feature row's)."""
    if trace.provenance.verified or source_class(trace) != "agent":
        return None
    if screened is None:
        screened = screen.quarantined(screened_text(trace))
    if policy.screen and screened:
        return "quarantined"
    return "pending" if trace.kind in held_kinds(policy) else None


def hold_in(snapshot: Snapshot, trace: Trace, policy: ReviewPolicy) -> Hold | None:
    """:func:`hold`, with the verdict the screen gave when the trace was indexed
    (a read never screens a long text again)."""
    docno = snapshot.docno(trace.id)
    verdict = None if docno is None else bool(snapshot.features["screened"][docno])
    return hold(trace, policy, verdict)


def held_rows(rows: Mapping[str, npt.NDArray[Any]], policy: ReviewPolicy) -> npt.NDArray[np.bool_]:
    """Which feature rows (:data:`HELD_FIELDS`) are held traces."""
    agent = (rows["source"] == SOURCE_CODE["agent"]) & (rows["verified"] == 0)
    kinds = [KIND_CODE[kind] for kind in held_kinds(policy)]
    held: npt.NDArray[np.bool_] = np.isin(rows["kind"], kinds)
    if policy.screen:
        held |= rows["screened"] == 1
    result: npt.NDArray[np.bool_] = agent & held
    return result


def _waiting_docs(snapshot: Snapshot, policy: ReviewPolicy) -> npt.NDArray[np.intp]:
    columns = snapshot.features
    rows = {name: columns[name] for name in HELD_FIELDS}
    mask = (columns["present"] == 1) & (columns["status"] == STATUS_CODE["active"])
    return np.flatnonzero(mask & held_rows(rows, policy))


def waiting(snapshot: Snapshot, policy: ReviewPolicy) -> int:
    """How many held traces wait for the person (active: neither accepted nor rejected)."""
    return len(_waiting_docs(snapshot, policy))


def inbox(snapshot: Snapshot, policy: ReviewPolicy, limit: int) -> list[ReviewItem]:
    """The held traces that wait, newest first, at most ``limit``."""
    docs = _waiting_docs(snapshot, policy)
    newest = docs[np.argsort(-snapshot.features["seq_written"][docs], kind="stable")]
    return [item(snapshot.trace_at(int(docno)), policy) for docno in newest[:limit]]


def item(trace: Trace, policy: ReviewPolicy) -> ReviewItem:
    """``trace`` as the inbox shows it (held as the policy says, pending if not)."""
    signs = screen.signs(screened_text(trace)) if policy.screen else []
    return ReviewItem(
        trace=trace,
        state="quarantined" if signs else "pending",
        reasons=[
            Reason(rule=sign.rule, meaning=sign.meaning, matched=sign.matched) for sign in signs
        ],
        writer=stamped_agent(trace.provenance.locator),
        session=stamped_session(trace.provenance.locator),
    )
