"""The person's signature: a key only the passphrase unlocks, on every record that only a
person may make, so that another device can tell the person's records from a copy's.

A device's files are all a copy of the device needs to sign its manifests and publish
as it (docs/security.md, "A copy of a device"). The person key is not in them: it is
derived from the presence passphrase (Argon2id with a salt of its own, never the
salt of the passphrase's stored hash) when the person proves presence, held in the
daemon's memory with the proof, and never written anywhere. Its public half and salt
are in the presence record that set the passphrase
(:class:`~hikmah.ledger.payloads.PresencePayload`).

While presence is on, every person-only record a device writes carries an
*attestation*: the person key's Ed25519 signature of the record's payload. It is the
payload's last member, ``"person":{"key":…,"sig":…}``, and what it signs is exactly
the payload bytes before it, closed with ``}`` (:func:`attest`,
:func:`attestation`): no re-encoding, so a receiver of another version checks the very
bytes that were signed, and a JSON string can never hold the marker unescaped.
Pairing is the one exception: the record that adds the joining device is written by
the inviting daemon when the request arrives, so it carries instead the person's
signature of the invitation, made when the person ran ``sync invite``
(:func:`grant`, :func:`granted`).

Receivers check both (``hikmah.store.receive``): a device whose presence is on, per its own
chain, and whose person-only record is not signed by its person key is halted, and so
is a device whose key changed without the old key's signature (a passphrase reset).
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from typing import Final

import argon2
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from hikmah.ledger.payloads import (
    DeviceAddedPayload,
    DeviceRemovedPayload,
    Payload,
    PresencePayload,
    PurgePayload,
    RememberPayload,
)
from hikmah.vault.sealing import Sealed

SALT_BYTES: Final = 16
_DOMAIN = b"hikmah-person-v1\n"
_PAIR_DOMAIN = b"hikmah-person-pair-v1\n"
# The passphrase hash's own costs (argon2-cffi's defaults, RFC 9106's second
# recommendation: 64 MiB, 3 passes), about 0.1 s here.
_COSTS = argon2.PasswordHasher()
_MARK = b',"person":{"key":"'
# What follows the mark: the key and the signature in standard base64, and the ends of
# the attestation and of the payload.
_TAIL = re.compile(rb'([A-Za-z0-9+/]{43}=)","sig":"([A-Za-z0-9+/]{86}==)"\}\}')


class PersonKey:
    """The person's signing key, derived from the passphrase (in memory only)."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public = private.public_key().public_bytes_raw()

    @classmethod
    def derive(cls, passphrase: str, salt: bytes) -> PersonKey:
        """The key ``passphrase`` unlocks with ``salt`` (slow on purpose: Argon2id)."""
        seed = argon2.low_level.hash_secret_raw(
            passphrase.encode(),
            salt,
            time_cost=_COSTS.time_cost,
            memory_cost=_COSTS.memory_cost,
            parallelism=_COSTS.parallelism,
            hash_len=32,
            type=argon2.low_level.Type.ID,
        )
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    def sign(self, data: bytes) -> bytes:
        return self._private.sign(data)

    def __repr__(self) -> str:
        return "PersonKey(…)"  # never the private bytes


def new_salt() -> bytes:
    return os.urandom(SALT_BYTES)


@dataclass(frozen=True)
class Attestation:
    """A person key's signature found in a payload, and what it signs."""

    key: bytes
    sig: bytes
    signed: bytes

    def by(self, key: bytes) -> bool:
        """Whether it is ``key``'s signature of the payload."""
        return self.key == key and _verifies(key, self.sig, _DOMAIN + self.signed)


def attest(key: PersonKey, payload: bytes) -> bytes:
    """``payload`` (a JSON object's bytes) with ``key``'s attestation as its last member."""
    signature = key.sign(_DOMAIN + payload)
    member = (
        _MARK + base64.b64encode(key.public) + b'","sig":"' + base64.b64encode(signature) + b'"}}'
    )
    return payload[:-1] + member


def attestation(payload: bytes) -> Attestation | None:
    """The attestation ``payload`` ends with, if it has one (its shape, not checked)."""
    at = payload.rfind(_MARK)
    if at < 0:
        return None
    tail = _TAIL.fullmatch(payload, at + len(_MARK))
    if tail is None:
        return None
    key, sig = (base64.b64decode(part) for part in tail.groups())
    return Attestation(key=key, sig=sig, signed=payload[:at] + b"}")


def grant(key: PersonKey, inviter: str, invite_id: str) -> bytes:
    """The person's signature of an invitation: whoever joins with it may be added."""
    return key.sign(_PAIR_DOMAIN + f"{inviter}\n{invite_id}".encode())


def granted(key: bytes, signature: bytes, inviter: str, invite_id: str) -> bool:
    """Whether ``signature`` is ``key``'s grant of that invitation."""
    return _verifies(key, signature, _PAIR_DOMAIN + f"{inviter}\n{invite_id}".encode())


def person_only(payload: Payload) -> bool:
    """Whether only a person may make this record: a verified trace, a purge, a change of
    presence, a change of who is paired."""
    if isinstance(payload, RememberPayload | Sealed):
        return payload.trace.provenance.verified
    return isinstance(
        payload, PurgePayload | PresencePayload | DeviceAddedPayload | DeviceRemovedPayload
    )


def _verifies(key: bytes, signature: bytes, data: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True
