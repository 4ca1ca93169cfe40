"""``review.*``: the person's inbox of what agents wrote and no agent may read yet
(:mod:`hikmah.index.review`): list it, accept (as written or edited), reject."""

from __future__ import annotations

from collections.abc import Callable

from hikmah.index import queries, review
from hikmah.model.errors import (
    AgentRestricted,
    HikmahError,
    InvalidInput,
    NotFound,
    PresenceRequired,
)
from hikmah.model.policy import ReviewPolicy
from hikmah.model.trace import Trace
from hikmah.model.wire.learning import Refused
from hikmah.model.wire.review import (
    Decided,
    ReviewAcceptParams,
    ReviewDecisionResult,
    ReviewListParams,
    ReviewListResult,
    ReviewRejectParams,
)
from hikmah.rules import verification
from hikmah.rules.operations import Remember

from ..context import Context
from ..rpc import Registry

registry = Registry()
# The write that decides one held trace.
_Write = Callable[[Trace], Remember]


def _for_a_person(ctx: Context) -> None:
    """Agents learn that something waits (``memory.context``), never what."""
    if ctx.agent is not None:
        raise AgentRestricted("the review inbox is the person's: no agent reads it")


@registry.method("review.list")
async def review_list(ctx: Context, params: ReviewListParams) -> ReviewListResult:
    """The held traces that wait for the person, newest first."""
    _for_a_person(ctx)
    policy = ctx.services.policy.review
    with ctx.services.store.snapshot() as snapshot:
        return ReviewListResult(
            waiting=review.waiting(snapshot, policy),
            items=review.inbox(snapshot, policy, params.limit),
        )


@registry.method("review.accept", person="accept agents' notes in review")
async def review_accept(ctx: Context, params: ReviewAcceptParams) -> ReviewDecisionResult:
    """Accept held traces: a verified copy of each supersedes it (with the person's
    edit of its text, for one trace)."""
    if params.content is not None and len(params.ids) != 1:
        raise InvalidInput("an edited text accepts one trace: name exactly one id")
    return await _decide(
        ctx, params.ids, lambda trace: verification.acceptance(trace, params.content, ctx.session)
    )


@registry.method("review.reject", person="reject agents' notes in review")
async def review_reject(ctx: Context, params: ReviewRejectParams) -> ReviewDecisionResult:
    """Reject held traces: a correction supersedes each, and no agent ever reads them."""
    if not params.reason.strip():
        raise InvalidInput("say why: the reason is kept in the rejection")
    return await _decide(
        ctx, params.ids, lambda trace: verification.rejection(trace, params.reason, ctx.session)
    )


async def _decide(ctx: Context, ids: list[str], write: _Write) -> ReviewDecisionResult:
    """Write each held trace's decision; those not waiting are refused, with why."""
    policy = ctx.services.policy.review
    chosen: list[tuple[str, Remember]] = []
    refused: list[Refused] = []
    with ctx.services.store.snapshot() as snapshot:
        for trace_id in dict.fromkeys(ids):
            try:
                entry = queries.get(snapshot, trace_id)
            except NotFound as exc:
                refused.append(Refused(id=trace_id, reason=str(exc)))
                continue
            why = _not_waiting(entry.trace, entry.status, policy)
            if why is not None:
                refused.append(Refused(id=trace_id, reason=why))
                continue
            chosen.append((trace_id, write(entry.trace)))
    operations = [operation for _id, operation in chosen]
    outcomes = await ctx.services.writer.submit_all(operations, person=ctx.person)
    decided = []
    for (trace_id, operation), outcome in zip(chosen, outcomes, strict=True):
        if isinstance(outcome, AgentRestricted | PresenceRequired):
            raise outcome  # the caller may not: the same for every one of them
        if isinstance(outcome, HikmahError):
            refused.append(Refused(id=trace_id, reason=str(outcome)))  # changed meanwhile, say
            continue
        assert operation.trace_id is not None
        decided.append(Decided(id=trace_id, by=operation.trace_id))
    return ReviewDecisionResult(decided=decided, refused=refused)


def _not_waiting(trace: Trace, status: str, policy: ReviewPolicy) -> str | None:
    if status != "active":
        return f"it is {status}: decided already, or changed since"
    if review.hold(trace, policy) is None:
        return "it does not wait for review (a person's trace, verified, or not held)"
    return None
