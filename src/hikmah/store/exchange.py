"""One exchange with the sync folder: what to apply and what to publish (docs/sync.md).

The daemon runs these off its event loop, and the store changes only through
its writer, by the operations they return:

- :func:`look` reads the folder and a snapshot of the store: each paired
  device's records to apply (with the data keys its envelopes hold for this
  device, and only as far as they reach), the join requests to accept, this
  device's own published records its ledger lacks (a restored backup), and
  what is wrong or awaited;
- :func:`publication` says which files make the folder hold this device's
  chain up to its acknowledged head, the envelopes of its data keys for each
  paired device with the vault, and its manifest, and which files to remove;
- :func:`write` writes them, each atomically and in order (segments and
  envelopes before the manifest that names them).

Nothing here writes outside this device's own directory in the folder, nor
follows a link out of it (:mod:`hikmah.sync.folder`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import msgspec

from hikmah.index import replicas
from hikmah.index.layout import SEQ
from hikmah.index.replicas import Paired
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import GENESIS, Record, decode_record
from hikmah.model.errors import ConflictError, NotFound
from hikmah.model.head import Head
from hikmah.model.wire.sync import Finding
from hikmah.rules.operations import ApplyRemote, Pair
from hikmah.sync.chain import Advance, Position, Refused, follow
from hikmah.sync.device import DeviceKey, PublicKey, Untrusted
from hikmah.sync.envelope import (
    PrekeyPair,
    envelope_file,
    open_keys,
    parse_envelope_file,
    seal_keys,
)
from hikmah.sync.folder import DeviceDir, read_file, scan, write_own
from hikmah.sync.manifest import MANIFEST, Manifest, Seen, decode_manifest
from hikmah.sync.pairing import (
    Invitation,
    OpenInvitation,
    PairingCode,
    accept_join,
    invitation_file,
    invite_file,
    join_file,
    open_invitation,
)
from hikmah.sync.plan import Announce, Publish, Step, plan_apply, plan_publish
from hikmah.sync.segment import segment_name
from hikmah.vault.sealing import data_key_of

# Data keys per envelope file: a welcome envelope of a large vault is cut into several,
# each well under the folder reader's size limit.
KEYS_PER_ENVELOPE = 20_000
_SEALED = b'{"type":"sealed"'  # how a sealed remember's payload starts (the tag comes first)


class Identity(NamedTuple):
    """This device as it syncs: its signing key, its name, and its prekeys (vault on),
    oldest first; senders use the newest."""

    key: DeviceKey
    name: str
    prekeys: tuple[PrekeyPair, ...] = ()


class Look(msgspec.Struct, frozen=True, kw_only=True):
    """What one look at the folder found.

    Attributes:
        steps: the records to apply, one operation per device.
        pairs: join requests accepted: the device to pair, and the invitation
            as it is to be kept once it is (used).
        take_back: this device's own published records past its ledger.
        ahead: its own published head, when its ledger is behind it.
        findings: what is wrong or awaited (``sync status``).
        manifests: the verified manifests of paired devices.
        own: this device's own manifest in the folder, when it verifies.
        opened: the prekeys envelopes were opened with in this look.
    """

    steps: tuple[ApplyRemote, ...] = ()
    pairs: tuple[tuple[Pair, OpenInvitation], ...] = ()
    take_back: tuple[Record, ...] = ()
    ahead: Head | None = None
    findings: tuple[Finding, ...] = ()
    manifests: dict[str, Manifest] = msgspec.field(default_factory=dict)
    own: Manifest | None = None
    opened: frozenset[str] = frozenset()


class _Reading(NamedTuple):
    """What one look or publication reads: the store's snapshot, the folder, this device."""

    snapshot: Snapshot
    folder: Path
    identity: Identity
    dirs: dict[str, DeviceDir]
    paired: dict[str, Paired]

    @classmethod
    def of(cls, snapshot: Snapshot, folder: Path, identity: Identity) -> _Reading:
        return cls(snapshot, folder, identity, scan(folder), replicas.peers(snapshot))

    @property
    def me(self) -> str:
        return self.identity.key.device_id

    def read(self, device: str, name: str) -> bytes | None:
        return read_file(self.folder, device, name)


