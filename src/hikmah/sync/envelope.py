"""Data keys sent from one device to another, readable only until the recipient moves on.

With the vault on, a trace's text is sealed under its own data key
(:mod:`hikmah.vault.crypto`). A recipient gets the data keys of the traces it
receives in an envelope: X25519 between a fresh ephemeral key and one of the
recipient's *prekeys* (short-lived keys it publishes in its manifest),
HKDF-SHA256, then AES-256-GCM (:func:`hikmah.vault.crypto.seal`), signed by the
sender's device key. The recipient keeps each data key wrapped under its own
master, then destroys the prekey's private half once no sender uses it: from
then on nothing opens the envelope, wherever an engine keeps a copy of it.
Neither device keys (they only sign) nor masters (they never leave a
device) can open an envelope.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple

import blake3
import msgspec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from hikmah.sync.device import DeviceKey, PublicKey, Untrusted
from hikmah.sync.manifest import Prekey
from hikmah.sync.signed import check_signed, decode_signed, signed_file
from hikmah.vault.crypto import KEY_BYTES, DataKey, DecryptionFailed, open_sealed, seal

FORMAT: Final = 1
_KDF_INFO = b"hikmah-sync-envelope-v1"
_PREKEY_ID_DOMAIN = b"hikmah-sync-prekey-v1\n"


class PrekeyPair:
    """A prekey's private half (the recipient's keyring holds it until it is retired)."""

    def __init__(self, private: X25519PrivateKey) -> None:
        self._private = private
        raw = private.public_key().public_bytes_raw()
        self.public = Prekey(id=blake3.blake3(_PREKEY_ID_DOMAIN + raw).hexdigest()[:16], key=raw)

    @classmethod
    def generate(cls) -> PrekeyPair:
        return cls(X25519PrivateKey.generate())

    @classmethod
    def from_bytes(cls, raw: bytes) -> PrekeyPair:
        return cls(X25519PrivateKey.from_private_bytes(raw))

    def to_bytes(self) -> bytes:
        return self._private.private_bytes_raw()

    def exchange(self, ephemeral: bytes) -> bytes:
        return self._private.exchange(X25519PublicKey.from_public_bytes(ephemeral))

    def __repr__(self) -> str:
        return f"PrekeyPair({self.public.id})"


class Envelope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    hikmah_keys: int = FORMAT
    sender: str
    recipient: str
    prekey: str
    ephemeral: bytes
    sealed: bytes


class _Entry(msgspec.Struct, frozen=True, array_like=True):
    trace_id: str
    data_key: bytes


_ENCODER = msgspec.json.Encoder()
_ENVELOPE = msgspec.json.Decoder(Envelope)
_ENTRIES = msgspec.json.Decoder(list[_Entry])


def envelope_file(recipient: str, prekey: str, first: int, last: int) -> str:
    """Where inside the sender's directory the envelope for records first..last goes."""
    return f"keys/{recipient}/{prekey}/{first:012d}-{last:012d}.keys"


class EnvelopeName(NamedTuple):
    recipient: str
    prekey: str
    first: int
    last: int


_NAME = re.compile(r"keys/(hd[a-z2-7]{26})/([0-9a-f]{16})/([0-9]{12})-([0-9]{12})\.keys")


def parse_envelope_file(name: str) -> EnvelopeName | None:
    """What an envelope's path inside its sender's directory says (None: not one)."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    return EnvelopeName(match[1], match[2], int(match[3]), int(match[4]))


def seal_keys(
    sender: DeviceKey, recipient: str, prekey: Prekey, keys: Mapping[str, bytes]
) -> bytes:
    """An envelope file giving ``recipient`` the data keys ``keys`` (trace id → key)."""
    ephemeral = X25519PrivateKey.generate()
    eph_raw = ephemeral.public_key().public_bytes_raw()
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(prekey.key))
    header = Envelope(
        sender=sender.device_id,
        recipient=recipient,
        prekey=prekey.id,
        ephemeral=eph_raw,
        sealed=b"",
    )
    entries = [_Entry(trace_id, key) for trace_id, key in sorted(keys.items())]
    plaintext = _ENCODER.encode(entries)
    box = seal(_derive(shared, header, prekey.key), plaintext, aad=_aad(header))
    envelope = msgspec.structs.replace(header, sealed=box)
    return signed_file(sender, _ENCODER.encode(envelope))


def open_keys(
    data: bytes, *, sender: PublicKey, recipient: str, prekeys: Mapping[str, PrekeyPair]
) -> dict[str, DataKey]:
    """The data keys in an envelope from ``sender`` to ``recipient``.

    Args:
        prekeys: the recipient's prekeys still held, by id.

    Raises:
        Untrusted: not a valid envelope from ``sender`` to ``recipient``, or it
            does not open.
        KeyError: it is addressed to a prekey no longer held (the id is the key).
    """
    what = f"key envelope from {sender.device_id}"
    envelope, body, signature = decode_signed(data, _ENVELOPE, what)
    check_signed(sender, body, signature, what)
    if envelope.sender != sender.device_id or envelope.recipient != recipient:
        raise Untrusted(f"{what} is addressed from or to another device")
    pair = prekeys[envelope.prekey]
    header = msgspec.structs.replace(envelope, sealed=b"")
    try:
        shared = pair.exchange(envelope.ephemeral)
        key = _derive(shared, header, pair.public.key)
        entries = _ENTRIES.decode(open_sealed(key, envelope.sealed, aad=_aad(header)))
    except (ValueError, DecryptionFailed, msgspec.DecodeError, msgspec.ValidationError):
        raise Untrusted(f"{what} does not open under prekey {envelope.prekey}") from None
    if any(len(entry.data_key) != KEY_BYTES for entry in entries):
        raise Untrusted(f"{what} holds a data key that is not {KEY_BYTES} bytes")
    return {entry.trace_id: DataKey(entry.data_key) for entry in entries}


def _aad(header: Envelope) -> bytes:
    return _ENCODER.encode(header)


def _derive(shared: bytes, header: Envelope, prekey: bytes) -> DataKey:
    kdf = HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_BYTES,
        salt=header.ephemeral + prekey,
        info=_KDF_INFO + b"\0" + header.sender.encode() + b"\0" + header.recipient.encode(),
    )
    return DataKey(kdf.derive(shared))
