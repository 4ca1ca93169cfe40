"""The one signed-file format of the sync folder: a body line and its signature line.

The signature covers exactly the body's bytes as stored, so no canonical
form of JSON is ever needed: what is verified is what is read.
"""

from __future__ import annotations

import base64
import binascii
from typing import TypeVar

import msgspec

from hikmah.sync.device import SIGNATURE_BYTES, DeviceKey, PublicKey, Untrusted


def signed_file(key: DeviceKey, body: bytes) -> bytes:
    """``body`` (one line of compact JSON) followed by ``key``'s signature of it."""
    if b"\n" in body:
        raise ValueError("a signed body is one line")
    return body + b"\n" + base64.b64encode(key.sign(body)) + b"\n"


def split_signed(data: bytes, what: str) -> tuple[bytes, bytes]:
    """The body and the signature of a signed file (checked with :func:`check_signed`).

    Raises:
        Untrusted: the file is not a body line and a signature line.
    """
    lines = data.split(b"\n")
    if len(lines) != 3 or lines[2] != b"" or not lines[0]:
        raise Untrusted(f"{what} is not a body line and a signature line")
    try:
        signature = base64.b64decode(lines[1], validate=True)
    except binascii.Error:
        raise Untrusted(f"{what}: the signature is not base64") from None
    if len(signature) != SIGNATURE_BYTES or base64.b64encode(signature) != lines[1]:
        raise Untrusted(f"{what}: the signature is not a canonical Ed25519 signature")
    return lines[0], signature


T = TypeVar("T")


def decode_signed(
    data: bytes, decoder: msgspec.json.Decoder[T], what: str
) -> tuple[T, bytes, bytes]:
    """The typed body of a signed file, its bytes and its signature (not yet checked:
    the body names the key, which the caller must first judge).

    Raises:
        Untrusted: it is not a signed file, or its body does not decode.
    """
    body, signature = split_signed(data, what)
    try:
        value = decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Untrusted(f"{what} is malformed: {exc}") from None
    return value, body, signature


def check_signed(public: PublicKey, body: bytes, signature: bytes, what: str) -> None:
    """Raises :class:`Untrusted` unless ``signature`` is ``public``'s signature of ``body``."""
    if not public.verifies(signature, body):
        raise Untrusted(f"{what}: the signature does not verify under device {public.device_id}")