def look(
    snapshot: Snapshot, folder: Path, identity: Identity, head: Head | None, now_ms: int
) -> Look:
    """Read the folder against the store as ``snapshot`` sees it (``head``: its
    acknowledged head)."""
    reading = _Reading.of(snapshot, folder, identity)
    paired = reading.paired
    plan = plan_apply(
        reading.me,
        {device: entry.peer for device, entry in paired.items()},
        reading.dirs,
        reading.read,
        lambda device, seq: replicas.stored_line(snapshot, device, seq),
    )
    manifests = {
        device: found
        for device, entry in paired.items()
        if (found := _manifest(folder, device, entry.peer.key)) is not None
    }
    findings = list(plan.findings)
    steps: list[ApplyRemote] = []
    opened: set[str] = set()
    for step in plan.steps:
        operation, used, refused = _with_keys(reading, step, manifests.get(step.device))
        steps.append(operation)
        opened |= used
        findings.extend(refused)
    own = _manifest(folder, reading.me, identity.key.public.raw)
    take_back, ahead, own_findings = _own_chain(snapshot, folder, own, head)
    pairs, join_findings = _joins(reading, now_ms)
    return Look(
        steps=tuple(steps),
        pairs=tuple(pairs),
        take_back=tuple(take_back),
        ahead=ahead,
        findings=(*findings, *own_findings, *join_findings),
        manifests=manifests,
        own=own,
        opened=frozenset(opened),
    )


def _manifest(folder: Path, device: str, key: bytes) -> Manifest | None:
    try:
        data = read_file(folder, device, MANIFEST)
        signed = None if data is None else decode_manifest(data, device)
    except Untrusted:
        return None
    return None if signed is None or signed.manifest.key != key else signed.manifest


def _with_keys(
    reading: _Reading, step: Step, manifest: Manifest | None
) -> tuple[ApplyRemote, set[str], list[Finding]]:
    """The step with the data keys its sealed traces need, cut where they run out.

    With the vault on on both sides, a sealed trace is applied only once the
    sender's envelopes reach it (its manifest says up to which seq), so every
    sealed trace here is indexed with its text. Without the vault here, sealed
    traces are kept as published and indexed without their text.
    """
    if reading.snapshot.dbs.vault is None or manifest is None or not manifest.vault:
        return ApplyRemote(step=step), set(), []
    me, entry, found = reading.me, reading.paired[step.device], reading.dirs.get(step.device)
    reach = manifest.envelopes.get(me, 0)
    applied = entry.peer.applied.seq
    held = {pair.public.id: pair for pair in reading.identity.prekeys}
    keys: dict[str, bytes] = {}
    used: set[str] = set()
    findings: list[Finding] = []
    for name in () if found is None else found.envelopes:
        parsed = parse_envelope_file(name)
        if parsed is None or parsed.recipient != me or parsed.last <= entry.opened:
            continue
        if parsed.prekey not in held:
            continue  # addressed to a prekey retired here: everything under it was opened
        try:
            data = reading.read(step.device, name)
            if data is None:
                continue
            opened = open_keys(data, sender=PublicKey(manifest.key), recipient=me, prekeys=held)
        except (Untrusted, KeyError) as exc:
            findings.append(Finding(step.device, "refused", f"{step.device}/{name}: {exc}"))
            continue
        keys.update(opened)
        used.add(parsed.prekey)
    kept: list[Record] = []
    for record in step.records:
        if record.seq > applied and record.seq > reach and record.payload.startswith(_SEALED):
            findings.append(
                Finding(step.device, "waiting", f"the data keys of {step.device} past seq {reach}")
            )
            break
        kept.append(record)
    if len(kept) < len(step.records):
        last = kept[-1] if kept and kept[-1].seq > applied else None
        position = (
            entry.peer.applied
            if last is None
            else Position(epoch=step.position.epoch, seq=last.seq, hash=last.hash)
        )
        step = Step(step.device, tuple(kept) if last is not None else (), position, step.accepted)
    return ApplyRemote(step=step, keys=keys, opened=reach), used, findings


