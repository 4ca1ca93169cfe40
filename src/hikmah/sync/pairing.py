"""Pairing two devices with a one-time code a person carries from one to the other.

``hikmah sync invite`` makes a :class:`PairingCode` (16 random bytes and a
2-byte checksum, in base32) and publishes a signed :class:`Invitation` whose
``proof`` is an HMAC under a key derived from the code; ``hikmah sync join
CODE`` finds the invitation the code opens, so the joiner learns the
inviter's key from the code, not from the folder, and publishes a signed
:class:`JoinRequest` with a proof of its own. The inviter accepts the first
valid request before the invitation expires, once (:func:`accept_join`).

Someone with the folder but not the code sees keys, names, ids and an expiry,
and can delete files; forging either proof needs the code's 128 random bits
(docs/sync.md, "Pairing").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from typing import Final

import blake3
import msgspec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from hikmah.model.device_id import is_device_id
from hikmah.model.display import visible
from hikmah.model.errors import ConflictError, InvalidInput
from hikmah.sync.device import DeviceKey, PublicKey, Untrusted
from hikmah.sync.manifest import MAX_NAME, Prekey, valid_name
from hikmah.sync.signed import check_signed, decode_signed, signed_file

FORMAT: Final = 1
PREFIX: Final = "HKS1"
SECRET_BYTES: Final = 16
DEFAULT_LIFETIME_MS: Final = 60 * 60 * 1000
_CHECK_BYTES = 2
_CHECK_DOMAIN = b"hikmah-sync-code-v1\n"
_KDF_INFO = b"hikmah-sync-pairing-v1"
_INVITE_ID = re.compile(r"[0-9a-f]{16}")
_GROUP = 5


class PairingCode(msgspec.Struct, frozen=True):
    """The secret a person carries from the inviting device to the joining one."""

    secret: bytes

    @classmethod
    def new(cls) -> PairingCode:
        return cls(os.urandom(SECRET_BYTES))

    @property
    def text(self) -> str:
        """``HKS1-`` and the secret with its checksum, base32 in groups of five."""
        raw = self.secret + _checksum(self.secret)
        letters = base64.b32encode(raw).decode("ascii").rstrip("=")
        groups = [letters[i : i + _GROUP] for i in range(0, len(letters), _GROUP)]
        return "-".join([PREFIX, *groups])

    @classmethod
    def parse(cls, text: str) -> PairingCode:
        """The code a person typed: any case, dashes and spaces anywhere.

        Raises:
            InvalidInput: it is not a pairing code, or a character is mistyped.
        """
        letters = re.sub(r"[\s-]+", "", text).upper()
        if not letters.startswith(PREFIX):
            raise InvalidInput(f"a pairing code starts with {PREFIX}-: copy it whole")
        body = letters[len(PREFIX) :]
        try:
            raw = base64.b32decode(body + "=" * (-len(body) % 8))
        except (binascii.Error, ValueError):
            raw = b""
        # The last letter has a spare bit: only the canonical spelling is a code.
        canonical = base64.b32encode(raw).decode("ascii").rstrip("=") == body
        if len(raw) != SECRET_BYTES + _CHECK_BYTES or not canonical:
            raise InvalidInput("this is not a whole pairing code: check it and type it again")
        secret, check = raw[:SECRET_BYTES], raw[SECRET_BYTES:]
        if not hmac.compare_digest(check, _checksum(secret)):
            raise InvalidInput("the pairing code has a typo: check it and type it again")
        return cls(secret)

    def __repr__(self) -> str:
        return "PairingCode(…)"  # never the secret, not even in a traceback


class Invitation(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """``devices/<inviter>/invite-<invite_id>``: an invitation, signed by the inviter.

    Once a device has joined with it, the inviter signs it again naming that device
    (``used_by``) and leaves it until it expires, so that the code typed again says it
    was used instead of finding nothing.
    """

    hikmah_invite: int
    invite_id: str
    inviter: str
    key: bytes
    name: str
    expires_at: int
    proof: bytes
    used_by: str | None = None


class JoinRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``devices/<joiner>/join-<invite_id>``: a request to join, signed by the joiner."""

    hikmah_join: int = FORMAT
    invite_id: str
    inviter: str
    joiner: str
    key: bytes
    name: str
    vault: bool = False
    prekeys: tuple[Prekey, ...] = ()
    proof: bytes


class OpenInvitation(msgspec.Struct, frozen=True, kw_only=True):
    """What the inviter keeps of its invitation (in its store, never in the folder)."""

    invite_id: str
    code: PairingCode
    expires_at: int
    used_by: str | None = None
    # The person's signature of it (hikmah.access.person.grant), made when they ran sync invite
    # with presence on: the record that adds whoever joins carries it.
    grant: bytes | None = None


_ENCODER = msgspec.json.Encoder()
_INVITATION = msgspec.json.Decoder(Invitation)
_JOIN = msgspec.json.Decoder(JoinRequest)


def invite_file(invite_id: str) -> str:
    return f"invite-{invite_id}"


def join_file(invite_id: str) -> str:
    return f"join-{invite_id}"


def invite(
    key: DeviceKey, *, name: str, now_ms: int, lifetime_ms: int = DEFAULT_LIFETIME_MS
) -> tuple[OpenInvitation, bytes]:
    """A new code and invitation: what the inviter keeps, and the invitation file."""
    code = PairingCode.new()
    opened = OpenInvitation(
        invite_id=os.urandom(8).hex(), code=code, expires_at=now_ms + lifetime_ms
    )
    _check_name(name)
    return opened, invitation_file(key, opened, name=name)


