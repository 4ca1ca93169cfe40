"""A device's identity: its Ed25519 signing key and the id derived from its public key.

The id is a fingerprint of the public key, so a device directory in the sync
folder cannot be claimed by another key: whoever checks a manifest checks that
the id it names derives from the key that signed it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Final

import blake3
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from hikmah.model.errors import LedgerError

KEY_BYTES: Final = 32
SIGNATURE_BYTES: Final = 64
ID_PREFIX: Final = "hd"
_ID_DOMAIN = b"hikmah-sync-device-v1\n"
_ID_DIGEST_BYTES = 16


class Untrusted(LedgerError):
    """Bytes read from the sync folder do not verify; they are refused, never applied.

    The message names the file or record and what is wrong, for ``sync status``.
    """


def device_id(public_key: bytes) -> str:
    """The id of the device whose Ed25519 public key is ``public_key``: ``hd`` and 26
    base32 letters of a BLAKE3 fingerprint (128 bits)."""
    digest = blake3.blake3(_ID_DOMAIN + public_key).digest()[:_ID_DIGEST_BYTES]
    return ID_PREFIX + base64.b32encode(digest).decode("ascii").rstrip("=").lower()


@dataclass(frozen=True)
class PublicKey:
    """A device's public signing key, as the manifest and the roster carry it."""

    raw: bytes

    def __post_init__(self) -> None:
        if len(self.raw) != KEY_BYTES:
            raise Untrusted(f"a device key is {KEY_BYTES} bytes, this one {len(self.raw)}")

    @property
    def device_id(self) -> str:
        return device_id(self.raw)

    def verifies(self, signature: bytes, data: bytes) -> bool:
        """Whether ``signature`` is this key's signature of exactly ``data``."""
        if len(signature) != SIGNATURE_BYTES:
            return False
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, data)
        except InvalidSignature:
            return False
        return True


class DeviceKey:
    """A device's private signing key (kept in the keyring or a 0600 file by the daemon)."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        raw = private.public_key().public_bytes_raw()
        self.public = PublicKey(raw)
        self.device_id = self.public.device_id

    @classmethod
    def generate(cls) -> DeviceKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_bytes(cls, raw: bytes) -> DeviceKey:
        """The key whose 32 private bytes are ``raw`` (what :meth:`to_bytes` gave).

        Raises:
            LedgerError: ``raw`` is not 32 bytes.
        """
        if len(raw) != KEY_BYTES:
            raise LedgerError(f"a device's private key is {KEY_BYTES} bytes, got {len(raw)}")
        return cls(Ed25519PrivateKey.from_private_bytes(raw))

    def to_bytes(self) -> bytes:
        return self._private.private_bytes_raw()

    def sign(self, data: bytes) -> bytes:
        return self._private.sign(data)

    def __repr__(self) -> str:
        return f"DeviceKey({self.device_id})"  # never the private bytes
