"""The vault's cryptography: sealing a trace's text, wrapping its key, blind index terms.

Pure functions over bytes (``cryptography`` does the primitives); no keyring,
no files. The daemon's ``hikmahd.keys`` fetches the long-lived keys from the
OS keyring and the store keeps what this module produces.

**Envelope encryption.** Every trace gets its own *data key* (32 random
bytes). The writer-controlled text (content, tags, claim key and value,
locator) is sealed with AES-256-GCM under that key; the data key is then
*wrapped* under the *master key* (AES key wrap, RFC 3394, 40 bytes out) and
stored next to the trace with :func:`key_id` of the master that wrapped it.
Destroying one wrapped data key makes that trace's text unrecoverable without
touching any other (purge by key destruction); rotating the master re-wraps
40-byte keys (:func:`rewrap`) and never re-encrypts a payload.

**Sealed bytes** (version 1)::

    0x01 | nonce (12 random bytes) | ciphertext | GCM tag (16 bytes)

The version byte and the caller's ``aad`` are authenticated with the
ciphertext. For a trace field (:func:`seal_fields`) the aad is
``b"hikmah-vault-field-v1\\0" + trace id + b"\\0" + field name``, so a
ciphertext copied to another trace or another field fails to open, exactly
as a wrong key or a flipped bit does (:class:`DecryptionFailed`; GCM cannot
tell these apart and neither can we). A field is stored as the unpadded
URL-safe base64 of its sealed bytes, and only the canonical spelling opens.

**Why random 96-bit nonces are safe here.** GCM breaks if a (key, nonce)
pair repeats. With random nonces NIST SP 800-38D allows 2^32 messages per
key for a collision chance under 2^-32. A data key seals at most five
fields, once, when its trace is written (traces are immutable), so the
chance is about 5^2 / 2^97: nothing. Never use a data key for another trace.

**Key wrap** is deterministic and needs no nonce: it is a deterministic
authenticated encryption meant for wrapping random keys (an unwrap under the
wrong master fails its integrity check). Equal data keys would wrap to equal
bytes, but data keys are random and never shared.

**The index key is not derived from the master.** Recall needs an inverted
index keyed by terms; under the vault a term is replaced by :func:`blind`,
an HMAC-SHA256 under the *index key*, truncated to 16 bytes. Deriving the
index key from the master (HKDF) would tie every posting to the master: a
rotation would have to rebuild the whole index, and a crash mid-rotation
would leave an index keyed half one way and half the other. So the index key
is a separate random 32-byte secret kept in the keyring next to the master,
created with it and never rotated with it (:func:`key_id` of it lets the
store notice a keyring whose index key was replaced, which would otherwise
make every lookup miss silently). Rotating the index key means rebuilding
the index, a separate operation.

**What is protected and what is not.** Protected (confidential and bound to
trace and field): content, tags, claim key, claim value and locator.
In plaintext by design, because the kernel sorts, filters and schedules by
them: trace ids, kind, times (created, deadline), scores (salience,
confidence, authority), privacy, scope, source, the verified flag, supersede
and fulfil links, and which optional fields are present. Ciphertext lengths
reveal plaintext lengths. Blind terms hide the terms but not their equality:
a reader of the index learns that two traces share a (hidden) term and how
often each hidden term occurs, which frequency analysis can exploit.
GCM is not key-committing, so integrity against someone who can rewrite the
data directory rests on the ledger's hash chain (which covers ciphertexts and
key ids), not on the cipher alone. Error messages from this module never
contain key material or plaintext.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from typing import Final, NewType

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.keywrap import InvalidUnwrap, aes_key_unwrap, aes_key_wrap

from hikmah.model.errors import HikmahError

MasterKey = NewType("MasterKey", bytes)
DataKey = NewType("DataKey", bytes)
IndexKey = NewType("IndexKey", bytes)

KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
TAG_BYTES: Final = 16
WRAPPED_BYTES: Final = KEY_BYTES + 8
BLIND_BYTES: Final = 16
KEY_ID_HEX: Final = 16
SEALED_V1: Final = 1
SEALED_OVERHEAD: Final = 1 + NONCE_BYTES + TAG_BYTES

SEALED_FIELDS: Final = ("content", "tags", "claim_key", "claim_value", "locator")

_KEY_ID_LABEL = b"hikmah key id"
_FIELD_AAD_DOMAIN = b"hikmah-vault-field-v1\x00"
_TAGS = msgspec.json.Decoder(tuple[str, ...])


class VaultError(HikmahError):
    """The vault cannot work as configured (a bad key, no usable keyring backend).

    Base of every vault error; the message says what to do and never carries
    a key or plaintext.
    """

    reason = "policy"


class VaultLocked(VaultError):
    """A key the vault needs is not available: the keyring is unreachable or locked,
    or it holds no master with the key id a wrapped key names."""

    reason = "policy"


class KeyDestroyed(VaultError):
    """The trace's data key was destroyed (purged); its text is gone for good."""

    reason = "not_found"