def own_chain(snapshot: Snapshot, folder: Path, identity: Identity, head: Head | None) -> Look:
    """Only the part of :func:`look` about this device's own published chain (what the
    daemon checks before it takes any write)."""
    own = _manifest(folder, identity.key.device_id, identity.key.public.raw)
    take_back, ahead, findings = _own_chain(snapshot, folder, own, head)
    return Look(take_back=tuple(take_back), ahead=ahead, findings=tuple(findings), own=own)


def _own_chain(
    snapshot: Snapshot, folder: Path, own: Manifest | None, head: Head | None
) -> tuple[list[Record], Head | None, list[Finding]]:
    """This device's published records its ledger lacks (a restored backup, a lost
    store): they verify under its own key and continue its ledger. A published head its
    ledger holds another record at is another writer's: a fork, reported."""
    mine = head or Head(seq=0, hash=GENESIS)
    if own is None:
        return [], None, []
    if (own.epoch, own.head.seq) <= (replicas.epoch(snapshot), mine.seq):
        return [], None, _forked(snapshot, own)
    device = own.device
    at = Position(epoch=own.epoch, seq=mine.seq, hash=mine.hash)
    result = follow(
        own,
        lambda first: read_file(folder, device, segment_name(own.epoch, first)),
        at,
        lambda seq: snapshot.line_at("", seq),
    )
    if isinstance(result, Advance):
        return list(result.records), own.head, []
    why = result.why if isinstance(result, Refused) else "its segments have not all arrived"
    return [], own.head, [
        Finding(device, "refused" if isinstance(result, Refused) else "waiting",
                f"this device published up to seq {own.head.seq}, its ledger ends at"
                f" {mine.seq}: {why}")
    ]  # fmt: skip


def _forked(snapshot: Snapshot, own: Manifest) -> list[Finding]:
    """A fork when this device's ledger holds another record where its published head is
    (the folder's copy of its chain was written by something else with its key)."""
    if own.epoch != replicas.epoch(snapshot) or own.head.seq == 0:
        return []
    line = snapshot.line_at("", own.head.seq)
    if line is None or decode_record(line).hash == own.head.hash:
        return []
    why = (
        f"the folder holds a chain of this device that its ledger does not (seq"
        f" {own.head.seq} differs): something else writes with this device's key, such as"
        " a copy of its data directory. This device publishes its own again; every device"
        " that took the other one halts this one. Stop the other writer, then check what"
        " it wrote: hikmah sync status on the other devices names it"
    )
    return [Finding(own.device, "fork", why)]


def _joins(
    reading: _Reading, now_ms: int
) -> tuple[list[tuple[Pair, OpenInvitation]], list[Finding]]:
    """Join requests in the folder that answer this device's open invitations."""
    pairs: list[tuple[Pair, OpenInvitation]] = []
    findings: list[Finding] = []
    me = reading.me
    for invitation in replicas.invitations(reading.snapshot):
        opened = invitation
        name = join_file(opened.invite_id)
        for device, found in sorted(reading.dirs.items()):
            if device == me or device in reading.paired or name not in found.joins:
                continue
            try:
                data = reading.read(device, name)
                if data is None:
                    continue
                request, used = accept_join(opened, me, data, device, now_ms=now_ms)
            except (Untrusted, ConflictError) as exc:
                findings.append(Finding(device, "refused", str(exc)))
                continue
            pair = Pair(
                device=device,
                key=request.key,
                name=request.name,
                invite=opened.invite_id if opened.grant is not None else None,
                grant=opened.grant,
            )
            pairs.append((pair, used))
            opened = used  # a second request for it is refused: the code is one-time
    return pairs, findings