def invitation_file(key: DeviceKey, opened: OpenInvitation, *, name: str) -> bytes:
    """The signed invitation file of ``opened``: open, or naming who used it."""
    invitation = Invitation(
        hikmah_invite=FORMAT,
        invite_id=opened.invite_id,
        inviter=key.device_id,
        key=key.public.raw,
        name=name,
        expires_at=opened.expires_at,
        proof=_invite_proof(opened.code, opened.invite_id, key.public.raw, opened.expires_at),
        used_by=opened.used_by,
    )
    return signed_file(key, _ENCODER.encode(invitation))


def open_invitation(code: PairingCode, data: bytes, device: str) -> Invitation:
    """The invitation in ``devices/<device>/invite-…``, if ``code`` is its code.

    Raises:
        Untrusted: it is not a valid invitation of ``device``, or not this code's.
    """
    what = f"invitation of {device}"
    invitation, body, signature = decode_signed(data, _INVITATION, what)
    public = PublicKey(invitation.key)
    if invitation.inviter != device or public.device_id != device:
        raise Untrusted(f"{what} is signed for another device")
    if invitation.hikmah_invite != FORMAT or not _INVITE_ID.fullmatch(invitation.invite_id):
        raise Untrusted(f"{what} is not an invitation this Hikmah reads")
    if invitation.used_by is not None and not is_device_id(invitation.used_by):
        raise Untrusted(f"{what} names a user that is not a device id")
    expected = _invite_proof(code, invitation.invite_id, invitation.key, invitation.expires_at)
    if not hmac.compare_digest(expected, invitation.proof):
        raise Untrusted(f"{what} is not the invitation of this code")
    check_signed(public, body, signature, what)
    return invitation


def join(
    key: DeviceKey,
    code: PairingCode,
    invitation: Invitation,
    *,
    name: str,
    now_ms: int,
    vault: bool = False,
    prekeys: tuple[Prekey, ...] = (),
) -> bytes:
    """The join request file answering ``invitation`` (opened with ``code``).

    Raises:
        ConflictError: another device has joined with it, or it has expired (by this
            device's clock; the inviter checks by its own).
    """
    if invitation.used_by is not None and invitation.used_by != key.device_id:
        raise ConflictError(
            f"this pairing code was already used: device {invitation.used_by} joined with it."
            f" A code pairs one device; run hikmah sync invite on {visible(invitation.name)}"
            " for a new one"
        )
    if now_ms >= invitation.expires_at:
        raise ConflictError("the pairing code has expired: run hikmah sync invite again")
    _check_name(name)
    request = JoinRequest(
        invite_id=invitation.invite_id,
        inviter=invitation.inviter,
        joiner=key.device_id,
        key=key.public.raw,
        name=name,
        vault=vault,
        prekeys=prekeys,
        proof=_join_proof(code, invitation.invite_id, invitation.inviter, key.public.raw),
    )
    return signed_file(key, _ENCODER.encode(request))


def accept_join(
    opened: OpenInvitation, inviter: str, data: bytes, device: str, *, now_ms: int
) -> tuple[JoinRequest, OpenInvitation]:
    """Check the join request in ``devices/<device>/join-…`` against the inviter's invitation.

    Returns:
        The request, and the invitation marked used (keep it durably, with the
        ``device_added`` record, before saying the device is paired).

    Raises:
        Untrusted: the request is not signed by ``device`` or its proof fails.
        ConflictError: the invitation expired, or was used by another device.
    """
    what = f"join request of {device}"
    request, body, signature = decode_signed(data, _JOIN, what)
    public = PublicKey(request.key)
    if request.joiner != device or public.device_id != device:
        raise Untrusted(f"{what} is signed for another device")
    if request.hikmah_join != FORMAT or request.inviter != inviter:
        raise Untrusted(f"{what} does not answer an invitation of this device")
    if request.invite_id != opened.invite_id:
        raise Untrusted(f"{what} answers another invitation")
    expected = _join_proof(opened.code, request.invite_id, inviter, request.key)
    if not hmac.compare_digest(expected, request.proof):
        raise Untrusted(f"{what} was not made with this invitation's code")
    check_signed(public, body, signature, what)
    _check_name(request.name, Untrusted)
    if opened.used_by is not None and opened.used_by != device:
        raise ConflictError(
            f"the invitation was already used by device {opened.used_by}: if that was not"
            " you, remove it with hikmah sync remove"
        )
    if opened.used_by is None and now_ms >= opened.expires_at:
        raise ConflictError("the invitation has expired: run hikmah sync invite again")
    return request, msgspec.structs.replace(opened, used_by=device)


def _check_name(name: str, error: type[Exception] = InvalidInput) -> None:
    if not valid_name(name):
        raise error(f"a device name is 1 to {MAX_NAME} printable characters")


def _checksum(secret: bytes) -> bytes:
    return blake3.blake3(_CHECK_DOMAIN + secret).digest()[:_CHECK_BYTES]


def _proof_key(code: PairingCode) -> bytes:
    kdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KDF_INFO)
    return kdf.derive(code.secret)


def _mac(code: PairingCode, *parts: bytes) -> bytes:
    # Length-prefixed parts: no two different tuples give the same message.
    message = b"".join(len(part).to_bytes(4, "big") + part for part in parts)
    return hmac.digest(_proof_key(code), message, hashlib.sha256)


def _invite_proof(code: PairingCode, invite_id: str, key: bytes, expires_at: int) -> bytes:
    return _mac(code, b"invite", invite_id.encode(), key, str(expires_at).encode())


def _join_proof(code: PairingCode, invite_id: str, inviter: str, key: bytes) -> bytes:
    if not is_device_id(inviter):
        raise Untrusted("an invitation names an inviter that is not a device id")
    return _mac(code, b"join", invite_id.encode(), inviter.encode(), key)