class DecryptionFailed(VaultError):
    """Sealed or wrapped bytes do not open: wrong key, altered bytes, or bytes moved
    from another trace or field."""

    reason = "ledger"


class PlainFields(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A trace's writer-controlled text, the part the vault seals."""

    content: str
    tags: tuple[str, ...] = ()
    claim_key: str | None = None
    claim_value: str | None = None
    locator: str | None = None


class SealedFields(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """The sealed form of :class:`PlainFields`, as the store and the ledger keep it.

    Each value is the unpadded URL-safe base64 of one sealed message whose aad
    names the trace and the field. Content and tags are always sealed (an
    empty tag list too, so the number of tags is hidden); an absent optional
    field stays ``None``. Fields encode in a fixed order, so the same sealed
    values always encode to the same bytes for the ledger's hash.
    """

    content: str
    tags: str
    claim_key: str | None = None
    claim_value: str | None = None
    locator: str | None = None


def new_data_key() -> DataKey:
    """A fresh random data key for one trace."""
    return DataKey(os.urandom(KEY_BYTES))


def new_master_key() -> MasterKey:
    """A fresh random master key (the keyring keeps it)."""
    return MasterKey(os.urandom(KEY_BYTES))


def new_index_key() -> IndexKey:
    """A fresh random index key for blind terms (the keyring keeps it)."""
    return IndexKey(os.urandom(KEY_BYTES))


def seal(data_key: DataKey, plaintext: bytes, *, aad: bytes) -> bytes:
    """Encrypt and authenticate ``plaintext`` with AES-256-GCM under ``data_key``.

    Args:
        data_key: 32 bytes.
        plaintext: any bytes, empty included.
        aad: authenticated, not encrypted, not stored: :func:`open_sealed`
            needs the same bytes.

    Returns:
        Version byte, 12-byte random nonce, ciphertext and 16-byte tag
        (``len(plaintext) + SEALED_OVERHEAD`` bytes).

    Raises:
        VaultError: the key is not 32 bytes.
    """
    _check_key(data_key, "a data key")
    return _seal(AESGCM(data_key), plaintext, aad)


def open_sealed(data_key: DataKey, sealed: bytes, *, aad: bytes) -> bytes:
    """The plaintext of :func:`seal`'s output.

    Raises:
        DecryptionFailed: wrong key, any altered byte, a different ``aad``, a
            truncated message or an unknown version.
        VaultError: the key is not 32 bytes.
    """
    _check_key(data_key, "a data key")
    return _open(AESGCM(data_key), sealed, aad)


def _seal(aead: AESGCM, plaintext: bytes, aad: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    header = bytes((SEALED_V1,))
    return header + nonce + aead.encrypt(nonce, plaintext, header + aad)


def _open(aead: AESGCM, sealed: bytes, aad: bytes) -> bytes:
    if len(sealed) < SEALED_OVERHEAD:
        raise DecryptionFailed(
            f"sealed bytes are too short ({len(sealed)} < {SEALED_OVERHEAD}): truncated or not "
            "vault data"
        )
    if sealed[0] != SEALED_V1:
        raise DecryptionFailed(
            f"sealed bytes have unknown format version {sealed[0]}: altered, or written by a "
            "newer Hikmah"
        )
    nonce = sealed[1 : 1 + NONCE_BYTES]
    try:
        return aead.decrypt(nonce, sealed[1 + NONCE_BYTES :], sealed[:1] + aad)
    except InvalidTag:
        raise DecryptionFailed(
            "sealed bytes do not open under this data key: the key is wrong, the bytes were "
            "altered, or they belong to another trace or field"
        ) from None


def wrap(master: MasterKey, data_key: DataKey) -> bytes:
    """``data_key`` wrapped under ``master`` (AES key wrap, RFC 3394): 40 bytes.

    Store :func:`key_id` of ``master`` next to it, so that rotation and
    recovery can tell which master wrapped which key.
    """
    _check_key(master, "a master key")
    _check_key(data_key, "a data key")
    return aes_key_wrap(master, data_key)


def unwrap(master: MasterKey, wrapped: bytes) -> DataKey:
    """The data key inside ``wrapped``.

    Raises:
        DecryptionFailed: ``wrapped`` was not wrapped under ``master`` or was
            altered.
        VaultError: the master is not 32 bytes.
    """
    _check_key(master, "a master key")
    if len(wrapped) != WRAPPED_BYTES:
        raise DecryptionFailed(
            f"a wrapped data key must be {WRAPPED_BYTES} bytes, got {len(wrapped)}"
        )
    try:
        return DataKey(aes_key_unwrap(master, wrapped))
    except InvalidUnwrap:
        raise DecryptionFailed(
            f"a wrapped data key does not unwrap under master key {key_id(master)}: it was "
            "wrapped under another master or altered"
        ) from None


def rewrap(old_master: MasterKey, new_master: MasterKey, wrapped: bytes) -> bytes:
    """``wrapped`` (under ``old_master``) wrapped again under ``new_master``.

    Rotation re-wraps every stored key whose key id is the old master's and
    stores the result with the new key id; the sealed payloads do not change.

    Raises:
        DecryptionFailed: ``wrapped`` is not under ``old_master`` (check the
            stored key id first: a key already re-wrapped is under the new one).
    """
    return wrap(new_master, unwrap(old_master, wrapped))


def key_id(key: MasterKey | IndexKey) -> str:
    """A short public fingerprint of a long-lived key: 16 hex digits.

    The first 8 bytes of HMAC-SHA256(key, ``b"hikmah key id"``): stable for a
    key, different across keys, and revealing nothing about the key.
    """
    _check_key(key, "a key")
    return hmac.digest(key, _KEY_ID_LABEL, hashlib.sha256)[: KEY_ID_HEX // 2].hex()


def blind(index_key: IndexKey, term: str, *, domain: str = "term") -> str:
    """The blind index entry of ``term``: 32 hex digits.

    HMAC-SHA256 under the index key of ``domain``, a NUL and the UTF-8 term,
    truncated to 16 bytes. The term is used exactly as given (normalise it
    with the tokenizer first). ``domain`` separates indexes (terms, tags,
    claim keys), so equal strings in two indexes get unrelated entries.

    Raises:
        VaultError: the key is not 32 bytes, or ``domain`` is empty or holds a NUL.
    """
    _check_key(index_key, "an index key")
    if not domain or "\x00" in domain:
        raise VaultError("a blind index domain must be a non-empty string without NUL")
    message = domain.encode() + b"\x00" + term.encode("utf-8")
    return hmac.digest(index_key, message, hashlib.sha256)[:BLIND_BYTES].hex()


def seal_fields(data_key: DataKey, trace_id: str, fields: PlainFields) -> SealedFields:
    """Seal a trace's text, each field bound to ``trace_id`` and its own name.

    Tags are sealed together as one JSON array.

    Raises:
        VaultError: the key is not 32 bytes, or the trace id holds a NUL.
    """
    _check_key(data_key, "a data key")
    aead = AESGCM(data_key)

    def one(field: str, plaintext: bytes) -> str:
        return _b64(_seal(aead, plaintext, _field_aad(trace_id, field)))

    def maybe(field: str, value: str | None) -> str | None:
        return None if value is None else one(field, _utf8(value))

    return SealedFields(
        content=one("content", _utf8(fields.content)),
        tags=one("tags", msgspec.json.encode(fields.tags)),
        claim_key=maybe("claim_key", fields.claim_key),
        claim_value=maybe("claim_value", fields.claim_value),
        locator=maybe("locator", fields.locator),
    )


def open_fields(data_key: DataKey, trace_id: str, sealed: SealedFields) -> PlainFields:
    """The text :func:`seal_fields` sealed for ``trace_id``.

    Raises:
        DecryptionFailed: a field does not open (wrong key, altered, or moved
            from another trace or field); the message names the trace and field.
    """
    _check_key(data_key, "a data key")
    aead = AESGCM(data_key)

    def one(field: str, text: str) -> bytes:
        try:
            return _open(aead, _unb64(text), _field_aad(trace_id, field))
        except DecryptionFailed as exc:
            raise DecryptionFailed(f"trace {trace_id}, sealed field {field!r}: {exc}") from None

    def maybe(field: str, text: str | None) -> str | None:
        return None if text is None else _text(trace_id, field, one(field, text))

    content = _text(trace_id, "content", one("content", sealed.content))
    raw_tags = one("tags", sealed.tags)
    try:
        tags = _TAGS.decode(raw_tags)
    except msgspec.DecodeError:
        # Only a writer holding the data key can produce this.
        raise DecryptionFailed(
            f"trace {trace_id}, sealed field 'tags': opened, but is not a list of strings"
        ) from None
    return PlainFields(
        content=content,
        tags=tags,
        claim_key=maybe("claim_key", sealed.claim_key),
        claim_value=maybe("claim_value", sealed.claim_value),
        locator=maybe("locator", sealed.locator),
    )


def _check_key(key: bytes, what: str) -> None:
    if len(key) != KEY_BYTES:
        raise VaultError(f"{what} must be {KEY_BYTES} bytes, got {len(key)}")


def _field_aad(trace_id: str, field: str) -> bytes:
    if "\x00" in trace_id:
        raise VaultError("a trace id must not contain NUL")
    return _FIELD_AAD_DOMAIN + trace_id.encode() + b"\x00" + field.encode()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8")


def _text(trace_id: str, field: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DecryptionFailed(
            f"trace {trace_id}, sealed field {field!r}: opened, but is not UTF-8 text"
        ) from None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    # Only the canonical spelling is accepted: the decoder alone would skip
    # foreign characters, take "+" for "-" and ignore a last digit's spare
    # bits, so two different stored strings could open to the same text.
    try:
        data = text.encode("ascii")
        decoded = base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))
    except (UnicodeEncodeError, binascii.Error, ValueError):
        decoded = None
    if decoded is None or _b64(decoded) != text:
        raise DecryptionFailed("a sealed field is not canonical unpadded URL-safe base64")
    return decoded
