"""The hash-chained ledger: record codec, hashes, head file and verification.

Pure functions over bytes; the store keeps each record's line under its
sequence number (big-endian u64) in LMDB and calls this module to build,
read and check them.

A record is one JSON object. Version 2 (everything Hikmah writes) is::

    {"seq":N,"prev_hash":"…","v":2,"payload":{…},"hash":"…"}

and its hash is the hex BLAKE3 of ``hikmah-ledger-v2\\n``, the decimal seq,
``\\n``, the previous hash, ``\\n`` and the payload's exact bytes as they stand
in the line, so any byte injected into a payload changes the hash and new
payload fields never break old hashes.

Version 1 records (no ``"v"``) come from ledgers of the reference
implementation. Their hash covers the compact JSON of ``{"seq", "prev_hash",
"payload"}`` as the reference (Rust, serde_json) re-serialises it: no
whitespace, keys in file order, strings as raw UTF-8 with only ``"``, ``\\``
and control characters escaped (``\\b \\f \\n \\r \\t``, others as lowercase
``\\u00XX``), numbers as written. That is the form the fixtures hash, so this
module rebuilds it from the line instead of hashing the payload bytes.

The acknowledged head (seq, hash) lives in a small file outside LMDB; records
past it, or a head past the last record, are what :func:`verify` reports.
The chain is unkeyed: whoever can rewrite both the ledger and the head can
re-chain undetected; only a head pinned elsewhere (``expect_head``) catches
that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import blake3
import msgspec

from hikmah.model.errors import LedgerError
from hikmah.model.head import Head
from hikmah.model.secrets import preview
from hikmah.model.wire.ledger import Summary, VerifyResult

GENESIS = "GENESIS"
DOMAIN_V2 = b"hikmah-ledger-v2\n"

_HEX64 = re.compile(r"[0-9a-f]{64}")


class Record(msgspec.Struct, frozen=True):
    """One decoded ledger record.

    Attributes:
        seq: Sequence number, from 1.
        prev_hash: Hash of the previous record, ``GENESIS`` before the first.
        version: 1 (reference format) or 2.
        payload: The payload's exact raw JSON bytes as they stand in the line.
        hash: The hash stored in the line (not recomputed).
        line: The whole record line.
    """

    seq: int
    prev_hash: str
    version: int
    payload: bytes
    hash: str
    line: bytes


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    seq: int
    prev_hash: str
    payload: msgspec.Raw
    hash: str
    v: int | None = None


_LINE_DECODER = msgspec.json.Decoder(_Line)


# --- records -------------------------------------------------------------------------


def encode_record(seq: int, prev_hash: str, payload: bytes, *, made: bool = False) -> Record:
    """Build a version-2 record.

    Args:
        seq: Sequence number, from 1.
        prev_hash: The previous record's hash, or ``GENESIS`` for seq 1.
        payload: The payload as compact JSON object bytes.
        made: ``payload`` is the payload encoder's output for a payload the caller
            made (compact UTF-8 JSON by construction) and ``prev_hash`` the last
            record's: neither is checked again (a live write's ledger append).

    Returns:
        The record; ``line`` holds no trailing newline.

    Raises:
        LedgerError: On a bad seq, prev_hash or payload.
    """
    if seq < 1:
        raise LedgerError(f"cannot encode a ledger record with seq {seq}: seq starts at 1")
    if not made:
        _check_parts(seq, prev_hash, payload)
    digest = _hash_v2(seq, prev_hash, payload)
    line = b"".join(
        (
            b'{"seq":',
            str(seq).encode(),
            b',"prev_hash":',
            msgspec.json.encode(prev_hash),
            b',"v":2,"payload":',
            payload,
            b',"hash":"',
            digest.encode(),
            b'"}',
        )
    )
    return Record(seq=seq, prev_hash=prev_hash, version=2, payload=payload, hash=digest, line=line)


def _check_parts(seq: int, prev_hash: str, payload: bytes) -> None:
    """Refuse what would make a record that does not read back as written.

    Raises:
        LedgerError: On a bad prev_hash or payload.
    """
    if prev_hash != GENESIS and not _HEX64.fullmatch(prev_hash):
        raise LedgerError(f"cannot encode seq {seq}: previous hash is not GENESIS or a hex hash")
    # The payload must be exactly what a decoder would slice out of the line,
    # or the hash written here would not be the hash read back.
    if payload != payload.strip() or not payload.startswith(b"{"):
        raise LedgerError(f"cannot encode seq {seq}: the payload must be a bare JSON object")
    try:
        payload.decode("utf-8")
        msgspec.json.decode(payload, type=msgspec.Raw)
    except (UnicodeDecodeError, msgspec.DecodeError) as exc:
        raise LedgerError(f"cannot encode seq {seq}: the payload is not valid JSON") from exc


def decode_record(line: bytes) -> Record:
    """Decode one record line (version 1 or 2).

    Args:
        line: The record's JSON bytes; a trailing newline is tolerated.

    Returns:
        The record, with its hash as stored (call :func:`compute_hash` to check it).

    Raises:
        LedgerError: If the line is not a well-formed record.
    """
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(f"ledger record is not valid UTF-8 (byte {exc.start})") from None
    try:
        raw = _LINE_DECODER.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        # msgspec's messages name a byte offset or a JSON path, never a value.
        raise LedgerError(f"malformed ledger record: {exc}") from None
    if raw.seq < 1:
        raise LedgerError(f"malformed ledger record: seq {raw.seq} is not positive")
    version = 1 if raw.v is None else raw.v
    if version not in (1, 2):
        raise LedgerError(f"ledger record seq {raw.seq} has unsupported version {version}")
    payload = bytes(raw.payload)
    if not payload.startswith(b"{"):
        raise LedgerError(f"ledger record seq {raw.seq} has a payload that is not a JSON object")
    return Record(
        seq=raw.seq,
        prev_hash=raw.prev_hash,
        version=version,
        payload=payload,
        hash=raw.hash,
        line=line,
    )


def compute_hash(record: Record) -> str:
    """Compute the hash a record should carry, from its seq, prev_hash and payload.

    Raises:
        LedgerError: If a version-1 payload cannot be re-serialised.
    """
    if record.version == 2:
        return _hash_v2(record.seq, record.prev_hash, record.payload)
    if record.version == 1:
        return _hash_v1(record.seq, record.prev_hash, record.payload)
    raise LedgerError(f"ledger record seq {record.seq} has unsupported version {record.version}")


def _hash_v2(seq: int, prev_hash: str, payload: bytes) -> str:
    hasher = blake3.blake3(DOMAIN_V2)
    hasher.update(f"{seq}\n{prev_hash}\n".encode())
    hasher.update(payload)
    return hasher.hexdigest()


class _Number(str):
    """A JSON number kept as written: the reference serialises the number it read
    back to the same text, and Python's float formatting would not match it."""

    __slots__ = ()


