"""The planner: from what the folder holds and what this device has applied, what to do.

:func:`plan_apply` reads each paired device's manifest and segments and says
which records to apply (each device's in one :class:`Step`, to be committed
in one transaction with its new position) and what is wrong or awaited.
:func:`plan_publish` says which files this device must write so that the
folder holds its chain up to its head, and its manifest.

Both are pure: the folder and the store are read through the callables they
are given, and the caller does every write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import blake3
import msgspec

from hikmah.ledger.chain import Record
from hikmah.model.head import Head
from hikmah.model.wire.sync import Finding
from hikmah.sync.chain import START, Advance, Current, Position, Refused, Waiting, follow
from hikmah.sync.device import DeviceKey, Untrusted
from hikmah.sync.folder import DeviceDir
from hikmah.sync.manifest import (
    MANIFEST,
    Accepted,
    Manifest,
    Prekey,
    Seen,
    accepted,
    decode_manifest,
    encode_manifest,
    judge,
)
from hikmah.sync.segment import SEGMENT_BYTES, cut, encode_segment, segment_name


class Peer(msgspec.Struct, frozen=True, kw_only=True):
    """What this device keeps about a paired device (durably, with what it applied).

    Attributes:
        key: its public signing key, from the pairing or a ``device_added`` record.
        applied: how far its chain is applied here.
        accepted: its newest manifest accepted here.
        upto: it was removed: nothing past this seq is applied.
        halted: why its chain stopped being applied (a fork, a refused
            segment) until a person looks; None while it syncs.
        person: the person key in force in its chain as applied (its presence
            records say it; :mod:`hikmah.access.person`), None while presence is off there.
        invites: the invitations its person's grants have added devices with (each
            is good once).
    """

    key: bytes
    applied: Position = START
    accepted: Accepted | None = None
    upto: int | None = None
    halted: str | None = None
    person: bytes | None = None
    invites: tuple[str, ...] = ()


class Step(msgspec.Struct, frozen=True):
    """Apply ``records`` of ``device``, then it is at ``position`` with ``accepted``."""

    device: str
    records: tuple[Record, ...]
    position: Position
    accepted: Accepted


class ApplyPlan(msgspec.Struct, frozen=True):
    steps: tuple[Step, ...]
    findings: tuple[Finding, ...]


def plan_apply(
    me: str,
    peers: Mapping[str, Peer],
    dirs: Mapping[str, DeviceDir],
    read: Callable[[str, str], bytes | None],
    stored: Callable[[str, int], bytes | None],
) -> ApplyPlan:
    """What to apply from the folder.

    Args:
        me: this device's id (its own directory is not applied).
        peers: the paired devices (removed ones too, with ``upto``).
        dirs: the folder's device directories (:func:`hikmah.sync.folder.scan`).
        read: the bytes of a file of a device directory, or None.
        stored: the line this device keeps at a seq of a device's chain, or None.
    """
    steps: list[Step] = []
    findings: list[Finding] = []
    for device in sorted(set(dirs) - {me} - set(peers)):
        what = "asks to join" if dirs[device].joins else "is in the folder"
        findings.append(Finding(device, "unpaired", f"{device} {what} but is not paired here"))
    for device, peer in sorted(peers.items()):
        if device == me:
            continue
        if peer.halted is not None:
            findings.append(Finding(device, "halted", peer.halted))
            continue
        found = dirs.get(device)
        if found is None and peer.upto is not None:
            continue  # removed, and its directory deleted: nothing more will come
        if found is None or not found.manifest:
            findings.append(Finding(device, "waiting", f"no manifest of {device} has arrived"))
            continue
        result = _follow_device(device, peer, found, read, stored)
        if isinstance(result, Step):
            steps.append(result)
        elif result is not None:
            findings.append(result)
    return ApplyPlan(tuple(steps), tuple(findings))


def _follow_device(
    device: str,
    peer: Peer,
    found: DeviceDir,
    read: Callable[[str, str], bytes | None],
    stored: Callable[[str, int], bytes | None],
) -> Step | Finding | None:
    try:
        data = read(device, MANIFEST)
        if data is None:
            return Finding(device, "waiting", f"no manifest of {device} has arrived")
        signed = decode_manifest(data, device)
    except Untrusted as exc:
        return Finding(device, "refused", str(exc))
    if signed.manifest.key != peer.key:
        return Finding(device, "refused", f"the manifest of {device} is signed by another key")
    verdict = judge(peer.accepted, signed)
    if verdict == "rolled_back":
        assert peer.accepted is not None
        why = (
            f"the manifest of {device} went back to generation {signed.manifest.generation}"
            f" (generation {peer.accepted.generation} was seen): waiting for a newer one"
        )
        return Finding(device, "rolled_back", why)
    if verdict == "fork":
        return Finding(
            device, "fork", f"{device} signed two different manifests of one history: a fork"
        )
    manifest = signed.manifest
    epoch = manifest.epoch

    def load(first: int) -> bytes | None:
        try:
            return read(device, segment_name(epoch, first))
        except Untrusted:
            return b""  # not a regular file: read_segment refuses it

    result = follow(manifest, load, peer.applied, lambda seq: stored(device, seq), upto=peer.upto)
    if isinstance(result, Advance):
        return Step(device, result.records, result.position, accepted(signed, peer.accepted))
    if isinstance(result, Current):
        if verdict == "newer":  # a new generation (acknowledgements) with no new records
            return Step(device, (), peer.applied, accepted(signed, peer.accepted))
        return None
    if isinstance(result, Waiting):
        return Finding(device, "waiting", result.why)
    assert isinstance(result, Refused)
    return Finding(device, "fork" if "fork" in result.why else "refused", result.why)


def audit(
    me: str,
    keys: Mapping[str, bytes],
    dirs: Mapping[str, DeviceDir],
    read: Callable[[str, str], bytes | None],
    stored: Callable[[str, int], bytes | None],
) -> tuple[Finding, ...]:
    """Check every published chain in the folder whole, this device's own among them.

    A routine look (:func:`plan_apply`) reads only what is new, so a segment
    altered behind what was applied would go unseen until a new device read
    it; ``verify-ledger`` and ``sync status --verify`` run this instead. A
    finding about this device's own directory means it must publish
    everything again (forget its :class:`Published`).

    Args:
        keys: the signing key of each device to check, this one's included.
        stored: the line this device keeps at a seq of a device's chain (its
            own ledger's for ``me``).
    """
    findings: list[Finding] = []
    for device, key in sorted(keys.items()):
        found = dirs.get(device)
        if found is None or not found.manifest:
            continue
        peer = Peer(key=key)
        result = _follow_device(device, peer, found, read, stored)
        if isinstance(result, Finding) and result.problem != "waiting":
            mine = " (this device: it publishes its chain again)" if device == me else ""
            findings.append(msgspec.structs.replace(result, why=result.why + mine))
    return tuple(findings)


class Published(msgspec.Struct, frozen=True, kw_only=True):
    """What this device last published (kept durably *before* the files are written,
    so a generation is never reused; a crash is repaired by the next publish)."""

    epoch: int
    generation: int
    head: Head
    segments: tuple[int, ...]
    sizes: tuple[int, ...]
    content: str  # digest of the manifest's body without its generation


class Publish(msgspec.Struct, frozen=True):
    """Files to write in order (segments, then the manifest) and to remove, and the
    new :class:`Published` to keep first."""

    writes: tuple[tuple[str, bytes], ...]
    removes: tuple[str, ...]
    published: Published


class Announce(msgspec.Struct, frozen=True, kw_only=True):
    """What the manifest says besides the chain."""

    name: str
    seen: dict[str, Seen] = msgspec.field(default_factory=dict)
    vault: bool = False
    prekeys: tuple[Prekey, ...] = ()
    envelopes: dict[str, int] = msgspec.field(default_factory=dict)


def plan_publish(
    key: DeviceKey,
    *,
    epoch: int,
    head: Head,
    announce: Announce,
    published: Published | None,
    own: DeviceDir | None,
    folder_generation: int,
    records_from: Callable[[int], Iterable[Record]],
    segment_bytes: int = SEGMENT_BYTES,
) -> Publish | None:
    """The files that make the folder hold this device's chain up to ``head``.

    Args:
        key: this device's signing key.
        epoch: its ledger's epoch (1, plus one per compaction).
        head: its acknowledged head (records past it are never published).
        announce: the rest of the manifest.
        published: what it last published (None: never, or its store was replaced).
        own: its own directory as the folder holds it now (None: absent).
        folder_generation: the generation of its own manifest in the folder when
            that verifies under ``key`` (0 otherwise).
        records_from: its ledger records from a seq up to ``head``.

    Returns:
        None when the folder already holds all of it.
    """
    same_epoch = published is not None and published.epoch == epoch
    segments: tuple[int, ...] = published.segments if published and same_epoch else ()
    sizes: tuple[int, ...] = published.sizes if published and same_epoch else ()
    have = (own.segments.get(epoch, {}) if own else {}) if same_epoch else {}
    # The first published segment the folder lacks (or holds another size of), or
    # the tail when the head moved: from there on, segments are (re)written.
    redo = len(segments)
    for index, (first, size) in enumerate(zip(segments, sizes, strict=True)):
        if have.get(first) != size:
            redo = index
            break
    if published is not None and same_epoch and head.seq > published.head.seq and segments:
        redo = min(redo, len(segments) - 1)
    writes: list[tuple[str, bytes]] = []
    if head.seq > 0 and (redo < len(segments) or not segments):
        start = segments[redo] if redo < len(segments) else 1
        segments, sizes = segments[:redo], sizes[:redo]
        for group in cut((r for r in records_from(start) if r.seq <= head.seq), segment_bytes):
            data = encode_segment(key.device_id, epoch, group)
            writes.append((segment_name(epoch, group[0].seq), data))
            segments, sizes = (*segments, group[0].seq), (*sizes, len(data))
    body = Manifest(
        device=key.device_id,
        key=key.public.raw,
        name=announce.name,
        epoch=epoch,
        generation=1,
        head=head,
        segments=segments,
        seen=announce.seen,
        vault=announce.vault,
        prekeys=announce.prekeys,
        envelopes=announce.envelopes,
    )
    content = blake3.blake3(msgspec.json.encode(body)).hexdigest()
    folder_current = (
        published is not None
        and published.generation == folder_generation
        and published.content == content
    )
    if not writes and folder_current:
        return None
    generation = max(published.generation if published else 0, folder_generation) + 1
    manifest = msgspec.structs.replace(body, generation=generation)
    writes.append((MANIFEST, encode_manifest(key, manifest)))
    removes: list[str] = list(own.temporary) if own else []
    if own is not None:
        removes.extend(
            segment_name(old, first)
            for old, firsts in sorted(own.segments.items())
            if old != epoch
            for first in firsts
        )
    new = Published(
        epoch=epoch,
        generation=generation,
        head=head,
        segments=segments,
        sizes=sizes,
        content=content,
    )
    return Publish(tuple(writes), tuple(removes), new)
