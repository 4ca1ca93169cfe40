"""A device's manifest: its signed head, and what it has applied of the others.

``devices/<id>/manifest`` is a signed file (:mod:`hikmah.sync.signed`) whose
body says where the device's chain ends (``head``), which segments hold it,
and the device's acknowledgements (``seen``). ``generation`` grows by one on
every publish and is never reused, which is what tells a rolled-back
manifest (an older generation) from a fork (another body with the same
generation). Nothing in it is a time: sync never orders by a clock.
"""

from __future__ import annotations

import itertools
from typing import Final, Literal

import blake3
import msgspec

from hikmah.ledger.chain import GENESIS
from hikmah.model.device_id import is_device_id
from hikmah.model.head import Head
from hikmah.sync.device import DeviceKey, PublicKey, Untrusted
from hikmah.sync.signed import check_signed, decode_signed, signed_file

FORMAT: Final = 1
MANIFEST: Final = "manifest"
MAX_NAME: Final = 64


class Seen(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How far one device has applied another's chain."""

    epoch: int
    seq: int
    generation: int


class Prekey(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An X25519 public key others send data keys to (:mod:`hikmah.sync.envelope`)."""

    id: str
    key: bytes


class Manifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of a manifest (docs/sync.md, "The manifest")."""

    hikmah_manifest: int = FORMAT
    device: str
    key: bytes
    name: str
    epoch: int
    generation: int
    head: Head
    segments: tuple[int, ...] = ()
    seen: dict[str, Seen] = msgspec.field(default_factory=dict)
    vault: bool = False
    prekeys: tuple[Prekey, ...] = ()
    envelopes: dict[str, int] = msgspec.field(default_factory=dict)


class Signed(msgspec.Struct, frozen=True):
    """A manifest whose signature verified under the key it names.

    ``digest`` identifies the exact body bytes: two manifests of one
    generation with different digests are a fork.
    """

    manifest: Manifest
    digest: str


class Accepted(msgspec.Struct, frozen=True):
    """The newest manifest of a device a receiver has accepted (kept durably).

    ``acknowledged`` is the generation the receiver acknowledges (its ``seen``):
    that of the newest accepted manifest that said more than acknowledgements
    (``content`` identifies what it said). A manifest that only acknowledges is
    not acknowledged back, or two devices would publish for ever, each
    acknowledging the other's acknowledgement. 0: kept before this was.
    """

    epoch: int
    generation: int
    seq: int
    digest: str
    content: str = ""
    acknowledged: int = 0


Verdict = Literal["newer", "same", "rolled_back", "fork"]

_DECODER = msgspec.json.Decoder(Manifest)
_ENCODER = msgspec.json.Encoder()


def encode_manifest(key: DeviceKey, manifest: Manifest) -> bytes:
    """The manifest file: ``manifest`` signed by ``key`` (whose device it must describe)."""
    if manifest.device != key.device_id or manifest.key != key.public.raw:
        raise ValueError("a device signs only its own manifest")
    _check_body(manifest, manifest.device)
    return signed_file(key, _ENCODER.encode(manifest))


def decode_manifest(data: bytes, device: str) -> Signed:
    """Check a manifest read from ``devices/<device>/manifest``.

    Checks its shape, that ``device`` derives from the key in it and that the
    key signed it. Whether that key is a paired device's is the caller's
    check (the roster's key for ``device`` must equal ``manifest.key``).

    Raises:
        Untrusted: any of that fails.
    """
    what = f"manifest of {device}"
    manifest, body, signature = decode_signed(data, _DECODER, what)
    public = PublicKey(manifest.key)
    if public.device_id != device or manifest.device != device:
        raise Untrusted(f"{what} is signed for another device ({manifest.device})")
    check_signed(public, body, signature, what)
    _check_body(manifest, device)
    return Signed(manifest=manifest, digest=blake3.blake3(body).hexdigest())


def _check_body(manifest: Manifest, device: str) -> None:
    what = f"manifest of {device}"
    if manifest.hikmah_manifest != FORMAT:
        raise Untrusted(f"{what} has format {manifest.hikmah_manifest}; this Hikmah reads {FORMAT}")
    if not valid_name(manifest.name):
        raise Untrusted(f"{what}: a device name is 1 to {MAX_NAME} printable characters")
    if manifest.epoch < 1 or manifest.generation < 1:
        raise Untrusted(f"{what}: epoch and generation start at 1")
    head = manifest.head
    if head.seq < 0 or (head.seq == 0) != (head.hash == GENESIS):
        raise Untrusted(f"{what}: its head is not a position of a chain")
    segments = manifest.segments
    if head.seq == 0:
        if segments:
            raise Untrusted(f"{what}: an empty chain has no segments")
    elif not segments or segments[0] != 1 or segments[-1] > head.seq:
        raise Untrusted(f"{what}: its segments do not cover seq 1 to its head")
    if any(a >= b for a, b in itertools.pairwise(segments)):
        raise Untrusted(f"{what}: its segments are not in ascending order")
    if any(not is_device_id(other) or other == device for other in manifest.seen):
        raise Untrusted(f"{what}: its acknowledgements name a device id that is not one")
    if any(not is_device_id(other) for other in manifest.envelopes):
        raise Untrusted(f"{what}: its envelopes name a device id that is not one")


def valid_name(name: str) -> bool:
    """Whether ``name`` can label a device: 1 to 64 printable characters."""
    return 0 < len(name) <= MAX_NAME and name.isprintable()


def judge(accepted: Accepted | None, signed: Signed) -> Verdict:
    """How a verified manifest relates to the newest one accepted from its device."""
    manifest = signed.manifest
    if accepted is None or manifest.generation > accepted.generation:
        if accepted is not None and (
            manifest.epoch < accepted.epoch
            or (manifest.epoch == accepted.epoch and manifest.head.seq < accepted.seq)
        ):
            # A newer generation that goes back: only the device's own key makes one.
            return "fork"
        return "newer"
    if manifest.generation == accepted.generation:
        return "same" if signed.digest == accepted.digest else "fork"
    return "rolled_back"


def accepted(signed: Signed, before: Accepted | None = None) -> Accepted:
    """What a receiver keeps of a manifest it accepted (``before``: the one it had)."""
    m = signed.manifest
    body = msgspec.structs.replace(m, generation=1, seen={})
    content = blake3.blake3(_ENCODER.encode(body)).hexdigest()
    acknowledged = m.generation
    if before is not None and before.acknowledged and before.content == content:
        acknowledged = before.acknowledged
    return Accepted(
        epoch=m.epoch,
        generation=m.generation,
        seq=m.head.seq,
        digest=signed.digest,
        content=content,
        acknowledged=acknowledged,
    )