class _Object(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs in file order."""

    __slots__ = ()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _hash_v1(seq: int, prev_hash: str, payload: bytes) -> str:
    try:
        value = json.loads(
            payload,
            object_pairs_hook=_Object,
            parse_int=_Number,
            parse_float=_Number,
            parse_constant=_reject_constant,
        )
        material = (
            f'{{"seq":{seq},"prev_hash":{_json_str(prev_hash)},'
            f'"payload":{_compact(value)}}}'.encode()
        )
    except (ValueError, UnicodeError) as exc:
        raise LedgerError(f"seq {seq}: the version-1 payload cannot be re-serialised") from exc
    return blake3.blake3(material).hexdigest()


def _json_str(text: str) -> str:
    # ensure_ascii=False escapes exactly what serde_json escapes.
    return json.dumps(text, ensure_ascii=False)


def _compact(value: Any) -> str:
    if isinstance(value, _Object):
        return "{" + ",".join(f"{_json_str(k)}:{_compact(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    if isinstance(value, _Number):
        return str.__str__(value)
    if isinstance(value, str):
        return _json_str(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "null"


# --- summaries -----------------------------------------------------------------------


def _text(value: object) -> str | None:
    return preview(value) if isinstance(value, str) else None


def summarise(record: Record) -> Summary:
    """Summarise a record for a person deciding whether to accept it."""
    try:
        payload = msgspec.json.decode(record.payload)
    except msgspec.DecodeError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return Summary(seq=record.seq, event="unreadable")
    kind = payload["type"]
    if kind == "remember":
        trace = payload.get("trace")
        if not isinstance(trace, dict):
            return Summary(seq=record.seq, event="remember")
        provenance = trace.get("provenance")
        if not isinstance(provenance, dict):
            provenance = {}
        verified = provenance.get("verified")
        key, value = trace.get("claim_key"), trace.get("claim_value")
        claim = f"{key} = {value}" if isinstance(key, str) and isinstance(value, str) else None
        return Summary(
            seq=record.seq,
            event="remember",
            trace_id=_text(trace.get("id")),
            kind=_text(trace.get("kind")),
            source=_text(provenance.get("source")),
            locator=_text(provenance.get("locator")),
            verified=verified if isinstance(verified, bool) else None,
            claim=_text(claim),
            preview=_text(trace.get("content")),
        )
    if kind == "supersede":
        new_id = payload.get("new_id")
        return Summary(
            seq=record.seq,
            event="supersede",
            trace_id=_text(payload.get("old_id")),
            preview=_text(f"superseded by {new_id}") if isinstance(new_id, str) else None,
        )
    if kind == "purge":
        return Summary(
            seq=record.seq,
            event="purge",
            trace_id=_text(payload.get("id")),
            preview=_text(payload.get("reason")),
        )
    if kind == "presence":
        # Turning the passphrase off is what a forged tail would most want accepted.
        action = payload.get("action")
        shown = f"person presence: {action}" if isinstance(action, str) else None
        return Summary(seq=record.seq, event="presence", preview=_text(shown))
    # fulfill, and types this version does not know: the event name and the id are all
    # a person needs to decide.
    return Summary(seq=record.seq, event=preview(kind), trace_id=_text(payload.get("id")))


# --- verification --------------------------------------------------------------------


class _Walk:
    """What one pass over the records found (the chain part of verification)."""

    def __init__(self) -> None:
        self.count = 0
        self.tail: Head | None = None
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.last_key = 0
        self.at: dict[int, Record | None] = {}
        self.unacknowledged: list[Summary] = []


def _link_problem(key: int, record: Record, expected: int, prev_hash: str) -> str | None:
    if key != record.seq:
        return f"the record stored under key {key} says it is seq {record.seq}: records were moved"
    return link_problem(record, expected, prev_hash)


def link_problem(record: Record, expected: int, prev_hash: str) -> str | None:
    """Why ``record`` does not continue a chain at seq ``expected`` after ``prev_hash``
    (a gap, an order, a link or its own hash), or None."""
    seq = record.seq
    if seq > expected:
        return f"records removed: seq {expected} is missing, the next record is seq {seq}"
    if seq < expected:
        return f"records out of order: seq {seq} comes after seq {expected - 1}"
    if record.prev_hash != prev_hash:
        if seq == 1:
            return "seq 1 does not start from GENESIS: the chain's start was rewritten"
        return f"broken link at seq {seq}: its previous hash is not the hash of seq {seq - 1}"
    if compute_hash(record) != record.hash:
        return f"seq {seq} was altered: its stored hash does not match its contents"
    return None


def _walk(
    records: Iterable[tuple[int, bytes]], *, watch: set[int], after: int | None = None
) -> _Walk:
    walk = _Walk()
    expected, prev_hash = 1, GENESIS
    broken_at: int | None = None
    checked = 0
    v1 = 0
    v2_from: int | None = None
    for key, line in records:
        walk.count += 1
        walk.last_key = max(walk.last_key, key)
        record: Record | None
        try:
            record = decode_record(line)
        except LedgerError as exc:
            record = None
            if broken_at is None:
                walk.errors.append(f"the record under key {key} cannot be read: {exc}")
                broken_at = key
        if key in watch:
            walk.at[key] = record
        if after is not None and key > after:
            walk.unacknowledged.append(
                summarise(record) if record else Summary(seq=key, event="unreadable")
            )
        if record is None:
            continue
        if record.version == 1:
            v1 += 1
            if v2_from is not None:
                walk.warnings.append(
                    f"seq {record.seq} is a version-1 record after version-2 records "
                    f"(from seq {v2_from}); only an older reference binary writes that"
                )
        elif v2_from is None:
            v2_from = record.seq
        if broken_at is not None:
            continue
        try:
            problem = _link_problem(key, record, expected, prev_hash)
        except LedgerError as exc:
            problem = str(exc)
        if problem is not None:
            # Everything after a break would only repeat it; say it once.
            walk.errors.append(problem)
            broken_at = key
            continue
        checked += 1
        walk.tail = Head(seq=record.seq, hash=record.hash)
        expected, prev_hash = expected + 1, record.hash
    if broken_at is not None:
        rest = walk.count - checked - 1
        if rest > 0:
            walk.warnings.append(f"{rest} records after the break were not checked")
    if v1:
        walk.warnings.append(
            f"{v1} version-1 records (reference format): they verify, but a version-1 hash "
            "covers a re-serialised payload, not its exact bytes"
        )
    return walk


def _position_errors(walk: _Walk, pinned: Head, what: str) -> str | None:
    """Check that the record at ``pinned.seq`` carries ``pinned.hash``."""
    if pinned.seq == 0:
        return None if pinned.hash == GENESIS else f"{what} is seq 0 but its hash is not GENESIS"
    if pinned.seq > walk.last_key:
        end = f"ends at seq {walk.last_key}" if walk.count else "is empty"
        return f"records removed after {what}: it is at seq {pinned.seq} but the ledger {end}"
    if pinned.seq not in walk.at:
        return f"records removed: the record at {what} (seq {pinned.seq}) is missing"
    record = walk.at[pinned.seq]
    if record is None:
        return f"the record at {what} (seq {pinned.seq}) cannot be read"
    if record.hash != pinned.hash:
        return (
            f"ledger rewritten: record {pinned.seq} has hash {record.hash}, "
            f"but {what} says {pinned.hash}"
        )
    return None


def verify(
    records: Iterable[tuple[int, bytes]],
    head: Head | None,
    *,
    expect_head: Head | None = None,
    head_error: str | None = None,
) -> VerifyResult:
    """Verify the chain and compare it with the acknowledged head.

    Args:
        records: ``(key, line)`` pairs in key order, as the store holds them.
        head: The acknowledged head read from the head file (None if absent).
        expect_head: A head pinned elsewhere; the record at its seq must match it.
        head_error: Why the head file could not be read, if it could not.

    Returns:
        The report; ``ok`` is False when any integrity error was found.
    """
    acknowledged = head if head_error is None else None
    watch = {h.seq for h in (acknowledged, expect_head) if h is not None}
    walk = _walk(
        records,
        watch=watch,
        after=acknowledged.seq if acknowledged is not None else None,
    )
    errors = walk.errors
    if head_error is not None:
        errors.append(
            f"the ledger head is unreadable ({head_error}); a person must inspect it, then "
            "run `hikmah verify-ledger --reset-head` to accept the current ledger"
        )
    elif acknowledged is None:
        if walk.count:
            errors.append(
                f"the ledger head is missing but the ledger has {walk.count} records: "
                "truncation and appended records cannot be detected until a person runs "
                "`hikmah verify-ledger --reset-head`"
            )
    else:
        problem = _position_errors(walk, acknowledged, "the acknowledged head")
        if problem is not None:
            errors.append(problem)
        tail = len(walk.unacknowledged)
        if tail:
            noun = "record" if tail == 1 else "records"
            errors.append(
                f"{tail} unacknowledged {noun} past the head (seq {acknowledged.seq}): written "
                "without a Hikmah write's acknowledgement; writes are refused until a person "
                "inspects them and runs `hikmah verify-ledger --accept-tail`"
            )
    if expect_head is not None:
        problem = _position_errors(walk, expect_head, "the pinned head")
        if problem is not None:
            errors.append(problem)
    return VerifyResult(
        ok=not errors,
        records=walk.count,
        head=walk.tail,
        errors=errors,
        warnings=walk.warnings,
        unacknowledged=walk.unacknowledged,
    )


def chain_tail(records: Iterable[tuple[int, bytes]]) -> Head | None:
    """The last record of the verified chain prefix, as a head (None if none verifies)."""
    return _walk(records, watch=set()).tail