# -- publishing ---------------------------------------------------------------------------


class Publication(msgspec.Struct, frozen=True, kw_only=True):
    """The files to write (``publish``; None when the folder holds all of it) and the files
    of this device's directory that are no longer needed."""

    publish: Publish | None
    removes: tuple[str, ...] = ()
    # Invitations signed again as used, until they expire (hikmah.sync.pairing.Invitation).
    notices: tuple[tuple[str, bytes], ...] = ()


def publication(
    snapshot: Snapshot,
    folder: Path,
    identity: Identity,
    head: Head | None,
    manifests: Mapping[str, Manifest],
    now_ms: int,
) -> Publication:
    """What to write so that the folder holds this device's chain up to ``head`` (its
    acknowledged head: records past it are never published), with its acknowledgements,
    its prekeys and the envelopes of its data keys."""
    reading = _Reading.of(snapshot, folder, identity)
    own = _manifest(folder, reading.me, identity.key.public.raw)
    top = head or Head(seq=0, hash=GENESIS)
    epoch = replicas.epoch(snapshot)
    if own is not None and (own.epoch, own.head.seq) > (epoch, top.seq):
        # The folder holds more of this chain than the ledger acknowledges (a restored
        # backup): publishing now would go back on it. Its records are taken back first.
        return Publication(publish=None)
    seen = {
        device: Seen(
            epoch=entry.peer.applied.epoch,
            seq=entry.peer.applied.seq,
            generation=entry.peer.accepted.acknowledged or entry.peer.accepted.generation,
        )
        for device, entry in reading.paired.items()
        if entry.peer.accepted is not None and entry.peer.upto is None
    }
    envelopes, sealed = _envelopes(reading, top, manifests, {} if own is None else own.envelopes)
    plan = plan_publish(
        identity.key,
        epoch=epoch,
        head=top,
        announce=Announce(
            name=identity.name,
            seen=seen,
            vault=snapshot.dbs.vault is not None,
            prekeys=tuple(pair.public for pair in identity.prekeys),
            envelopes=envelopes,
        ),
        published=replicas.published(snapshot),
        own=reading.dirs.get(reading.me),
        folder_generation=0 if own is None else own.generation,
        records_from=lambda seq: _records(snapshot, seq, top.seq),
    )
    if plan is not None and sealed:
        writes = (*plan.writes[:-1], *sealed, plan.writes[-1])  # the manifest stays last
        plan = msgspec.structs.replace(plan, writes=writes)
    return Publication(
        publish=plan,
        removes=tuple(_leftovers(reading, manifests, now_ms)),
        notices=tuple(_used_invitations(reading, identity, now_ms)),
    )


def _used_invitations(
    reading: _Reading, identity: Identity, now_ms: int
) -> Iterator[tuple[str, bytes]]:
    """The invitation files to sign again as used: those a device joined with that do
    not say so in the folder yet."""
    for opened in replicas.invitations(reading.snapshot):
        if opened.used_by is None or now_ms >= opened.expires_at:
            continue
        name = invite_file(opened.invite_id)
        data = invitation_file(identity.key, opened, name=identity.name)
        if reading.read(reading.me, name) != data:
            yield name, data


def _records(snapshot: Snapshot, start: int, end: int) -> Iterator[Record]:
    cursor = snapshot.txn.cursor(db=snapshot.dbs.ledger)
    if not cursor.set_range(SEQ.pack(start)):
        return
    for key, line in cursor:
        if int(SEQ.unpack(key)[0]) > end:
            return
        yield decode_record(bytes(line))


