"""What each write operation becomes, checked against the store: the rules that need
its state (docs/security.md, "Provenance rules").

:func:`payloads_for` checks an operation (:mod:`hikmah.rules.operations`) against the
store as the writer's batch sees it and returns the ledger payloads it becomes, or
raises the typed error that says why not; :func:`build_trace` turns a
:class:`~hikmah.model.trace.Draft` into a :class:`~hikmah.model.trace.Trace`.
Refusals to agent sessions that belong to a write are here too (verifying, purging);
those of whole methods (compacting, accepting a ledger tail) are declared where the
daemon registers them.
"""

from __future__ import annotations

from hikmah.access.principal import AgentSession, refuse_in_agent_session, stamp_locator
from hikmah.index import replicas
from hikmah.index.fates import pins_in_force
from hikmah.index.snapshot import Snapshot
from hikmah.learning.calibration import check_resolution
from hikmah.learning.consolidation import is_proposal_id, promotion_draft, proposals
from hikmah.ledger.payloads import (
    DeviceAddedPayload,
    DeviceRemovedPayload,
    FeedbackPayload,
    FulfillPayload,
    Payload,
    PinPayload,
    PresencePayload,
    PurgePayload,
    RememberPayload,
    SupersedePayload,
)
from hikmah.model.deadlines import parse_deadline
from hikmah.model.display import visible
from hikmah.model.errors import (
    ConflictError,
    InvalidInput,
    NotFound,
    PolicyError,
)
from hikmah.model.policy import KernelPolicy
from hikmah.model.secrets import check_fields
from hikmah.model.trace import (
    DEFAULT_AUTHORITY,
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIVACY,
    DEFAULT_SALIENCE,
    DEFAULT_SOURCE,
    GLOBAL_SCOPE,
    Draft,
    Provenance,
    Trace,
    new_trace_id,
    normalize_tag,
)
from hikmah.model.vocabulary import Status
from hikmah.rules.checks import check_size, check_superseded, check_trace
from hikmah.rules.operations import (
    Feedback,
    Fulfill,
    Operation,
    Pair,
    Pin,
    Promote,
    Remember,
    RemoveDevice,
    SetPresence,
)
from hikmah.sync.device import KEY_BYTES, device_id
from hikmah.sync.manifest import MAX_NAME, valid_name


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
        if not is_proposal_id(operation.proposal):
            raise NotFound(
                f"no proposal has id {visible(operation.proposal)}: a proposal id is pr_"
                " and 16 hex digits, as consolidate lists them"
            )
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
        overrides = pins_in_force(snapshot, operation.id)
        return [PinPayload(id=operation.id, pinned=operation.pinned, by=by, overrides=overrides)]
    if isinstance(operation, SetPresence):
        return [_presence(operation, now_ms)]
    if isinstance(operation, Pair | RemoveDevice):
        return [_roster(snapshot, operation)]
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


def _presence(operation: SetPresence, now_ms: int) -> PresencePayload:
    """Only a person changes presence, and turning it on takes a passphrase's hash."""
    refuse_in_agent_session(operation.session, f"passphrase {operation.action}")
    if (operation.hash is None) != (operation.action in ("remove", "reset")):
        raise InvalidInput(f"passphrase {operation.action} takes a hash exactly when it sets one")
    if (operation.key is None) != (operation.salt is None) or (
        operation.hash is None and operation.key is not None
    ):
        raise InvalidInput(f"passphrase {operation.action}: a person key goes with its salt")
    return PresencePayload(
        action=operation.action,
        hash=operation.hash,
        at=now_ms,
        key=operation.key,
        salt=operation.salt,
    )


def _roster(snapshot: Snapshot, operation: Pair | RemoveDevice) -> Payload:
    entry = replicas.paired(snapshot, operation.device)
    if isinstance(operation, RemoveDevice):
        if entry is None:
            raise NotFound(f"no paired device has id {operation.device}")
        if entry.peer.upto is not None:
            raise ConflictError(f"device {operation.device} is already removed")
        at = entry.peer.applied
        return DeviceRemovedPayload(
            device=operation.device, epoch=at.epoch, seq=at.seq, hash=at.hash
        )
    if len(operation.key) != KEY_BYTES or device_id(operation.key) != operation.device:
        raise InvalidInput(f"{operation.device} is not the id of the key given")
    if not valid_name(operation.name):
        raise InvalidInput(f"a device name is 1 to {MAX_NAME} printable characters")
    if operation.device == replicas.device(snapshot):
        raise ConflictError("a device cannot pair with itself")
    if entry is not None:
        removed = entry.peer.upto is not None
        raise ConflictError(
            f"device {operation.device} was removed; pair it again as a new device"
            if removed
            else f"device {operation.device} is already paired"
        )
    return DeviceAddedPayload(
        device=operation.device,
        key=operation.key,
        name=operation.name,
        invite=operation.invite,
        grant=operation.grant,
    )


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

    What the writer's session, the policy and the store's state allow is
    checked here; what a trace must be whoever wrote it is :func:`check_trace`,
    which every device also runs on the traces other devices send it.

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
    if trace_id is not None:  # kept from an import: the writer's text like the rest
        check_fields((("id", trace_id),))
    check_size(draft.content, policy.max_trace_bytes)
    if draft.kind == "prediction" and not allow_prediction:
        raise InvalidInput("kind prediction is written with predict, which records the forecast")
    if session is not None and draft.verified:
        refuse_in_agent_session(session, "remember --verified")
    if draft.privacy == "sensitive" and not policy.allow_sensitive_persistence:
        raise PolicyError(
            "sensitive traces are refused: enable [vault] and allow_sensitive_persistence"
            " in the policy to keep them encrypted, or store a reference instead"
        )
    source = (draft.source or "").strip() or DEFAULT_SOURCE
    trace = Trace(
        id=trace_id or new_trace_id(now_ms),
        kind=draft.kind,
        content=draft.content.strip(),
        tags=tuple(dict.fromkeys(t for t in map(normalize_tag, draft.tags) if t)),
        created_at=now_ms if created_at is None else created_at,
        deadline=None if draft.deadline is None else parse_deadline(draft.deadline, now_ms),
        salience=_or(draft.salience, DEFAULT_SALIENCE),
        confidence=_or(draft.confidence, DEFAULT_CONFIDENCE),
        privacy=draft.privacy or DEFAULT_PRIVACY,
        provenance=Provenance(
            source=source,
            locator=stamp_locator(session, draft.locator),
            observed_at=now_ms if created_at is None else created_at,
            authority=_or(draft.authority, DEFAULT_AUTHORITY),
            verified=draft.verified,
            evidence=draft.evidence,
        ),
        claim_key=None if draft.claim_key is None else draft.claim_key.strip(),
        claim_value=None if draft.claim_value is None else draft.claim_value.strip(),
        supersedes=draft.supersedes,
        scope=(draft.scope or GLOBAL_SCOPE).strip(),
        fulfills=draft.fulfills,
        family=draft.family,
        value=draft.value,
        answer_space=draft.answer_space,
        prediction_type=draft.prediction_type,
        probability=draft.probability,
    )
    check_trace(trace)
    if trace.supersedes is not None:
        check_superseded(trace, superseded)
    return trace


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
