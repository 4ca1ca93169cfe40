"""Moving memory in and out: JSON Lines of traces, and ledgers of the reference.

Pure functions over lines already read; the daemon does the reading and the
writing. Everything imported becomes an ordinary write operation
(:class:`~hikmah.rules.operations.Remember`, :class:`~hikmah.rules.operations.Fulfill`,
:class:`~hikmah.rules.operations.Purge`), so the rules of :func:`hikmah.rules.writes.build_trace`
and the credential detector judge an imported line exactly as they judge a
``remember``.

**JSON Lines.** One trace object per line, in the shape the daemon answers
with (:class:`~hikmah.model.trace.Trace`) plus ``status``; missing fields take the
write defaults, so ``{"kind": "observation", "content": "…"}`` is a line. A
line keeps its ``id`` and ``created_at``, which makes an import idempotent by
id. Statuses are not written, they are re-derived: a superseded trace becomes
superseded when the later line that supersedes it is imported (export writes
in write order), and a fulfilled commitment becomes fulfilled by the outcome
line that fulfils it or, when no line does, by a fulfil at the end of the
import (:func:`settle`).

**Reference ledgers.** ``memory.jsonl`` of the reference implementation (and
any ledger in its record format, versions 1 and 2): the hash chain is checked
with the ledger module's own codec before anything is imported
(:func:`check_chain`), then each record is mapped (:func:`reference_operation`):
a remember keeps the reference trace's id, times and fields; the reference
records a correction twice (the new trace's ``supersedes`` and a supersede
record), and Hikmah writes the link with the new trace, so the supersede
record is checked against what the store holds (:func:`supersede_problem`),
never applied on its own, and a link to a trace that never existed is
reported, not invented.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgspec

from hikmah.access.principal import AgentSession
from hikmah.ledger.chain import GENESIS, Record, decode_record, link_problem
from hikmah.ledger.payloads import SupersedePayload
from hikmah.model.errors import HikmahError, InvalidInput, LedgerError
from hikmah.model.head import Head
from hikmah.model.secrets import check_fields, redact
from hikmah.model.trace import Draft, TraceFields, draft_fields
from hikmah.model.vocabulary import Kind, PredictionType, Privacy, Status
from hikmah.model.wire.memory import StoredTrace
from hikmah.model.wire.transfer import ChainBreak, ExportedTrace
from hikmah.rules.operations import Fulfill, Operation, Purge, Remember

# Ids are echoed in reports and error messages, so they must look like ids
# (the detector runs on them too: a credential pasted as an id is refused).
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_ID_FIELDS = ("id", "supersedes", "fulfills")  # of a trace line; and provenance.evidence
_ENUM_VALUE = re.compile(r"Invalid enum value .*? - at")


# --- JSON Lines of traces ----------------------------------------------------------------


class ImportedProvenance(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``provenance`` of an imported line; every field optional."""

    source: str | None = None
    locator: str | None = None
    observed_at: int | None = None
    authority: float | None = None
    verified: bool = False
    evidence: tuple[str, ...] = ()


