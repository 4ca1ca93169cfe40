"""The durable store: one LMDB environment holding the ledger and its derived indexes.

The store keeps the environment (its databases under one gate, grown as writes
need), the acknowledged head, and the one way memory changes: :meth:`Store.apply`.
Writes come in batches: the daemon's writer task hands over every request
that arrived while the previous batch committed, and the whole batch
becomes one durable transaction. Each operation in a batch is checked on its
own (:func:`hikmah.rules.writes.payloads_for`), so one refusal never costs the
others their write. Reads go through a :class:`~hikmah.index.snapshot.Snapshot`
(:meth:`Store.snapshot`, :meth:`Store.read`). Beside it in this package: opening
the environment (:mod:`~hikmah.store.opening`), keeping the indexes up with the ledger
(:mod:`~hikmah.store.indexing`), dropping free pages (:mod:`~hikmah.store.free_pages`),
the vectors attached (:mod:`~hikmah.store.vectors`), the reminders delivered
(:mod:`~hikmah.store.reminders`); verifying, accepting and compacting the ledger are
:mod:`hikmah.store.maintenance`.

The acknowledged head lives outside the LMDB file (``head``) so that a
record appended behind the store's back shows up as an unacknowledged tail.
Before each commit the head file records the batch's last record as
*pending*; on open, a pending head that the ledger ends with exactly is
acknowledged (the commit happened), and anything past it is a tail that a
person must inspect. This costs one small fsync per batch, not per write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import itertools
import logging
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import lmdb

from hikmah.access.person import PersonKey, attest, person_only
from hikmah.access.presence import PresenceState, after, read_state
from hikmah.index import derived, replicas
from hikmah.index.effects import effects
from hikmah.index.fates import LOCAL
from hikmah.index.layout import INDEX_VERSION, SEALED_MARK, SEQ
from hikmah.index.queries import conflicts_for
from hikmah.index.snapshot import Added, FeatureCache, Snapshot
from hikmah.ledger.chain import GENESIS, decode_record, encode_record
from hikmah.ledger.headfile import HeadFile
from hikmah.ledger.payloads import (
    PAYLOAD_ENCODER,
    CompactedPayload,
    DeviceAddedPayload,
    DeviceRemovedPayload,
    Payload,
    PresencePayload,
    RedactedPayload,
    RememberPayload,
    SupersedePayload,
    stamped,
)
from hikmah.model.errors import ConflictError, HikmahError, InvalidInput, LedgerError, StoreFull
from hikmah.model.head import Head
from hikmah.model.policy import KernelPolicy
from hikmah.rules.operations import Applied, ApplyRemote, Change, Outcome, Written
from hikmah.rules.writes import payloads_for
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.store import free_pages, indexing, receive, vectors
from hikmah.store.gate import Gate
from hikmah.store.opening import open_env, vault_id
from hikmah.vault.sealing import Keys, Sealed, seal_trace

log = logging.getLogger(__name__)

HEAD_FILE = "head"
DEFAULT_MAP_SIZE = 1 << 30
MAX_MAP_SIZE = 1 << 40
_NEARLY_FULL = 8 << 20  # free bytes under which an I/O error means a full disk
P = ParamSpec("P")
T = TypeVar("T")


def _ahead_error(head: Head) -> ConflictError:
    return ConflictError(
        f"this device published records up to seq {head.seq} of its chain that its ledger"
        " does not hold (was its data directory restored from a backup?): nothing is"
        " written until hikmah sync has taken them back from the sync folder and a"
        " person has accepted them with hikmah verify-ledger --accept-tail"
    )


class Store:
    """The ledger and its indexes in one LMDB environment under ``data_dir``.

    Not thread-safe for writes: one writer (the daemon's writer task) calls
    :meth:`apply`; reads may come from anywhere.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int = MAX_MAP_SIZE,
        durable: bool = True,
        vault: Callable[[str], Keys] | None = None,
    ) -> None:
        """Open (or create) the store.

        Args:
            vault: with the vault on, fetches the keys of the data directory
                whose vault id it is given (created on first use and kept in
                the store); new traces are then sealed. Without it a store that
                holds sealed traces refuses to open
                (:class:`~hikmah.vault.crypto.VaultLocked`).
        """
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data_dir = data_dir
        self.durable = durable
        self.head_file = HeadFile(data_dir / HEAD_FILE, sync=durable)
        self.max_map_size = max(map_size, max_map_size)
        # Many users of the environment at once, or the one replacing its file.
        self.gate = Gate()
        self.env, self.dbs = open_env(data_dir, map_size, durable=durable, keys=None)
        try:
            self.vault_id = vault_id(self.env, self.dbs, data_dir, vault=vault is not None)
            if vault is not None:
                assert self.vault_id is not None
                self.use_keys(vault(self.vault_id))
        except BaseException:
            self.env.close()
            self.head_file.close()
            raise
        self.columns = FeatureCache()
        # The semantic channel's vectors, when the daemon (or a tool) attached them: every
        # durable batch reaches them (hikmah.store.vectors).
        self.semantic: SemanticIndex | None = None
        self._follow_lock = threading.Lock()
        # Batches committed, and how many of them are known durable (the writer
        # syncs a batch while it applies the next: see apply).
        self._commits = 0
        self._synced_commits = 0
        self._synced_lock = threading.Lock()
        self.head_error: str | None = None
        self.head: Head | None = self._load_head()
        # Person presence is read on first use, not here: reading it walks every ledger
        # record, which must not stand between a start and READY (the daemon reads it
        # in the background right after).
        self._presence: PresenceState | None = None
        self._presence_lock = threading.RLock()
        # The head as of the last sync: what sync may publish (never a record a crash
        # could still take back).
        self.durable_head = self.head
        indexing.check_layout(self)
        free_pages.finish_scrub(self)

    def use_keys(self, keys: Keys) -> None:
        """Seal and open with ``keys`` from now on (after a rotation began: the same
        index key, a new current master)."""
        self.dbs = dataclasses.replace(self.dbs, vault=keys)

    def close(self) -> None:
        """Close the store, first acknowledging the last batch in the head file.

        Until then the last batch is only pending there (acknowledged by the
        next write); on a clean stop nothing follows it, and a record removed
        from the end while the store is closed would go unnoticed.
        """
        if self.head is not None and self.head_error is None:
            try:
                self.head_file.write(self.head, None)
            except LedgerError as exc:
                log.warning("could not acknowledge the last writes at close: %s", exc)
        self.env.close()
        self.head_file.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """A consistent view of the store (a read transaction), as a context manager."""
        with self.gate.shared(), self.env.begin() as txn:
            yield Snapshot(txn, self.dbs, self.columns)

    def read(
        self, query: Callable[Concatenate[Snapshot, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """One query (a function of a snapshot, such as :func:`hikmah.index.queries.get`) in a
        snapshot of its own."""
        with self.snapshot() as snapshot:
            return query(snapshot, *args, **kwargs)

    # -- the head ---------------------------------------------------------------

    def _load_head(self) -> Head | None:
        try:
            acknowledged, pending = self.head_file.read()
        except LedgerError as exc:
            self.head_error = str(exc)
            return None
        if pending is not None:
            with self.env.begin() as txn:
                raw = txn.get(SEQ.pack(pending.seq), db=self.dbs.ledger)
            try:
                matches = raw is not None and decode_record(bytes(raw)).hash == pending.hash
            except LedgerError:
                matches = False  # a damaged last record: verify-ledger reports it
            if matches:
                return pending
        return acknowledged

    @property
    def presence_read(self) -> bool:
        """Whether :attr:`presence` is known (reading it first reads every ledger record:
        seconds at a million, so the daemon reads it in the background at start)."""
        return self._presence is not None

    @property
    def presence(self) -> PresenceState:
        """Person presence as the ledger leaves it (read from the ledger on first use)."""
        with self._presence_lock:
            if self._presence is None:
                self._presence = self.read_presence()
            return self._presence

    @presence.setter
    def presence(self, state: PresenceState) -> None:
        with self._presence_lock:
            self._presence = state

    def read_presence(self) -> PresenceState:
        """Person presence as the ledger says up to the acknowledged head (the store keeps
        it from then on as its own writes change it: :meth:`apply`).

        With the head unreadable no record is known to be acknowledged, so presence
        that any record changed is damaged until a person resets it.
        """
        with self.snapshot() as snapshot:
            if self.head_error is None:
                return read_state(snapshot.records(), 0 if self.head is None else self.head.seq)
            state = read_state(snapshot.records(), None)
        if state.seq is None:
            return state
        return PresenceState(
            seq=state.seq, damaged=f"the ledger head is unreadable ({self.head_error})"
        )

    def set_head(self, head: Head | None, *, pending: Head | None = None) -> None:
        """Record ``head`` as acknowledged in the head file (and ``pending`` as the commit
        under way); without ``pending``, ``head`` is the store's head from now on.

        Raises:
            LedgerError: the head file cannot be written.
        """
        self.head_file.write(head, pending)
        if pending is None:
            self.head, self.head_error = head, None
            self.durable_head = head  # callers sync before they move the head

    def acknowledge_ledger(self) -> None:
        """Make the ledger's last record the head, indexing the records it acknowledges.

        Raises:
            LedgerError: a record past the indexed ones cannot be read; nothing moved.
        """

        def accept() -> Head | None:
            with self.transaction() as snapshot:
                last = snapshot.last_record()
                if last is not None:
                    # Records the indexes reflect were removed: only a rebuild is right.
                    rebuild = indexing.indexed(snapshot) > last.seq
                    indexing.reindex(self, snapshot, rebuild=rebuild)
                    self.head_file.write(last, None)
            return last

        last = self.growing(accept)
        self.sync()
        self.head, self.head_error = last, None
        self.presence = self.read_presence()
        self.durable_head = last
        self.columns.forget()

    # -- writing ----------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Snapshot]:
        """A write transaction outside the batches (maintenance), committed at the end
        of the block; the caller syncs."""
        with self.gate.shared(), self.env.begin(write=True) as txn:
            yield Snapshot(txn, self.dbs)

    def apply(
        self,
        operations: Sequence[Change],
        *,
        now_ms: int,
        policy: KernelPolicy,
        sync: bool = True,
        persons: Sequence[PersonKey | None] = (),
    ) -> list[Outcome | Applied]:
        """Check and commit a batch; one outcome per operation, in order.

        ``persons``, when given, holds for each operation the key of the person who
        proved presence for it (:mod:`hikmah.access.person`): the person-only records it
        makes carry that person's attestation.

        With ``sync`` (the default) the batch is durable on return. Without it
        the commit has synced its data pages but not the meta page that makes
        them the current state: a power cut could still undo the batch (never
        corrupt it) until :meth:`sync` returns. The daemon's writer uses that to
        sync one batch while it applies the next, and answers a batch's callers
        only after its sync.

        The semantic channel hears of the batch before this returns: the old
        vectors of what it rewrote go at once, and the new ones are made in the
        background (:meth:`hikmah.semantic.store_vectors.SemanticIndex.follow`): a write never
        waits for the model.

        Raises:
            StoreFull: the map cannot grow or the disk is full; nothing was written.
        """
        while True:
            try:
                with self.gate.shared():
                    outcomes, scrub, changes = self._apply_once(
                        operations, persons or [None] * len(operations), now_ms, policy
                    )
                if sync or scrub:
                    self.sync()
                if scrub:
                    # A destroyed data key must not stay readable in a free page.
                    free_pages.scrub(self)
                with self._follow_lock:  # one batch at a time: with one writer, in commit order
                    vectors.committed(self.semantic, changes, self.dbs.vault)
                return outcomes
            except lmdb.MapFullError:
                self._grow()
            except lmdb.Error as exc:
                raise self._write_failure(exc) from None

    def _write_failure(self, exc: lmdb.Error) -> Exception:
        """What a failed LMDB commit means for the person (nothing was written)."""
        code, text = getattr(exc, "errno", None), str(exc)
        full = code == errno.ENOSPC or "No space" in text
        io_error = code == errno.EIO or "Input/output error" in text
        if full or (io_error and shutil.disk_usage(self.data_dir).free < _NEARLY_FULL):
            # A short write of a multi-page commit on a full disk comes back as EIO.
            return StoreFull("the disk is full: nothing was written; free space and retry")
        denied = code in (errno.EACCES, errno.EPERM, errno.EROFS) or any(
            words in text for words in ("ermission", "not permitted", "Read-only")
        )
        if io_error or denied:
            return LedgerError(
                f"the store's file cannot be written ({text}): nothing was written;"
                f" check {self.data_dir} (permissions, read-only mount, disk health)"
            )
        return exc

    def sync(self) -> None:
        """Make every commit so far durable (a no-op for a store that is not durable)."""
        head = self.head  # committed before it was set: durable once the sync returns
        if self.durable:
            committed = self._commits
            try:
                self.env.sync(True)
            except lmdb.Error as exc:
                raise self._write_failure(exc) from None
            with self._synced_lock:
                self._synced_commits = max(self._synced_commits, committed)
        self.durable_head = head

    def _grow(self) -> None:
        current = int(self.env.info()["map_size"])
        if current >= self.max_map_size:
            raise StoreFull(
                f"the store reached its size limit ({current >> 20} MiB): nothing was written"
            )
        new = min(current * 2, self.max_map_size)
        log.info("growing the LMDB map from %d to %d MiB", current >> 20, new >> 20)
        self.env.set_mapsize(new)

    def growing(self, write: Callable[[], T]) -> T:
        """``write`` (one write transaction), again after growing the map whenever it
        ran out of room: a rebuild writes every index again in one transaction, and a
        store as large as its map needs room for both copies until the commit."""
        while True:
            try:
                return write()
            except lmdb.MapFullError:
                self._grow()

    def _apply_once(
        self,
        operations: Sequence[Change],
        persons: Sequence[PersonKey | None],
        now_ms: int,
        policy: KernelPolicy,
    ) -> tuple[list[Outcome | Applied], bool, list[Added]]:
        """Commit a batch; its outcomes, whether it destroyed a data key, and the documents
        whose text it changed, whichever chain their records came from (for the vectors)."""
        outcomes: list[Outcome | Applied] = []
        dirty: set[int] = set()
        destroyed = False
        presence = self.presence
        txn = self.env.begin(write=True)
        snapshot = Snapshot(txn, self.dbs)
        snapshot.written = {}
        snapshot.hold_chunks()
        try:
            last = snapshot.last_record()
            if self.head_error is not None or (last is not None and last != self.head):
                error = ConflictError(
                    "the ledger has records no write of this store acknowledged (or its head"
                    " is unreadable): nothing is written until a person runs"
                    " hikmah verify-ledger and accepts or resets the head"
                )
                txn.abort()
                return [error for _ in operations], False, []
            seq, prev = (0, GENESIS) if last is None else (last.seq, last.hash)
            ahead = replicas.ahead(snapshot)
            received = rebuild = False
            for operation, person in zip(operations, persons, strict=True):
                if isinstance(operation, ApplyRemote):
                    try:
                        # Another device's records count from this ledger's next record.
                        applied, found = receive.apply_step(snapshot, operation, dirty, seq + 1)
                    except HikmahError as exc:
                        outcomes.append(exc)
                        continue
                    outcomes.append(applied)
                    received = True
                    # Purged text or keys left the store: its free pages are scrubbed.
                    destroyed |= found.destroyed or found.redacted
                    rebuild |= found.rebuild
                    continue
                if ahead is not None:
                    outcomes.append(_ahead_error(ahead))
                    continue
                try:
                    payloads = payloads_for(snapshot, operation, now_ms=now_ms, policy=policy)
                except HikmahError as exc:
                    outcomes.append(exc)
                    continue
                except (lmdb.BadValsizeError, OverflowError, ValueError) as exc:
                    # Checking writes nothing, so one operation's bad input (a key
                    # LMDB cannot hold, a number out of range) is refused on its own
                    # instead of failing every write of the batch.
                    outcomes.append(InvalidInput(f"the request cannot be stored: {exc}"))
                    continue
                for plain in map(stamped, payloads, itertools.repeat(now_ms)):
                    payload = self._at_rest(txn, plain)
                    data = PAYLOAD_ENCODER.encode(payload)
                    if person is not None and person_only(plain):
                        data = attest(person, data)
                    record = encode_record(seq + 1, prev, data, made=True)
                    if not txn.put(
                        SEQ.pack(record.seq), record.line, db=self.dbs.ledger, append=True
                    ):
                        # The ledger's keys are out of order (records moved behind
                        # the store's back): refuse rather than lose this record.
                        raise LedgerError(
                            f"record {record.seq} cannot be appended: the ledger's records"
                            " are out of order; run hikmah verify-ledger"
                        )
                    opened = plain.trace if isinstance(plain, RememberPayload) else None
                    derived.apply_payload(snapshot, record.seq, payload, dirty, plain=opened)
                    found = effects(snapshot, payload, LOCAL)
                    shredded = found.destroyed
                    destroyed |= shredded or found.redacted
                    rebuild |= found.rebuild
                    if isinstance(payload, PresencePayload):
                        presence = after(payload, record.seq)
                    seq, prev = record.seq, record.hash
                outcomes.append(self._written(snapshot, payloads[0], seq, key_destroyed=shredded))
            appended = seq != (0 if last is None else last.seq)
            if not (appended or received):
                txn.abort()
                return outcomes, False, []
            snapshot.write_back()
            if rebuild:
                # A device was cut off behind what was applied of it: only a rebuild
                # from the records that still count is right.
                indexing.reindex(self, snapshot, rebuild=True)
                snapshot.write_back()
            txn.put(indexing.INDEXED, SEQ.pack(seq), db=self.dbs.meta)
            version = snapshot.index_version() + 1
            txn.put(INDEX_VERSION, SEQ.pack(version), db=self.dbs.meta)
            if destroyed:
                txn.put(free_pages.SCRUB, b"", db=self.dbs.meta)
            new_head = Head(seq=seq, hash=prev) if appended else self.head
            if appended:
                if self._synced_commits < self._commits:
                    # The head file is about to call the previous batch acknowledged:
                    # its commit must be durable first, or a power cut could leave the
                    # head naming records the store lost (its sync may still be under way).
                    self.sync()
                self.head_file.write(self.head, new_head)
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        self.head = new_head
        self.presence = presence
        self._commits += 1
        if rebuild:
            self.columns.forget()
        else:
            self.columns.committed(version, dirty)
        written = snapshot.written
        return outcomes, destroyed, [] if written is None else list(written.values())

    def _at_rest(self, txn: Any, payload: Payload) -> Payload:
        """The payload as the ledger keeps it: a trace sealed under the vault, its
        wrapped data key put in ``keys``."""
        keys = self.dbs.vault
        if keys is None or not isinstance(payload, RememberPayload):
            return payload
        sealed, entry = seal_trace(keys, payload.trace, at=payload.at)
        txn.put(payload.trace.id.encode(), entry, db=self.dbs.keys)
        txn.put(SEALED_MARK, b"", db=self.dbs.meta)
        return sealed

    def _written(
        self, snapshot: Snapshot, payload: Payload, seq: int, *, key_destroyed: bool = False
    ) -> Written:
        if isinstance(payload, RememberPayload):
            trace = payload.trace
            return Written(
                id=trace.id, seq=seq, trace=trace, conflicts=conflicts_for(snapshot, trace)
            )
        if isinstance(payload, PresencePayload):
            return Written(id="presence", seq=seq)
        if isinstance(payload, DeviceAddedPayload | DeviceRemovedPayload):
            return Written(id=payload.device, seq=seq)
        # Writes never make supersede (second of a pair) or compaction records first,
        # and this is the payload before sealing.
        assert not isinstance(payload, SupersedePayload | CompactedPayload | Sealed)
        assert not isinstance(payload, RedactedPayload)
        docno = snapshot.docno(payload.id)
        assert docno is not None
        status = snapshot.status_of(docno)
        return Written(id=payload.id, seq=seq, status=status, key_destroyed=key_destroyed)