def _envelopes(
    reading: _Reading, head: Head, manifests: Mapping[str, Manifest], before: Mapping[str, int]
) -> tuple[dict[str, int], list[tuple[str, bytes]]]:
    """For each paired device with the vault, up to which seq its data keys are sent
    (``before``: as this device's manifest in the folder says), and the envelopes that
    send those not sent yet (to its newest prekey)."""
    snapshot, sender = reading.snapshot, reading.identity.key
    keys = snapshot.dbs.vault
    if keys is None:
        return {}, []
    sent: dict[str, int] = {}
    files: list[tuple[str, bytes]] = []
    for device, entry in sorted(reading.paired.items()):
        manifest = manifests.get(device)
        if entry.peer.upto is not None or manifest is None or not manifest.prekeys:
            continue
        start = before.get(device, 0)
        sent[device] = max(start, head.seq)
        if head.seq <= start:
            continue
        prekey = manifest.prekeys[-1]
        batch: dict[str, bytes] = {}
        first = start + 1
        for record in _records(snapshot, start + 1, head.seq):
            if record.payload.startswith(_SEALED):
                trace_id = msgspec.json.decode(record.payload, type=_Sealed).trace.id
                entry_ = snapshot.txn.get(trace_id.encode(), db=snapshot.dbs.keys)
                if entry_ is not None:  # a purged trace's key is gone, and is never sent
                    batch[trace_id] = data_key_of(keys, trace_id, bytes(entry_))
            if len(batch) >= KEYS_PER_ENVELOPE:
                name = envelope_file(device, prekey.id, first, record.seq)
                files.append((name, seal_keys(sender, device, prekey, batch)))
                batch, first = {}, record.seq + 1
        if batch:
            name = envelope_file(device, prekey.id, first, head.seq)
            files.append((name, seal_keys(sender, device, prekey, batch)))
    return sent, files


class _Id(msgspec.Struct):
    id: str


class _Sealed(msgspec.Struct):
    trace: _Id


def _leftovers(reading: _Reading, manifests: Mapping[str, Manifest], now_ms: int) -> Iterator[str]:
    """Files of this device's directory nothing needs any more: envelopes to prekeys their
    recipient no longer announces, invitations used or expired, and join requests
    the inviter has acknowledged."""
    me = reading.me
    found = reading.dirs.get(me)
    if found is None:
        return
    for name in found.envelopes:
        parsed = parse_envelope_file(name)
        manifest = None if parsed is None else manifests.get(parsed.recipient)
        if parsed and manifest and parsed.prekey not in {p.id for p in manifest.prekeys}:
            yield name
    current = {
        invite_file(i.invite_id)
        for i in replicas.invitations(reading.snapshot)
        if now_ms < i.expires_at
    }
    yield from (name for name in found.invites if name not in current)
    for name in found.joins:
        inviters = [m for m in manifests.values() if me in m.seen]
        if inviters:
            yield name


def write(folder: Path, device: str, publication: Publication) -> None:
    """Write a publication into this device's directory: each file atomically, in order,
    then the removals; no link in the folder is ever followed (:func:`write_own`).

    Raises:
        Untrusted: a link on the way (reported by ``sync status``).
    """
    writes = (
        *publication.notices,
        *(() if publication.publish is None else publication.publish.writes),
    )
    removes = (*(() if publication.publish is None else publication.publish.removes),
               *publication.removes)  # fmt: skip
    write_own(folder, device, writes, removes)


def write_file(folder: Path, device: str, name: str, data: bytes) -> None:
    """One file of this device's directory (an invitation, a join request), atomically."""
    write_own(folder, device, [(name, data)])


def find_invitation(folder: Path, code: PairingCode) -> Invitation:
    """The invitation in the folder that ``code`` opens (the joiner learns the inviter's
    key from the code, not from the folder).

    Raises:
        NotFound: no invitation in the folder is this code's (not arrived yet, or
            another folder).
    """
    for device, found in sorted(scan(folder).items()):
        for name in found.invites:
            try:
                data = read_file(folder, device, name)
                if data is not None:
                    return open_invitation(code, data, device)
            except Untrusted:
                continue
    raise NotFound(
        "no invitation in the sync folder opens this code: check that both devices see the"
        " same folder and that it has arrived here, then run hikmah sync join again"
    )
