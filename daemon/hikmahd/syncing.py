"""The syncing service: this device's exchanges with the sync folder (docs/sync.md).

One exchange at a time: look at the folder (:func:`hikmah.store.exchange.look`, off
the event loop), take back this device's own published records when its
ledger lacks them, pair the devices whose join requests answer an open
invitation, apply every paired device's new records through the writer,
then publish: what is published is kept in the writer's turn before its
files are written (off the loop), so a generation is never reused.

Exchanges run on request (``sync.exchange``), after each durable batch (the
writer's listener), when the folder changes (watchfiles, debounced), and at
least every ``[sync] interval_seconds``. Nothing here blocks the loop: the
folder, the keyring and the key file go through the offload hook, the store's
changes through the writer.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio
import watchfiles

from hikmah.access.person import PersonKey, grant
from hikmah.index import replicas
from hikmah.model.errors import ConflictError, HikmahError, NotFound, PolicyError
from hikmah.model.policy import SyncPolicy
from hikmah.model.wire.sync import (
    Device,
    ExchangeResult,
    Finding,
    InviteResult,
    JoinResult,
    RemoveResult,
    SyncStatusResult,
)
from hikmah.rules.operations import Applied, Outcome, Pair, RemoveDevice
from hikmah.store import exchange
from hikmah.store.core import Store
from hikmah.store.exchange import Identity, Look
from hikmah.sync.envelope import PrekeyPair
from hikmah.sync.folder import DEVICES, TEMP_PREFIX, read_file, scan
from hikmah.sync.manifest import Manifest, valid_name
from hikmah.sync.pairing import OpenInvitation, PairingCode, invite, invite_file, join, join_file
from hikmah.sync.plan import audit

from .policywatch import PolicyHolder, watched
from .reminders import Reminders
from .scheduling import Offload
from .synckeys import SyncSecrets
from .vaulting import Vault
from .writer import Writer

log = logging.getLogger(__name__)

SYNC_OFF = "sync is off: set [sync] folder in the policy to the folder your sync engine keeps"


class Syncing:
    """This device's sync with the folder the policy names."""

    def __init__(
        self,
        store: Store,
        writer: Writer,
        policies: PolicyHolder,
        vault: Vault | None,
        reminders: Reminders,
        now_ms: Callable[[], int],
        offload: Offload,
    ) -> None:
        self.store, self.writer, self.policies = store, writer, policies
        self.reminders, self.now_ms, self.offload = reminders, now_ms, offload
        self.vault = vault is not None
        self.secrets = SyncSecrets(store.data_dir, None if vault is None else vault.keyring)
        self.identity: Identity | None = None
        self._prekeys: list[tuple[PrekeyPair, int]] = []
        self.findings: tuple[Finding, ...] = ()
        self.manifests: dict[str, Manifest] = {}
        self.own: Manifest | None = None
        self.last_ms: int | None = None
        self.error: str | None = None
        self._turn = trio.Lock()
        self._wake = trio.Event()

    # -- configuration ----------------------------------------------------------------

    @property
    def policy(self) -> SyncPolicy:
        return self.policies.policy.sync

    @property
    def folder(self) -> Path | None:
        """The sync folder, or None when sync is off."""
        folder = self.policy.folder.strip()
        return Path(folder).expanduser() if folder else None

    @property
    def name(self) -> str:
        name = self.policy.name.strip() or socket.gethostname()[:64] or "hikmah"
        return name if valid_name(name) else "hikmah"

    def _folder(self) -> Path:
        folder = self.folder
        if folder is None:
            raise PolicyError(SYNC_OFF)
        if not folder.is_absolute():
            raise PolicyError(f"[sync] folder must be an absolute path (or start with ~): {folder}")
        if not folder.is_dir():
            # Never made here: an unmounted drive's mount point would hide the real folder.
            raise PolicyError(
                f"the sync folder {folder} does not exist: create it, or let your sync"
                " engine create it, then run hikmah sync"
            )
        return folder

    # -- the service -------------------------------------------------------------------

    def on_commit(self, outcomes: Sequence[Outcome | Applied]) -> None:
        """The writer's listener: a durable batch is ready to publish."""
        if self.folder is not None and any(not isinstance(o, Applied) for o in outcomes):
            self._wake.set()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Exchange whenever woken, and at least every interval; runs until cancelled.

        Started once this device's own chain in the folder is checked: a store
        restored behind what it published takes that back before any write.
        """
        try:
            await self._check_own()
        except (HikmahError, OSError) as exc:
            self.error = str(exc)
            log.warning("sync: %s", exc)
        task_status.started()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch)
            first = True
            while True:
                if not first:
                    with trio.move_on_after(self.policy.interval_seconds):
                        await self._wake.wait()
                first = False
                self._wake = trio.Event()
                if self.folder is None:
                    continue
                try:
                    await self.exchange()
                except (HikmahError, OSError) as exc:
                    if str(exc) != self.error:
                        log.warning("sync: %s", exc)
                    self.error = str(exc)

    async def _watch(self) -> None:
        """Wake the service when another device's files change in the folder."""
        while True:
            folder = self.folder
            if folder is None or not self.policy.watch or not folder.is_dir():
                await trio.sleep(1)
                continue
            mine = None if self.identity is None else self.identity.key.device_id

            def concerns(_change: watchfiles.Change, path: str, mine: str | None = mine) -> bool:
                parts = Path(path).parts
                return not Path(path).name.startswith(TEMP_PREFIX) and (
                    mine is None or mine not in parts
                )

            async for changes in watched(folder, concerns, recursive=True):
                if changes:
                    self._wake.set()
                if self.folder != folder or not self.policy.watch:
                    break

    async def _check_own(self) -> None:
        folder = self.folder
        if folder is None or not folder.is_dir():
            return
        identity = await self._identity()
        found: Look = await self.offload(
            lambda: self.store.read(exchange.own_chain, folder, identity, self.store.durable_head)
        )
        if found.ahead is not None:
            await self.writer.exclusive(lambda store: _take_back(store, found))

    # -- one exchange --------------------------------------------------------------------

    async def exchange(self) -> ExchangeResult:
        """Look at the folder, apply what verifies, publish; what was done.

        Raises:
            PolicyError: sync is off.
            ConflictError: another device removed this one.
        """
        folder = self._folder()
        async with self._turn:
            identity = await self._identity()
            removed = self.store.read(replicas.removed_by)
            if removed is not None:
                raise ConflictError(
                    f"device {removed} removed this device from sync: its records no longer"
                    " reach the others; pair it again as a new device (a new data directory)"
                )
            now = self.now_ms()
            found: Look = await self.offload(
                lambda: self.store.read(
                    exchange.look, folder, identity, self.store.durable_head, now
                )
            )
            findings = list(found.findings)
            taken = 0
            if found.ahead is not None:
                taken = await self.writer.exclusive(lambda store: _take_back(store, found))
            paired = await self._pair(found, findings)
            findings = [f for f in findings if f.problem != "unpaired" or f.device not in paired]
            for finding in found.findings:
                if finding.problem == "fork":
                    await self.writer.exclusive(_halter(finding))
            applied: dict[str, int] = {}
            for outcome in await self.writer.receive(found.steps):
                if isinstance(outcome, Applied):
                    if outcome.halted is not None:
                        findings.append(Finding(outcome.device, "halted", outcome.halted))
                    elif outcome.records:
                        applied[outcome.device] = outcome.records
                elif isinstance(outcome, HikmahError):
                    findings.append(Finding("", "refused", str(outcome)))
            if applied or paired:
                await self.reminders.reload()  # another device's commitments
            if self.vault and found.opened & {self._prekeys[-1][0].public.id}:
                await self._rotate_prekeys()
            published = await self._publish(folder, identity, found.manifests, now)
            await self._retire_prekeys(found.manifests)
            self.findings, self.manifests, self.own = tuple(findings), found.manifests, found.own
            self.last_ms, self.error = now, None
        return ExchangeResult(
            device=identity.key.device_id,
            applied=applied,
            paired=paired,
            taken_back=taken,
            published=published,
            findings=findings,
        )

    async def _identity(self) -> Identity:
        if self.identity is None:
            key = await self.offload(self.secrets.device_key)
            await self.writer.exclusive(
                lambda store: _in_txn(store, replicas.set_device, key.device_id)
            )
            if self.vault:
                self._prekeys = await self.offload(self.secrets.prekeys)
                if not self._prekeys:
                    await self._rotate_prekeys()
            self.identity = Identity(key, self.name, ())
        prekeys = tuple(pair for pair, _since in self._prekeys)
        self.identity = Identity(self.identity.key, self.name, prekeys)
        return self.identity

    async def _pair(self, found: Look, findings: list[Finding]) -> list[str]:
        paired = []
        for pair, used in found.pairs:
            outcome = await self.writer.submit(pair)
            if isinstance(outcome, HikmahError):
                findings.append(Finding(pair.device, "refused", str(outcome)))
                continue
            await self.writer.exclusive(partial(_keep_invitation, kept=used))
            paired.append(pair.device)
            log.info("sync: paired device %s (%s)", pair.device, pair.name)
        return paired

    async def _publish(
        self, folder: Path, identity: Identity, manifests: dict[str, Manifest], now: int
    ) -> bool:
        made = await self.offload(
            lambda: self.store.read(
                exchange.publication, folder, identity, self.store.durable_head, manifests, now
            )
        )
        publish = made.publish
        if publish is not None:
            # Kept durably before any file is written: a crash between the two never
            # makes this device sign two manifests of one generation.
            await self.writer.exclusive(
                lambda store: _in_txn(store, replicas.put_published, publish.published)
            )
        if publish is not None or made.removes or made.notices:
            await self.offload(lambda: exchange.write(folder, identity.key.device_id, made))
        return publish is not None

    # -- prekeys (vault on) ---------------------------------------------------------------

    async def _rotate_prekeys(self) -> None:
        """Announce a fresh prekey: senders move to it, and the old ones can be retired."""
        published = self.store.read(replicas.published)
        since = (0 if published is None else published.generation) + 1
        held = [*self._prekeys, (PrekeyPair.generate(), since)]
        await self.offload(lambda: self.secrets.keep_prekeys(held))
        self._prekeys = held

    async def _retire_prekeys(self, manifests: dict[str, Manifest]) -> None:
        """Destroy the prekeys no sender needs: every paired device with the vault has seen
        a manifest announcing a newer one, and every envelope it sent has been opened."""
        if len(self._prekeys) < 2 or self.identity is None:
            return
        me = self.identity.key.device_id
        paired = self.store.read(replicas.peers)
        senders = [
            (manifests.get(device), entry)
            for device, entry in paired.items()
            if entry.peer.upto is None
        ]

        def done_with(since: int) -> bool:
            for manifest, entry in senders:
                if manifest is None or not manifest.vault:
                    continue
                seen = manifest.seen.get(me)
                if seen is None or seen.generation < since:
                    return False
                if entry.opened < manifest.envelopes.get(me, 0):
                    return False
            return True

        keep = [self._prekeys[-1]]
        for (pair, since), (_next, next_since) in zip(
            self._prekeys, self._prekeys[1:], strict=False
        ):
            if not done_with(next_since):
                keep.insert(len(keep) - 1, (pair, since))
        if len(keep) < len(self._prekeys):
            await self.offload(lambda: self.secrets.keep_prekeys(keep))
            log.info("sync: %d spent prekey(s) destroyed", len(self._prekeys) - len(keep))
            self._prekeys = keep

    # -- pairing and removal ------------------------------------------------------------

    async def invite(self, person: PersonKey | None) -> InviteResult:
        """A one-time pairing code, and its invitation in the folder; ``person``'s grant
        of it goes in the record that adds whoever joins (:mod:`hikmah.access.person`)."""
        folder = self._folder()
        async with self._turn:
            identity = await self._identity()
            now = self.now_ms()
            lifetime = self.policy.invite_minutes * 60_000
            opened, data = invite(
                identity.key, name=identity.name, now_ms=now, lifetime_ms=lifetime
            )
            if person is not None:
                signed = grant(person, identity.key.device_id, opened.invite_id)
                opened = msgspec.structs.replace(opened, grant=signed)
            # Kept before the file exists: a request can only answer a kept invitation.
            await self.writer.exclusive(lambda store: _keep_invitation(store, opened))
            name = invite_file(opened.invite_id)
            await self.offload(
                lambda: exchange.write_file(folder, identity.key.device_id, name, data)
            )
            await self._publish(folder, identity, self.manifests, now)
        return InviteResult(code=opened.code.text, expires_at=opened.expires_at)

    async def join(self, text: str, person: PersonKey | None) -> JoinResult:
        """Pair with the device whose invitation ``text`` (its code) opens; the record
        that adds it carries ``person``'s attestation."""
        code = PairingCode.parse(text)
        folder = self._folder()
        async with self._turn:
            identity = await self._identity()
            invitation = await self.offload(lambda: exchange.find_invitation(folder, code))
            now = self.now_ms()
            data = join(
                identity.key,
                code,
                invitation,
                name=identity.name,
                now_ms=now,
                vault=self.vault,
                prekeys=tuple(pair.public for pair in identity.prekeys),
            )
            pair = Pair(device=invitation.inviter, key=invitation.key, name=invitation.name)
            outcome = await self.writer.submit(pair, person=person)
            if isinstance(outcome, HikmahError) and "already paired" not in str(outcome):
                raise outcome
            name = join_file(invitation.invite_id)
            await self.offload(
                lambda: exchange.write_file(folder, identity.key.device_id, name, data)
            )
            await self._publish(folder, identity, self.manifests, now)
        self._wake.set()
        return JoinResult(device=invitation.inviter, name=invitation.name)

    async def remove(self, device: str, *, delete: bool, person: PersonKey | None) -> RemoveResult:
        """Stop trusting ``device`` past what was applied of it (the record carrying
        ``person``'s attestation); with ``delete``, also delete its directory from the
        folder (its writer is gone)."""
        folder = self._folder()
        async with self._turn:
            entry = self.store.read(replicas.paired, device)
            if entry is None:
                raise NotFound(f"no paired device has id {device}: see hikmah sync status")
            if entry.peer.upto is None:
                await self.writer.write(RemoveDevice(device=device), person=person)
            elif not delete:
                raise ConflictError(f"device {device} is already removed")
            deleted = False
            if delete:
                deleted = await self.offload(lambda: _delete_device_dir(folder, device))
        self._wake.set()
        return RemoveResult(device=device, removed=True, deleted=deleted)

    # -- what sync status shows ---------------------------------------------------------

    async def audit(self) -> list[Finding]:
        """Every published chain in the folder checked whole (``verify-ledger``)."""
        folder = self._folder()
        identity = await self._identity()
        me = identity.key.device_id

        def run() -> tuple[Finding, ...]:
            with self.store.snapshot() as snapshot:
                keys = {d: e.peer.key for d, e in replicas.peers(snapshot).items()}
                keys[me] = identity.key.public.raw
                return audit(
                    me,
                    keys,
                    scan(folder),
                    lambda device, name: read_file(folder, device, name),
                    lambda device, seq: (
                        snapshot.line_at("", seq)
                        if device == me
                        else replicas.stored_line(snapshot, device, seq)
                    ),
                )

        found: tuple[Finding, ...] = await self.offload(run)
        if any(f.device == me for f in found):
            # This device's own files are damaged: the next publish writes them all again.
            await self.writer.exclusive(lambda store: _in_txn(store, replicas.put_published, None))
            self._wake.set()
        return list(found)

    async def status(self, *, verify: bool) -> SyncStatusResult:
        folder = self.folder
        if folder is None:
            return SyncStatusResult(enabled=False, folder=None, devices=[], findings=[])
        identity = await self._identity()
        me = identity.key.device_id
        with self.store.snapshot() as snapshot:
            paired = replicas.peers(snapshot)
            ahead = replicas.ahead(snapshot)
            removed_by = replicas.removed_by(snapshot)
            epoch = replicas.epoch(snapshot)
            hidden = int((snapshot.features["present"] == 0).sum())
        head = self.store.durable_head
        devices = [
            Device(
                id=me,
                name=identity.name,
                this=True,
                epoch=epoch,
                head=head,
                acknowledged_by={
                    device: m.seen[me].seq for device, m in self.manifests.items() if me in m.seen
                },
                vault=self.vault,
            )
        ]
        for device, entry in sorted(paired.items()):
            manifest = self.manifests.get(device)
            peer = entry.peer
            their = None if manifest is None else manifest.head.seq
            devices.append(
                Device(
                    id=device,
                    name=entry.name if manifest is None else manifest.name,
                    this=False,
                    epoch=None if manifest is None else manifest.epoch,
                    head=None if manifest is None else manifest.head,
                    applied=peer.applied.seq,
                    pending=max(0, (their or 0) - peer.applied.seq),
                    acknowledges=None
                    if manifest is None or me not in manifest.seen
                    else manifest.seen[me].seq,
                    vault=None if manifest is None else manifest.vault,
                    removed_at=peer.upto,
                    halted=peer.halted,
                )
            )
        findings = list(self.findings)
        if verify:
            findings += await self.audit()
        return SyncStatusResult(
            enabled=True,
            folder=str(folder),
            device=me,
            vault=self.vault,
            devices=devices,
            ahead=ahead,
            removed_by=removed_by,
            sealed_unreadable=hidden,
            last_exchange_ms=self.last_ms,
            error=self.error,
            findings=findings,
        )


