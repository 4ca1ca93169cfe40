"""The write operations and every rule they must pass, in one place (docs/security.md,
"Provenance rules").

An :data:`Operation` is what a writer asks the store for; :func:`payloads_for`
checks it against the store as the writer's batch sees it and returns the
ledger payloads it becomes, or raises the typed error that says why not.
:func:`build_trace` is the part that turns a :class:`~hikmah.model.trace.Draft`
into a :class:`~hikmah.model.trace.Trace`. Whatever path a write takes (RPC,
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

from hikmah.access.principal import AgentSession, refuse_in_agent_session, stamp_locator
from hikmah.index import replicas
from hikmah.index.fates import pins_in_force
from hikmah.index.snapshot import Snapshot
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
from hikmah.model.display import is_agent_locator, visible
from hikmah.model.errors import (
    ConflictError,
    HikmahError,
    InvalidInput,
    NotFound,
    PolicyError,
    ProvenanceRefused,
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
    is_model_source,
    new_trace_id,
    normalize_tag,
)
from hikmah.model.vocabulary import Status
from hikmah.sync.chain import Position
from hikmah.sync.device import KEY_BYTES, device_id
from hikmah.sync.manifest import MAX_NAME, valid_name
from hikmah.sync.plan import Step

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


class SetPresence(msgspec.Struct, frozen=True, kw_only=True):
    """Turn person presence on (``set``), change its passphrase, or turn it off
    (``remove``; ``reset`` is the way back from a forgotten passphrase, with the daemon
    stopped). ``hash`` is the new passphrase's Argon2id hash (None to turn it off), and
    ``key`` the public half of the person key it unlocks with ``salt``
    (:mod:`hikmah.access.person`)."""

    action: Literal["set", "change", "remove", "reset"]
    hash: str | None = None
    key: bytes | None = None
    salt: bytes | None = None
    session: AgentSession | None = None


class Pair(msgspec.Struct, frozen=True, kw_only=True):
    """Trust a device a person paired (``hikmah sync invite`` / ``join``): its records
    count from now on, here and on every device that trusts this one."""

    device: str
    key: bytes
    name: str
    invite: str | None = None  # the invitation a join request answered, and the
    grant: bytes | None = None  # person's signature of it (hikmah.access.person.grant)


class RemoveDevice(msgspec.Struct, frozen=True, kw_only=True):
    """Stop trusting a paired device past what this device has applied of it."""

    device: str


class ApplyRemote(msgspec.Struct, frozen=True, kw_only=True):
    """Apply a paired device's records (one step of :func:`hikmah.sync.plan.plan_apply`).

    Nothing is appended to this device's ledger: the records are kept as that
    device published them, and the derived indexes reflect them
    (:mod:`hikmah.store.receive`). ``keys`` are the data keys of its sealed traces
    the daemon opened from envelopes (trace id → key), ``opened`` the seq of
    its chain they reach.
    """

    step: Step
    keys: dict[str, bytes] = msgspec.field(default_factory=dict)
    opened: int | None = None


# What a writer on this device asks for: each becomes records of its own ledger.
Operation = (
    Remember | Fulfill | Feedback | Pin | Promote | Purge | SetPresence | Pair | RemoveDevice
)
# Every way memory changes: this device's operations and other devices' records.
Change = Operation | ApplyRemote


class Applied(msgspec.Struct, frozen=True, kw_only=True):
    """What applying a paired device's records did: how many, the position reached, or
    why its chain halted (a record broke a rule: nothing of the step was applied)."""

    device: str
    records: int
    position: Position
    halted: str | None = None


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
        _check_superseded(trace, superseded)
    return trace


def check_size(content: str, limit: int) -> None:
    """Refuse a text over ``limit`` UTF-8 bytes (the policy's ``max_trace_bytes``).

    Raises:
        InvalidInput: saying how large it is and what to do instead.
    """
    size = len(content)  # characters first: a huge text is refused without encoding it
    if size <= limit:
        size = len(content.encode())
    if size > limit:
        raise InvalidInput(
            f"content is {_size(size)}, over the policy's max_trace_bytes ({_size(limit)}):"
            " remember what matters in it, or where the document is"
        )


def _size(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB" if count >= 1 << 20 else f"{count / 1024:.0f} KiB"


def check_trace(trace: Trace, *, sealed: bool = False) -> None:
    """The rules a trace obeys whoever wrote it, checked from the trace alone: when it is
    written, and on every device that receives it from another (docs/sync.md, "Which
    rules are checked where").

    Args:
        sealed: the writer's text (content, tags, claim, locator) is sealed and
            cannot be opened here; the rest is checked.

    Raises:
        InvalidInput, SecretDetected, ProvenanceRefused: the first rule it breaks.
    """
    if not sealed and not trace.content:
        raise InvalidInput("content is empty: say what should be remembered")
    if trace.kind == "prediction":
        _check_forecast(trace)
    elif trace.family or trace.answer_space or trace.prediction_type or trace.probability:
        raise InvalidInput("family, answer_space, type and p belong to predictions only")
    elif trace.value is not None and not (trace.kind == "outcome" and trace.fulfills):
        raise InvalidInput("value belongs to a prediction, or to the outcome that resolves one")
    for name, number in _trace_scores(trace):
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise InvalidInput(f"{name} must be between 0 and 1")
    if trace.fulfills is not None and trace.kind != "outcome":
        raise InvalidInput("only an outcome fulfills a commitment (kind outcome)")
    if (trace.claim_key is None) != (trace.claim_value is None):
        raise InvalidInput("give both claim_key and claim_value, or neither")
    if trace.claim_key is not None and not trace.claim_key:
        raise InvalidInput("claim_key is empty")
    if trace.claim_value is not None and not trace.claim_value:
        raise InvalidInput("claim_value is empty: a claim says what its key is")
    if len(trace.scope.encode()) > MAX_SCOPE:
        raise InvalidInput(f"scope is at most {MAX_SCOPE} bytes")
    if not _SCOPE.fullmatch(trace.scope):
        raise InvalidInput(
            "scope must be 'global' or 'kind:value', e.g. project:/path or person:ana"
        )
    if any(len(tag.encode()) > MAX_TAG for tag in trace.tags):
        raise InvalidInput(f"a tag is at most {MAX_TAG} bytes")
    if trace.claim_key is not None and len(trace.claim_key.encode()) > MAX_CLAIM_KEY:
        raise InvalidInput(f"claim_key is at most {MAX_CLAIM_KEY} bytes")
    if any(not tag.isprintable() for tag in trace.tags):
        raise InvalidInput("tags must be printable text without control characters")
    if trace.claim_key is not None and not trace.claim_key.isprintable():
        raise InvalidInput("claim_key must be printable text without control characters")
    check_fields(_writer_fields(trace))
    provenance = trace.provenance
    if provenance.verified and is_model_source(provenance.source):
        raise ProvenanceRefused(
            "a model: source cannot be verified: model output never verifies itself;"
            " a person can verify it by superseding it with a verified correction"
        )
    if provenance.verified and is_agent_locator(provenance.locator):
        raise ProvenanceRefused(
            "a trace written in an agent session cannot be verified; a person verifies it"
            " from their own terminal with remember --verified --supersedes ID"
        )
    if trace.supersedes is not None:
        if trace.supersedes == trace.id:
            raise InvalidInput("a trace cannot supersede itself")
        if is_model_source(provenance.source):
            raise ProvenanceRefused(
                "a model: source cannot supersede a trace: model output never corrects"
                " memory on its own; record an observation and let a person correct it"
            )


def _check_superseded(trace: Trace, superseded: tuple[Trace, Status] | None) -> None:
    """What the store's state allows a correction: its target exists, is active, and is
    not verified when the correction is not."""
    if superseded is None:
        raise NotFound(f"cannot supersede {trace.supersedes}: no trace has that id")
    old, status = superseded
    if status != "active":
        raise ConflictError(
            f"cannot supersede {old.id}: it is {status}; correct the trace that replaced it"
        )
    if old.provenance.verified and not trace.provenance.verified:
        raise ProvenanceRefused(
            f"an unverified trace cannot supersede the verified trace {old.id};"
            " a person can write a verified correction"
        )


def _check_forecast(trace: Trace) -> None:
    """A prediction says what family it belongs to, how it is scored, and how sure it is."""
    if not (trace.family or "").strip():
        raise InvalidInput("a prediction needs a family (e.g. build.ci-green), to be calibrated")
    if trace.prediction_type is None or trace.probability is None:
        raise InvalidInput("a prediction needs a type (noul, choice or score) and p")
    if trace.provenance.verified:
        raise ProvenanceRefused("a forecast is never verified; an outcome resolves it")
    if trace.fulfills is not None:
        raise InvalidInput("a prediction fulfills nothing; an outcome resolves it")
    space = trace.answer_space
    if trace.prediction_type == "choice":
        if len(set(space)) < 2 or len(set(space)) != len(space):
            raise InvalidInput("a choice prediction needs an answer_space of 2+ distinct answers")
        if trace.value not in space:
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


def _trace_scores(trace: Trace) -> Iterator[tuple[str, float]]:
    yield "salience", trace.salience
    yield "confidence", trace.confidence
    yield "authority", trace.provenance.authority
    if trace.probability is not None:
        yield "probability", trace.probability


def _writer_fields(trace: Trace) -> Iterator[tuple[str, str | None]]:
    yield "content", trace.content
    for index, tag in enumerate(trace.tags):
        yield f"tags[{index}]", tag
    yield "claim_key", trace.claim_key
    yield "claim_value", trace.claim_value
    yield "source", trace.provenance.source
    yield "locator", trace.provenance.locator
    yield "scope", trace.scope
    yield "family", trace.family
    yield "value", trace.value
    for index, answer in enumerate(trace.answer_space):
        yield f"answer_space[{index}]", answer
