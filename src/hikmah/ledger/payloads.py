"""What a ledger record of Hikmah says: the typed payloads, and their one codec.

:mod:`hikmah.ledger.chain` chains and checks records as bytes; a record's
``payload`` is one of these, tagged by ``type``. Every state change is one
(or two: a correction is a remember and a supersede), and the derived
indexes are a function of them (:func:`hikmah.index.derived.apply_payload`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from hikmah.ledger.chain import Record
from hikmah.model.errors import LedgerError
from hikmah.model.trace import Trace
from hikmah.vault.sealing import Sealed


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
    """Keep a trace at full weight (no decay, no negative feedback), or stop.

    ``overrides`` names (``device:seq``) the pins of other devices' chains that
    were in force where this record was written: an unpin removes those and the
    pins before it in its own chain, never a pin it had not seen
    (:mod:`hikmah.sync.merge`).
    """

    id: str
    pinned: bool
    by: str | None = None
    overrides: tuple[str, ...] = ()
    at: int | None = None  # when it was written (epoch ms); None in records before times


class PresencePayload(msgspec.Struct, frozen=True, tag_field="type", tag="presence"):
    """Person presence turned on (``set``), its passphrase changed, or turned off
    (``remove``, or ``reset`` by ``hikmahd --reset-passphrase`` for a forgotten one).

    ``hash`` is the passphrase's Argon2id hash in force from this record on (None:
    presence is off); the passphrase itself is never written. ``key`` is the public
    half of the person key the passphrase unlocks with ``salt`` (:mod:`hikmah.access.person`;
    None in records from before person keys).
    """

    action: Literal["set", "change", "remove", "reset"]
    hash: str | None
    at: int
    key: bytes | None = None
    salt: bytes | None = None


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


class DeviceAddedPayload(msgspec.Struct, frozen=True, tag_field="type", tag="device_added"):
    """A device paired by a person: every device that trusts this chain trusts it too
    (docs/sync.md, "Pairing"). Its id is a fingerprint of ``key``.

    Written when a join request arrives, it carries ``grant``: the person's signature
    of the invitation ``invite`` it answers, made when they ran ``sync invite``
    (:func:`hikmah.access.person.grant`; None before person keys, or written by the joiner).
    """

    device: str
    key: bytes
    name: str
    at: int | None = None  # when it was written (epoch ms)
    invite: str | None = None
    grant: bytes | None = None


class DeviceRemovedPayload(msgspec.Struct, frozen=True, tag_field="type", tag="device_removed"):
    """A device removed by a person: its records up to ``seq`` (the position of its
    chain applied where this was written) count, none after (the lowest cutoff wins)."""

    device: str
    epoch: int
    seq: int
    hash: str
    at: int | None = None  # when it was written (epoch ms)


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
    | PresencePayload
    | DeviceAddedPayload
    | DeviceRemovedPayload
)
# What a remember record holds: a trace, a sealed one, or what compaction left of it.
Remembering = RememberPayload | Sealed | RedactedPayload
# Payloads that state something about one trace, named by ``id`` (``old_id``: supersede).
TracePayload = SupersedePayload | FulfillPayload | PurgePayload | FeedbackPayload | PinPayload
PAYLOAD_DECODER = msgspec.json.Decoder(Payload)
PAYLOAD_ENCODER = msgspec.json.Encoder()


def decode_payload(record: Record) -> Payload:
    """The typed payload of a ledger record (our own, or a paired device's).

    Raises:
        LedgerError: it is not a payload this version knows (a newer version
            wrote it: upgrade), or it is malformed.
    """
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