class ImportedTrace(TraceFields, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of a JSON Lines import: a trace as export writes it (provenance nested),
    missing fields taking the write defaults."""

    id: str | None = None
    created_at: int | None = None
    provenance: ImportedProvenance = ImportedProvenance()
    family: str | None = None
    value: str | None = None
    answer_space: tuple[str, ...] = ()
    prediction_type: PredictionType | None = None
    probability: float | None = None
    status: Status = "active"


class Planned(NamedTuple):
    """An operation to submit, and a note on what of the line it could not keep."""

    operation: Operation
    note: str | None = None


def trace_operation(line: Any, *, session: AgentSession | None = None) -> Planned:
    """The write one JSON Lines trace object asks for. Its id fields are checked for
    their shape here; the write rules refuse the operation when one holds a credential
    (:func:`hikmah.rules.writes.build_trace`), before anything names them.

    Args:
        line: the decoded line (a JSON object).
        session: the agent session of the importer, if any (its writes are stamped).

    Returns:
        A :class:`~hikmah.rules.operations.Remember` keeping the line's id and time.

    Raises:
        InvalidInput: the line is not a trace object (the message names the field,
            never its value), or its status is ``purged``.
    """
    try:
        found = msgspec.convert(line, ImportedTrace, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"not a trace object: {_describe(exc)}") from None
    if found.status == "purged":
        raise InvalidInput("status purged: a purged trace is never imported")
    if found.created_at is not None and found.created_at < 0:
        raise InvalidInput("created_at must be epoch milliseconds, not before 1970")
    provenance = found.provenance
    _check_shapes(
        ("id", found.id),
        ("supersedes", found.supersedes),
        ("fulfills", found.fulfills),
        *((f"provenance.evidence[{i}]", e) for i, e in enumerate(provenance.evidence)),
    )
    draft = Draft(**draft_fields(found), **draft_fields(provenance))
    operation = Remember(
        draft=draft,
        session=session,
        trace_id=found.id,
        created_at=found.created_at,
        # A forecast is exported like any trace; its own rules still apply.
        allow_prediction=found.kind == "prediction",
    )
    note = None
    if provenance.observed_at is not None and provenance.observed_at != found.created_at:
        note = (
            "provenance.observed_at differs from created_at and is not kept:"
            " Hikmah records a trace as observed when it was created"
        )
    return Planned(operation, note)


def line_texts(lines: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The contents and the id fields of the JSON Lines trace objects ``lines`` (what
    is text where it should be), for the credential detector to see ahead of the write
    rules."""
    contents: list[str] = []
    ids: list[str] = []
    for line in lines:
        if not isinstance(line, dict):
            continue
        if isinstance(content := line.get("content"), str):
            contents.append(content)
        ids += [v for v in (line.get(k) for k in _ID_FIELDS) if isinstance(v, str)]
        provenance = line.get("provenance")
        if isinstance(provenance, dict) and isinstance(
            evidence := provenance.get("evidence"), list
        ):
            ids += [e for e in evidence if isinstance(e, str)]
    return contents, ids


def settle(
    trace_id: str, exported: Status, found: StoredTrace | None, *, session: AgentSession | None
) -> Fulfill | str | None:
    """What an imported line's exported status still needs once every line is written.

    Args:
        trace_id: the line's id.
        exported: the status the line was exported with.
        found: that trace as the store holds it now (None if it is not there).
        session: the importer's agent session, if any.

    Returns:
        None when the trace already has its status; a :class:`~hikmah.rules.operations.Fulfill`
        for a commitment exported as fulfilled that no imported outcome fulfilled;
        otherwise a note saying why the status could not be reproduced.
    """
    if found is None or found.status == exported:
        return None
    if found.status != "active":
        return f"exported as {exported}, but it is {found.status} here"
    if exported == "fulfilled" and found.trace.kind == "commitment":
        return Fulfill(id=trace_id, session=session)
    if exported == "superseded":
        return (
            "exported as superseded, but no imported line supersedes it (the trace that did"
            " was purged, or left out of the file): it is active here"
        )
    return (
        f"exported as {exported}, but only an outcome resolves a {found.trace.kind}"
        " and none in the file does: it is active here"
    )


def exported(status: Status, *, include_superseded: bool) -> bool:
    """Whether a trace with this status is written by an export."""
    return status in ("active", "fulfilled") or (status == "superseded" and include_superseded)


def export_line(entry: StoredTrace, *, keep_supersedes: bool) -> ExportedTrace:
    """One line of an export: the trace as the daemon answers it, plus ``status``.

    Args:
        entry: the stored trace.
        keep_supersedes: False when the trace it supersedes is not in the export
            (superseded traces left out, or it was purged): the link is dropped so
            that the file imports on its own.
    """
    fields = msgspec.structs.asdict(entry.trace)
    if not keep_supersedes:
        fields["supersedes"] = None
    return ExportedTrace(**fields, status=entry.status)


# --- what is there already --------------------------------------------------------------


def target_id(operation: Operation) -> str | None:
    """The trace an operation writes or changes (None for a remember that makes a new id)."""
    if isinstance(operation, Remember):
        return operation.trace_id
    if isinstance(operation, Fulfill | Purge):
        return operation.id
    return None


def already_done(operation: Operation, found: StoredTrace | None) -> bool:
    """Whether the store holds the effect of ``operation`` already (an earlier import).

    A remember whose id exists is done whatever became of the trace since: an
    import never brings back a purged trace.
    """
    if found is None:
        return False
    if isinstance(operation, Remember):
        return True
    if isinstance(operation, Fulfill):
        return found.status == "fulfilled"
    if isinstance(operation, Purge):
        return found.status == "purged"
    return False


def is_taken_id(error: HikmahError) -> bool:
    """Whether a write was refused because its trace id exists (an earlier import)."""
    return error.reason == "conflict" and "exists already" in str(error)


# --- reference ledgers -------------------------------------------------------------------


class ChainCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :func:`check_chain` over some records.

    Attributes:
        checked: How many records, from the first, verify.
        tail: The last verified record (the ``after`` of the next call); the
            ``after`` given when none verified.
        broken: The first record that does not verify, if any.
    """

    checked: int
    tail: Head | None
    broken: ChainBreak | None = None


def check_chain(
    records: Iterable[tuple[int, bytes]],
    *,
    after: Head | None = None,
    pinned: Head | None = None,
) -> ChainCheck:
    """Verify ledger records (file line number, record line) continuing a chain.

    Hashes and links are checked by :mod:`hikmah.ledger.chain` (versions 1 and 2).
    The records may come in several calls: each continues from the ``tail`` of
    the one before.

    Args:
        records: ``(line number, record bytes)`` in file order.
        after: The last record verified before these (None: the ledger's start).
        pinned: A head the person pinned (``--expect-head``): its record must
            carry its hash, and records past it are a tail nobody acknowledged.

    Returns:
        How far the chain verifies, and where it breaks.
    """
    expected = 1 if after is None else after.seq + 1
    prev_hash = GENESIS if after is None else after.hash
    tail, checked = after, 0
    for line, text in records:
        seq: int | None = None
        try:
            record = decode_record(text)
            seq = record.seq
            problem = _link_problem(record, expected, prev_hash, pinned)
        except LedgerError as exc:
            problem = str(exc)
        if problem is not None:
            return ChainCheck(
                checked=checked, tail=tail, broken=ChainBreak(line=line, seq=seq, reason=problem)
            )
        checked += 1
        tail = Head(seq=record.seq, hash=record.hash)
        expected, prev_hash = record.seq + 1, record.hash
    return ChainCheck(checked=checked, tail=tail)


def _link_problem(record: Record, expected: int, prev_hash: str, pinned: Head | None) -> str | None:
    problem = link_problem(record, expected, prev_hash)
    if problem is not None:
        return problem
    seq = record.seq
    if pinned is not None and seq > pinned.seq:
        return (
            f"seq {seq} is past the pinned head (seq {pinned.seq}): records appended after"
            " the head you pinned, which nobody acknowledged"
        )
    if pinned is not None and seq == pinned.seq and record.hash != pinned.hash:
        return (
            f"ledger rewritten: record {seq} has hash {record.hash}, but the pinned head"
            f" says {pinned.hash}"
        )
    return None


class _RefProvenance(msgspec.Struct, frozen=True, kw_only=True):
    source: str | None = None
    locator: str | None = None
    observed_at_ms: int | None = None
    authority: float | None = None
    verified: bool = False


class _RefTrace(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: Kind
    content: str
    tags: tuple[str, ...] = ()
    created_at_ms: int
    deadline_ms: int | None = None
    salience: float | None = None
    confidence: float | None = None
    privacy: Privacy | None = None
    provenance: _RefProvenance = _RefProvenance()
    claim_key: str | None = None
    claim_value: str | None = None
    supersedes: str | None = None


class _RefRemember(msgspec.Struct, frozen=True, tag_field="type", tag="remember"):
    trace: _RefTrace


class _RefFulfill(msgspec.Struct, frozen=True, tag_field="type", tag="fulfill"):
    id: str


class _RefPurge(msgspec.Struct, frozen=True, tag_field="type", tag="purge"):
    id: str
    reason: str | None = None


# A supersede record is ours to the letter.
_REF_DECODER = msgspec.json.Decoder(_RefRemember | SupersedePayload | _RefFulfill | _RefPurge)
REFERENCE_TYPES = ("remember", "supersede", "fulfill", "purge")


class SupersedeCheck(NamedTuple):
    """A supersede record: Hikmah wrote the link with the new trace; check it holds."""

    old_id: str
    new_id: str


Mapped = Remember | Fulfill | Purge | SupersedeCheck


def reference_operation(
    record: Record, *, session: AgentSession | None = None
) -> tuple[Mapped, str | None]:
    """What one verified record of a reference ledger becomes in Hikmah.

    Args:
        record: a record whose hash and link were checked.
        session: the importer's agent session, if any.

    Returns:
        The operation (or the supersession to check), and a note on what of the
        record is not kept.

    Raises:
        InvalidInput: the payload is not one of the four reference types, or
            malformed (the message names the field, never its value).
        SecretDetected: an id holds a credential.
    """
    try:
        payload = _REF_DECODER.decode(record.payload)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        kind = _payload_type(record.payload)
        if kind is not None and kind not in REFERENCE_TYPES:
            raise InvalidInput(
                f"a {redact(kind)[:40]!r} record is not one Hikmah maps"
                " (it maps remember, supersede, fulfill and purge)"
            ) from None
        raise InvalidInput(f"malformed {kind or ''} payload: {_describe(exc)}") from None
    if isinstance(payload, SupersedePayload):
        _check_ids(("old_id", payload.old_id), ("new_id", payload.new_id))
        return SupersedeCheck(payload.old_id, payload.new_id), None
    if isinstance(payload, _RefFulfill):
        _check_ids(("id", payload.id))
        return Fulfill(id=payload.id, session=session), None
    if isinstance(payload, _RefPurge):
        _check_ids(("id", payload.id))
        reason = payload.reason or f"purged in the reference ledger (seq {record.seq})"
        return Purge(id=payload.id, reason=reason, session=session), None
    trace = payload.trace
    _check_ids(("trace.id", trace.id), ("trace.supersedes", trace.supersedes))
    provenance = trace.provenance
    draft = Draft(**draft_fields(trace), **draft_fields(provenance), deadline=trace.deadline_ms)
    notes = []
    observed = provenance.observed_at_ms
    if observed is not None and observed != trace.created_at_ms:
        notes.append(
            "observed_at_ms differs from created_at_ms and is not kept:"
            " Hikmah records a trace as observed when it was created"
        )
    unknown = _unknown_fields(record.payload)
    if unknown:
        # A newer reference may add fields; say what is dropped rather than lose it quietly.
        notes.append("fields not kept (Hikmah has no place for them): " + ", ".join(unknown))
    operation = Remember(
        draft=draft, session=session, trace_id=trace.id, created_at=trace.created_at_ms
    )
    return operation, "; ".join(notes) or None


def supersede_problem(
    check: SupersedeCheck, old: StoredTrace | None, new: StoredTrace | None
) -> str | None:
    """Why a supersede record does not hold in the store (None when it does)."""
    if old is None:
        return (
            f"supersede of {check.old_id}, a trace that never existed in this ledger or in"
            " memory: nothing was invented"
        )
    if new is None:
        return (
            f"supersede of {check.old_id} by {check.new_id}, which is not in memory (its"
            " remember record was refused)"
        )
    if old.superseded_by == check.new_id:
        return None
    now = f"superseded by {old.superseded_by}" if old.superseded_by else old.status
    return (
        f"supersede of {check.old_id} by {check.new_id} is not applied: {check.old_id} is"
        f" {now}, and Hikmah links a correction only through the new trace's supersedes"
    )


_REF_FIELDS = frozenset(_RefTrace.__struct_fields__)
_REF_PROVENANCE_FIELDS = frozenset(_RefProvenance.__struct_fields__)


def _unknown_fields(payload: bytes) -> list[str]:
    """Fields of a remember payload's trace that the reference format does not define."""
    trace = msgspec.json.decode(payload).get("trace", {})
    provenance = trace.get("provenance")
    found = [name for name in trace if name not in _REF_FIELDS]
    if isinstance(provenance, dict):
        found += [f"provenance.{n}" for n in provenance if n not in _REF_PROVENANCE_FIELDS]
    return [redact(name)[:40] for name in found]


def _payload_type(payload: bytes) -> str | None:
    try:
        value = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _check_ids(*fields: tuple[str, str | None]) -> None:
    """Refuse id fields that are not id-shaped or that hold a credential.

    Raises:
        SecretDetected, InvalidInput: naming the field, never echoing it.
    """
    check_fields(fields)
    _check_shapes(*fields)


def _check_shapes(*fields: tuple[str, str | None]) -> None:
    """Refuse id fields that are not id-shaped.

    Raises:
        InvalidInput: naming the field, never echoing it.
    """
    for name, value in fields:
        if value is not None and not _ID.fullmatch(value):
            raise InvalidInput(
                f"{name} is not a trace id (letters, digits and _.:- only, at most 128)"
            )


def _describe(exc: msgspec.MsgspecError) -> str:
    """msgspec's message, without the offending value (it could be anything)."""
    return redact(_ENUM_VALUE.sub("invalid value - at", str(exc)))
