"""The write operations and every rule they must pass, in one place (REFERENCE.md,
"Trace and store rules").

An :data:`Operation` is what a writer asks the store for; :func:`payloads_for`
checks it against the store as the writer's batch sees it and returns the
ledger payloads it becomes, or raises the typed error that says why not.
:func:`build_trace` is the part that turns a :class:`~hikmah.trace.Draft`
into a :class:`~hikmah.trace.Trace`. Whatever path a write takes (RPC,
import, promotion, prediction), it comes through here, so a rule cannot be
forgotten on one of them. Refusals to agent sessions that belong to a write
are here too (verifying, purging); those of whole methods (compacting,
accepting a ledger tail) are declared where the daemon registers them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Literal

import msgspec

from hikmah.consolidation import promotion_draft, proposals
from hikmah.deadlines import parse_deadline
from hikmah.errors import (
    ConflictError,
    HikmahError,
    InvalidInput,
    NotFound,
    PolicyError,
    ProvenanceRefused,
)
from hikmah.payloads import (
    FeedbackPayload,
    FulfillPayload,
    Payload,
    PinPayload,
    PurgePayload,
    RememberPayload,
    SupersedePayload,
)
from hikmah.policy import KernelPolicy
from hikmah.principal import AgentSession, is_agent_locator, refuse_in_agent_session, stamp_locator
from hikmah.secrets import check_fields
from hikmah.snapshot import Snapshot
from hikmah.trace import (
    DEFAULT_AUTHORITY,
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIVACY,
    DEFAULT_SALIENCE,
    DEFAULT_SOURCE,
    GLOBAL_SCOPE,
    Draft,
    Provenance,
    Trace,
    is_model_source,
    new_trace_id,
    normalize_tag,
)
from hikmah.vocabulary import Status

_SCOPE = re.compile(r"global|[a-z][a-z0-9_-]{0,31}:\S.*", re.S)
# In UTF-8 bytes: each becomes part of an index key, and LMDB keys hold 511.
MAX_TAG = 200
MAX_CLAIM_KEY = 400
MAX_SCOPE = 400


class Remember(msgspec.Struct, frozen=True, kw_only=True):
    """Write a trace (and supersede the one it names)."""

    draft: Draft
    session: AgentSession | None = None
    trace_id: str | None = None
    created_at: int | None = None
    allow_prediction: bool = False


class Fulfill(msgspec.Struct, frozen=True, kw_only=True):
    """Mark an active commitment done."""

    id: str
    by: str | None = None
    session: AgentSession | None = None


class Feedback(msgspec.Struct, frozen=True, kw_only=True):
    """A trace that was recalled and acted on led to a good or a bad outcome."""

    id: str
    outcome: Literal["good", "bad"]
    session: AgentSession | None = None


class Pin(msgspec.Struct, frozen=True, kw_only=True):
    """Keep a trace at full weight in recall (``pinned``), or let it decay again."""

    id: str
    pinned: bool
    session: AgentSession | None = None


class Promote(msgspec.Struct, frozen=True, kw_only=True):
    """Write the belief a consolidation proposal describes, if its evidence is unchanged."""

    proposal: str
    verified: bool = False
    source: str | None = None
    session: AgentSession | None = None


class Purge(msgspec.Struct, frozen=True, kw_only=True):
    """Retention deletion: a tombstone, and the trace leaves every index."""

    id: str
    reason: str
    session: AgentSession | None = None


Operation = Remember | Fulfill | Feedback | Pin | Promote | Purge


class Written(msgspec.Struct, frozen=True, kw_only=True):
    """What one successful operation wrote."""

    id: str
    seq: int
    trace: Trace | None = None
    status: Status = "active"
    conflicts: list[str] = msgspec.field(default_factory=list)
    # A purge under the vault: the trace's data key was destroyed with it.
    key_destroyed: bool = False


Outcome = Written | HikmahError


def payloads_for(
    snapshot: Snapshot, operation: Operation, *, now_ms: int, policy: KernelPolicy
) -> list[Payload]:
    """The ledger payloads ``operation`` becomes, as the store stands in ``snapshot``.

    Raises:
        HikmahError: the first rule the operation breaks; nothing is written.
    """
    if isinstance(operation, Remember):
        return _remember(snapshot, operation, now_ms, policy)
    if isinstance(operation, Promote):
        found = {p.id: p for p in proposals(snapshot, policy)}.get(operation.proposal)
        if found is None:
            raise ConflictError(
                f"no current proposal has id {operation.proposal}: its evidence changed"
                " since it was made (or it never existed); run consolidate again"
            )
        draft = promotion_draft(found, source=operation.source, verified=operation.verified)
        return _remember(snapshot, Remember(draft=draft, session=operation.session), now_ms, policy)
    if isinstance(operation, Fulfill):
        _check_open(snapshot, operation.id)
        by = stamp_locator(operation.session, operation.by)
        return [FulfillPayload(id=operation.id, by=by)]
    if isinstance(operation, Feedback | Pin):
        _check_visible(snapshot, operation.id)
        by = stamp_locator(operation.session, None)
        if isinstance(operation, Feedback):
            return [FeedbackPayload(id=operation.id, outcome=operation.outcome, by=by)]
        return [PinPayload(id=operation.id, pinned=operation.pinned, by=by)]
    refuse_in_agent_session(operation.session, "purge")
    docno = snapshot.docno(operation.id)
    if docno is None:
        raise NotFound(f"no trace has id {operation.id}")
    status = snapshot.status_of(docno)
    if not operation.reason.strip():
        raise InvalidInput("purge needs a reason, kept in the tombstone for the audit trail")
    check_fields([("reason", operation.reason)])
    if status == "purged":
        raise ConflictError(f"{operation.id} is already purged")
    return [PurgePayload(id=operation.id, reason=operation.reason.strip())]


def _remember(
    snapshot: Snapshot, operation: Remember, now_ms: int, policy: KernelPolicy
) -> list[Payload]:
    draft = operation.draft
    superseded: tuple[Trace, Status] | None = None
    if draft.supersedes is not None:
        old = snapshot.docno(draft.supersedes)
        if old is not None:
            superseded = (snapshot.trace_at(old), snapshot.status_of(old))
    trace = build_trace(
        draft,
        now_ms=now_ms,
        policy=policy,
        session=operation.session,
        superseded=superseded,
        trace_id=operation.trace_id,
        created_at=operation.created_at,
        allow_prediction=operation.allow_prediction,
    )
    if snapshot.docno(trace.id) is not None:
        raise ConflictError(f"a trace with id {trace.id} exists already")
    if trace.privacy == "sensitive" and snapshot.dbs.vault is None:
        raise PolicyError(
            "sensitive traces are kept only encrypted, and this store runs without the"
            " vault's keys: nothing was written"
        )
    payloads: list[Payload] = [RememberPayload(trace=trace)]
    if trace.supersedes is not None:
        payloads.append(SupersedePayload(old_id=trace.supersedes, new_id=trace.id))
    if trace.fulfills is not None:
        _check_open(snapshot, trace.fulfills, outcome=trace)
        payloads.append(FulfillPayload(id=trace.fulfills, by=trace.id))
    return payloads


def _check_visible(snapshot: Snapshot, trace_id: str) -> None:
    """Check ``trace_id`` names a trace that was not purged.

    Raises:
        NotFound: it does not.
    """
    docno = snapshot.docno(trace_id)
    if docno is None or snapshot.status_of(docno) == "purged":
        raise NotFound(f"no trace has id {trace_id}")


def _check_open(snapshot: Snapshot, trace_id: str, *, outcome: Trace | None = None) -> None:
    """Check ``trace_id`` names an open commitment, or an open prediction ``outcome`` resolves.

    Raises:
        NotFound, InvalidInput, ConflictError, ProvenanceRefused: it does not.
    """
    docno = snapshot.docno(trace_id)
    if docno is None:
        raise NotFound(f"no trace has id {trace_id}")
    target = snapshot.bare_trace_at(docno)
    status = snapshot.status_of(docno)
    if target.kind == "prediction" and outcome is not None:
        if status != "active":
            done = "resolved" if status == "fulfilled" else status
            raise ConflictError(f"{trace_id} is {done}: a prediction is resolved once")
        check_resolution(target, outcome)
        return
    if target.kind != "commitment":
        what = "a commitment, or a prediction an outcome resolves"
        raise InvalidInput(f"{trace_id} is a {target.kind}, not {what}")
    if status != "active":
        raise ConflictError(f"{trace_id} is {status}, not an open commitment")


def build_trace(
    draft: Draft,
    *,
    now_ms: int,
    policy: KernelPolicy,
    session: AgentSession | None = None,
    superseded: tuple[Trace, Status] | None = None,
    trace_id: str | None = None,
    created_at: int | None = None,
    allow_prediction: bool = False,
) -> Trace:
    """Validate a draft and make the trace it describes.

    Args:
        draft: what the writer asked for.
        now_ms: the time of the write, epoch milliseconds.
        policy: the policy in force.
        session: the agent session the writer runs in, if any; its writes are
            stamped and may not be verified.
        superseded: the trace named by ``draft.supersedes`` and its status,
            looked up by the caller (None when it does not exist).
        trace_id: an id to keep (import); a new one is made otherwise.
        created_at: a creation time to keep (import); ``now_ms`` otherwise.
        allow_prediction: True only on the ``predict`` path.

    Raises:
        InvalidInput, SecretDetected, ProvenanceRefused, AgentRestricted,
        NotFound, ConflictError, PolicyError: the first rule the draft breaks.
    """
    content = draft.content.strip()
    if not content:
        raise InvalidInput("content is empty: say what should be remembered")
    if draft.kind == "prediction" and not allow_prediction:
        raise InvalidInput("kind prediction is written with predict, which records the forecast")
    if draft.kind == "prediction":
        _check_forecast(draft)
    elif draft.family or draft.answer_space or draft.prediction_type or draft.probability:
        raise InvalidInput("family, answer_space, type and p belong to predictions only")
    elif draft.value is not None and not (draft.kind == "outcome" and draft.fulfills):
        raise InvalidInput("value belongs to a prediction, or to the outcome that resolves one")
    for name, number in _scores(draft):
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise InvalidInput(f"{name} must be between 0 and 1")
    if draft.fulfills is not None and draft.kind != "outcome":
        raise InvalidInput("only an outcome fulfills a commitment (kind outcome)")
    if (draft.claim_key is None) != (draft.claim_value is None):
        raise InvalidInput("give both claim_key and claim_value, or neither")
    if draft.claim_key is not None and not draft.claim_key.strip():
        raise InvalidInput("claim_key is empty")
    if draft.claim_value is not None and not draft.claim_value.strip():
        raise InvalidInput("claim_value is empty: a claim says what its key is")
    scope = (draft.scope or GLOBAL_SCOPE).strip()
    if len(scope.encode()) > MAX_SCOPE:
        raise InvalidInput(f"scope is at most {MAX_SCOPE} bytes")
    if not _SCOPE.fullmatch(scope):
        raise InvalidInput(
            "scope must be 'global' or 'kind:value', e.g. project:/path or person:ana"
        )
    tags = tuple(dict.fromkeys(t for t in map(normalize_tag, draft.tags) if t))
    if any(len(tag.encode()) > MAX_TAG for tag in tags):
        raise InvalidInput(f"a tag is at most {MAX_TAG} bytes")
    if draft.claim_key is not None and len(draft.claim_key.encode()) > MAX_CLAIM_KEY:
        raise InvalidInput(f"claim_key is at most {MAX_CLAIM_KEY} bytes")
    if any(not tag.isprintable() for tag in tags):
        raise InvalidInput("tags must be printable text without control characters")
    if draft.claim_key is not None and not draft.claim_key.isprintable():
        raise InvalidInput("claim_key must be printable text without control characters")
    source = (draft.source or "").strip() or DEFAULT_SOURCE
    check_fields(_writer_fields(draft, tags, source, scope))

    if session is not None and draft.verified:
        refuse_in_agent_session(session, "remember --verified")
    locator = stamp_locator(session, draft.locator)
    if draft.verified and is_model_source(source):
        raise ProvenanceRefused(
            "a model: source cannot be verified: model output never verifies itself;"
            " a person can verify it by superseding it with a verified correction"
        )
    if draft.verified and is_agent_locator(locator):
        raise ProvenanceRefused(
            "a trace written in an agent session cannot be verified; a person verifies it"
            " from their own terminal with remember --verified --supersedes ID"
        )
    if draft.privacy == "sensitive" and not policy.allow_sensitive_persistence:
        raise PolicyError(
            "sensitive traces are refused: enable [vault] and allow_sensitive_persistence"
            " in the policy to keep them encrypted, or store a reference instead"
        )

    new_id = trace_id or new_trace_id(now_ms)
    if draft.supersedes is not None:
        _check_supersession(draft, new_id, source, superseded)

    return Trace(
        id=new_id,
        kind=draft.kind,
        content=content,
        tags=tags,
        created_at=now_ms if created_at is None else created_at,
        deadline=None if draft.deadline is None else parse_deadline(draft.deadline, now_ms),
        salience=_or(draft.salience, DEFAULT_SALIENCE),
        confidence=_or(draft.confidence, DEFAULT_CONFIDENCE),
        privacy=draft.privacy or DEFAULT_PRIVACY,
        provenance=Provenance(
            source=source,
            locator=locator,
            observed_at=now_ms if created_at is None else created_at,
            authority=_or(draft.authority, DEFAULT_AUTHORITY),
            verified=draft.verified,
            evidence=draft.evidence,
        ),
        claim_key=None if draft.claim_key is None else draft.claim_key.strip(),
        claim_value=None if draft.claim_value is None else draft.claim_value.strip(),
        supersedes=draft.supersedes,
        scope=scope,
        fulfills=draft.fulfills,
        family=draft.family,
        value=draft.value,
        answer_space=draft.answer_space,
        prediction_type=draft.prediction_type,
        probability=draft.probability,
    )


def _check_supersession(
    draft: Draft, new_id: str, source: str, superseded: tuple[Trace, Status] | None
) -> None:
    if draft.supersedes == new_id:
        raise InvalidInput("a trace cannot supersede itself")
    if is_model_source(source):
        raise ProvenanceRefused(
            "a model: source cannot supersede a trace: model output never corrects memory"
            " on its own; record an observation and let a person correct it"
        )
    if superseded is None:
        raise NotFound(f"cannot supersede {draft.supersedes}: no trace has that id")
    old, status = superseded
    if status != "active":
        raise ConflictError(
            f"cannot supersede {old.id}: it is {status}; correct the trace that replaced it"
        )
    if old.provenance.verified and not draft.verified:
        raise ProvenanceRefused(
            f"an unverified trace cannot supersede the verified trace {old.id};"
            " a person can write a verified correction"
        )


def _check_forecast(draft: Draft) -> None:
    """A prediction says what family it belongs to, how it is scored, and how sure it is."""
    if not (draft.family or "").strip():
        raise InvalidInput("a prediction needs a family (e.g. build.ci-green), to be calibrated")
    if draft.prediction_type is None or draft.probability is None:
        raise InvalidInput("a prediction needs a type (noul, choice or score) and p")
    if draft.verified:
        raise ProvenanceRefused("a forecast is never verified; an outcome resolves it")
    if draft.fulfills is not None:
        raise InvalidInput("a prediction fulfills nothing; an outcome resolves it")
    space = draft.answer_space
    if draft.prediction_type == "choice":
        if len(set(space)) < 2 or len(set(space)) != len(space):
            raise InvalidInput("a choice prediction needs an answer_space of 2+ distinct answers")
        if draft.value not in space:
            raise InvalidInput("a choice prediction's value must be one of its answer_space")
    elif space:
        raise InvalidInput("answer_space belongs to choice predictions only")


def check_resolution(prediction: Trace, outcome: Trace) -> None:
    """Whether ``outcome`` may resolve ``prediction`` (an active prediction, checked by the caller).

    The observed value is ``yes``/``no`` for a noul prediction (did the
    forecast event happen), one of the answer space for a choice, a number in
    [0, 1] for a score.

    Raises:
        ProvenanceRefused: a ``model:`` source never resolves a prediction.
        InvalidInput: the observed value does not fit the prediction.
    """
    if is_model_source(outcome.provenance.source):
        raise ProvenanceRefused(
            "a model: source cannot resolve a prediction: model output never grades itself"
        )
    observed = outcome.value
    if observed is None:
        raise InvalidInput("an outcome resolving a prediction needs the observed value")
    if prediction.prediction_type == "noul" and observed not in ("yes", "no"):
        raise InvalidInput("a noul prediction is resolved with observed yes or no")
    if prediction.prediction_type == "choice" and observed not in prediction.answer_space:
        raise InvalidInput(
            f"observed must be one of the answer space: {', '.join(prediction.answer_space)}"
        )
    if prediction.prediction_type == "score" and not _is_unit_number(observed):
        raise InvalidInput("a score prediction is resolved with a number between 0 and 1")


def _is_unit_number(text: str) -> bool:
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isfinite(number) and 0.0 <= number <= 1.0


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _scores(draft: Draft) -> Iterator[tuple[str, float]]:
    for name in ("salience", "confidence", "authority", "probability"):
        number = getattr(draft, name)
        if number is not None:
            yield name, float(number)


def _writer_fields(
    draft: Draft, tags: tuple[str, ...], source: str, scope: str
) -> Iterator[tuple[str, str | None]]:
    yield "content", draft.content
    for index, tag in enumerate(tags):
        yield f"tags[{index}]", tag
    yield "claim_key", draft.claim_key
    yield "claim_value", draft.claim_value
    yield "source", source
    yield "locator", draft.locator
    yield "scope", scope
    yield "family", draft.family
    yield "value", draft.value
    for index, answer in enumerate(draft.answer_space):
        yield f"answer_space[{index}]", answer
