"""What a ledger record of Hikmah says: the typed payloads, and their one codec.

:mod:`hikmah.ledger` chains and checks records as bytes; a record's
``payload`` is one of these, tagged by ``type``. Every state change is one
(or two: a correction is a remember and a supersede), and the derived
indexes are a function of them (:func:`hikmah.index.apply_payload`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from hikmah.errors import LedgerError
from hikmah.ledger import Record
from hikmah.sealing import Sealed
from hikmah.trace import Trace


class PurgePayload(msgspec.Struct, frozen=True, tag_field="type", tag="purge"):
    """A purge tombstone: the trace leaves every index and recall."""

    id: str
    reason: str
    at: int | None = None  # when it was written (epoch ms); None in records before times


class RememberPayload(msgspec.Struct, frozen=True, tag_field="type", tag="remember"):
    trace: Trace
    at: int | None = None  # when it was written (epoch ms); None in records before times


class SupersedePayload(msgspec.Struct, frozen=True, tag_field="type", tag="supersede"):
    old_id: str
    new_id: str
    at: int | None = None  # when it was written (epoch ms); None in records before times


class FulfillPayload(msgspec.Struct, frozen=True, tag_field="type", tag="fulfill"):
    id: str
    by: str | None = None
    at: int | None = None  # when it was written (epoch ms); None in records before times


class FeedbackPayload(msgspec.Struct, frozen=True, tag_field="type", tag="feedback"):
    """A recalled trace the writer acted on led to a good or a bad outcome."""

    id: str
    outcome: Literal["good", "bad"]
    by: str | None = None
    at: int | None = None  # when it was written (epoch ms); None in records before times


class PinPayload(msgspec.Struct, frozen=True, tag_field="type", tag="pin"):
    """Keep a trace at full weight (no decay, no negative feedback), or stop."""

    id: str
    pinned: bool
    by: str | None = None
    at: int | None = None  # when it was written (epoch ms); None in records before times


class RedactedPayload(msgspec.Struct, frozen=True, tag_field="type", tag="redacted"):
    """What compaction leaves of a purged trace's remember record: no text at all."""

    id: str
    kind: str
    created_at: int
    at: int | None = None  # when it was written (epoch ms); None in records before times


class CompactedPayload(msgspec.Struct, frozen=True, tag_field="type", tag="compacted"):
    """The last record of a compacted ledger: the head of the chain it replaced."""

    old_seq: int
    old_hash: str
    redacted: int
    at: int


Payload = (
    RememberPayload
    | Sealed
    | RedactedPayload
    | CompactedPayload
    | SupersedePayload
    | FulfillPayload
    | PurgePayload
    | FeedbackPayload
    | PinPayload
)
PAYLOAD_DECODER = msgspec.json.Decoder(Payload)
PAYLOAD_ENCODER = msgspec.json.Encoder()


def decode_payload(record: Record) -> Payload:
    """The typed payload of one of our own ledger records."""
    try:
        return PAYLOAD_DECODER.decode(record.payload)
    except msgspec.DecodeError as exc:
        raise LedgerError(
            f"record {record.seq} has a payload this version cannot read: {exc}"
        ) from None


def stamped(payload: Payload, now_ms: int) -> Payload:
    """The payload with the time it is written at (the ledger's clock: see :func:`written_at`)."""
    if isinstance(payload, CompactedPayload):
        return payload  # it has its own time
    return msgspec.structs.replace(payload, at=now_ms)


def written_at(payload: Payload) -> int | None:
    """When a record was written, as far as its payload says.

    Records written before payloads carried ``at`` (and a reference
    implementation's) say nothing for a supersede, fulfil, purge, feedback or
    pin; a remember still has its trace's creation time, which is the write's
    time but for an import.
    """
    if isinstance(payload, CompactedPayload):
        return payload.at
    if payload.at is not None:
        return payload.at
    if isinstance(payload, RememberPayload | Sealed):
        return payload.trace.created_at
    if isinstance(payload, RedactedPayload):
        return payload.created_at
    return None