def _halter(finding: Finding) -> Callable[[Store], None]:
    return lambda store: _in_txn(store, replicas.halt, finding.device, finding.why)


def _in_txn(store: Store, change: Callable[..., None], *args: Any) -> None:
    """One change of sync's state in a transaction of its own, made durable."""
    with store.transaction() as snapshot:
        change(snapshot, *args)
    store.sync()


def _keep_invitation(store: Store, kept: OpenInvitation) -> None:
    with store.transaction() as snapshot:
        others = [i for i in replicas.invitations(snapshot) if i.invite_id != kept.invite_id]
        replicas.put_invitations(snapshot, [*others, kept])
    store.sync()


def _take_back(store: Store, found: Look) -> int:
    """This device's own published records its ledger lacks, appended as a tail a person
    accepts; until the folder holds them all, writes stay refused."""
    with store.transaction() as snapshot:
        taken = replicas.take_back(snapshot, list(found.take_back))
        replicas.put_ahead(snapshot, None if found.take_back else found.ahead)
    store.sync()
    if taken:
        log.warning(
            "sync: took back %d records this device had published and its ledger lacked"
            " (restored from a backup?); a person accepts them with verify-ledger",
            taken,
        )
    return taken


def _delete_device_dir(folder: Path, device: str) -> bool:
    """Delete a removed device's directory (never following a link out of the folder)."""
    import shutil  # noqa: PLC0415 -- a rare, person-only action

    root = folder / DEVICES / device
    if root.is_symlink() or not root.is_dir():
        return False
    if not root.resolve().is_relative_to((folder / DEVICES).resolve()):
        raise NotFound(f"{root} is not inside the sync folder")
    shutil.rmtree(root)
    return True
