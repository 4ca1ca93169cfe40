"""The durable store: one LMDB environment holding the ledger and its derived indexes.

Writes come in batches (:meth:`Store.apply`): the daemon's writer task hands
over every request that arrived while the previous batch committed, and the
whole batch becomes one durable transaction. Each operation in a batch is
validated on its own, so one refusal never costs the others their write.

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
import logging
import os
import secrets
import shutil
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import lmdb
import msgspec
import numpy as np
import numpy.typing as npt

from hikmah import index
from hikmah.columns import Columns
from hikmah.consolidation import (
    Proposal,
    claim_proposals,
    promotion_draft,
    transcript_proposal,
)
from hikmah.durable import fsync_dir, fsync_file
from hikmah.errors import (
    ConflictError,
    HikmahError,
    InvalidInput,
    LedgerError,
    NotFound,
    PolicyError,
    StoreFull,
)
from hikmah.headfile import HeadFile
from hikmah.index import FEATURES, Databases
from hikmah.ingest import extract_candidates, restates
from hikmah.ledger import (
    GENESIS,
    Head,
    VerifyReport,
    decode_record,
    encode_record,
    verify,
)
from hikmah.payloads import (
    PAYLOAD_ENCODER,
    CompactedPayload,
    FeedbackPayload,
    FulfillPayload,
    Payload,
    PinPayload,
    PurgePayload,
    RedactedPayload,
    RememberPayload,
    SupersedePayload,
    decode_payload,
)
from hikmah.policy import KernelPolicy
from hikmah.principal import AgentSession, refuse_in_agent_session, stamp_locator
from hikmah.promises import STAGES, Stage
from hikmah.rules import build_trace, check_resolution
from hikmah.sealing import Keys, Sealed, rewrapped, seal_trace
from hikmah.secrets import check_fields
from hikmah.tokenizer import terms
from hikmah.trace import Draft, Trace, normalize_claim_key, normalize_claim_value
from hikmah.transcripts import Message, Transcript
from hikmah.vault import VaultLocked
from hikmah.vocabulary import STATUSES, Status

log = logging.getLogger(__name__)

HEAD_FILE = "head"
LMDB_DIR = "lmdb"
DEFAULT_MAP_SIZE = 1 << 30
MAX_MAP_SIZE = 1 << 40
_SEQ = struct.Struct(">Q")
_MAX_LOGGED_COMMITS = 4096
_INDEXED = b"indexed_seq"  # meta: the last ledger record the indexes reflect
_LAYOUT = b"layout"  # meta: index.LAYOUT of the derived indexes
_VAULT_ID = b"vault_id"  # meta: names this data directory's keys in the keyring
_BLIND_INDEX = b"blind_index"  # meta: key id of the index key the indexes are blind under
_SEALED = b"sealed"  # meta: some trace was sealed, so the store cannot open without its keys
_SCRUB = b"scrub"  # meta: a destroyed data key may remain in free pages until they are dropped
TRANSCRIPT_TAG = "transcript"  # the tag of every trace ingested from a session transcript
# Kinds whose active traces a transcript candidate must not restate.
_RESTATED_KINDS = ("constraint", "preference", "procedure", "belief", "correction")
_RESTATE_READS = 2000  # traces compared per candidate, those sharing its words
_NEARLY_FULL = 8 << 20  # free bytes under which an I/O error means a full disk


class Remember(msgspec.Struct, frozen=True, kw_only=True):
    """Write a trace (and supersede the one it names)."""

    draft: Draft
    session: AgentSession | None = None
    trace_id: str | None = None
    created_at: int | None = None
    allow_prediction: bool = False


class Fulfill(msgspec.Struct, frozen=True, kw_only=True):
    """Mark an active commitment done."""

    id: str
    by: str | None = None
    session: AgentSession | None = None


class Feedback(msgspec.Struct, frozen=True, kw_only=True):
    """A trace that was recalled and acted on led to a good or a bad outcome."""

    id: str
    outcome: Literal["good", "bad"]
    session: AgentSession | None = None


class Pin(msgspec.Struct, frozen=True, kw_only=True):
    """Keep a trace at full weight in recall (``pinned``), or let it decay again."""

    id: str
    pinned: bool
    session: AgentSession | None = None


class Promote(msgspec.Struct, frozen=True, kw_only=True):
    """Write the belief a consolidation proposal describes, if its evidence is unchanged."""

    proposal: str
    verified: bool = False
    source: str | None = None
    session: AgentSession | None = None


class Purge(msgspec.Struct, frozen=True, kw_only=True):
    """Retention deletion: a tombstone, and the trace leaves every index."""

    id: str
    reason: str
    session: AgentSession | None = None


Operation = Remember | Fulfill | Feedback | Pin | Promote | Purge


class Written(msgspec.Struct, frozen=True, kw_only=True):
    """What one successful operation wrote."""

    id: str
    seq: int
    trace: Trace | None = None
    status: Status = "active"
    conflicts: list[str] = msgspec.field(default_factory=list)
    # A purge under the vault: the trace's data key was destroyed with it.
    key_destroyed: bool = False


Outcome = Written | HikmahError


class StoredTrace(msgspec.Struct, frozen=True, kw_only=True):
    """A trace with the state the ledger has given it since."""

    trace: Trace
    status: Status
    superseded_by: str | None = None


class Compacted(msgspec.Struct, frozen=True, kw_only=True):
    """What compaction did: the head it replaced, the new head, the redacted traces."""

    old_head: Head | None
    head: Head | None
    records: int
    redacted: list[str]


class _Gate:
    """Many users of the LMDB environment at once, or the one that replaces its file.

    Shared entry is re-entrant per thread, so a reader that reads again inside
    its own transaction never waits for a replacement that waits for it.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._users = 0
        self._replacing = False
        self._mine = threading.local()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._mine, "depth", 0)
        with self._lock:
            while self._replacing and depth == 0:
                self._lock.wait()
            self._users += 1
        self._mine.depth = depth + 1
        try:
            yield
        finally:
            self._mine.depth = depth
            with self._lock:
                self._users -= 1
                self._lock.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._lock:
            while self._replacing:
                self._lock.wait()
            self._replacing = True
            while self._users:
                self._lock.wait()
        try:
            yield
        finally:
            with self._lock:
                self._replacing = False
                self._lock.notify_all()


class Scheduled(NamedTuple):
    """A commitment the promise queue schedules."""

    trace_id: str
    deadline: int
    created_at: int
    delivered: tuple[Stage, ...]


class ConflictValue(msgspec.Struct, frozen=True):
    value: str
    ids: list[str]


class ConflictGroup(msgspec.Struct, frozen=True):
    key: str
    values: list[ConflictValue]


class Store:
    """The ledger and its indexes in one LMDB environment under ``data_dir``.

    Not thread-safe for writes: one writer (the daemon's writer task) calls
    :meth:`apply`; reads may come from anywhere in the same thread.
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
                holds sealed traces refuses to open (:class:`VaultLocked`).
        """
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data_dir = data_dir
        self.durable = durable
        self.head_file = HeadFile(data_dir / HEAD_FILE, sync=durable)
        self.max_map_size = max(map_size, max_map_size)
        # py-lmdb would create the directory with the file mode (no x bit).
        (data_dir / LMDB_DIR).mkdir(mode=0o700, exist_ok=True)
        self._gate = _Gate()
        self.env, self.dbs = self._open_env(map_size, None)
        try:
            self.vault_id = self._open_vault(vault)
        except BaseException:
            self.env.close()
            self.head_file.close()
            raise
        # The feature columns are a cache of one snapshot (``_columns_seq``, the
        # ledger's last seq when read). Commits log the chunks they changed, and
        # a reader with a newer snapshot patches just those; the lock is held for
        # bookkeeping only, never across a commit, so readers never wait for a sync.
        self._lock = threading.Lock()
        self._columns: Columns | None = None
        self._columns_seq = 0
        self._changes: list[tuple[int, set[int]]] = []
        self._forgotten_upto = 0
        # Batches committed, and how many of them are known durable (the writer
        # syncs a batch while it applies the next: see apply).
        self._commits = 0
        self._synced_commits = 0
        # Active dated commitments as (deadlines, docnos) sorted by deadline, and
        # the column snapshot they were computed from.
        self._dated: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]] | None = None
        self._dated_seq = -1
        self.head_error: str | None = None
        self.head: Head | None = self._load_head()
        self._check_layout()
        with self.env.begin() as txn:
            scrub = txn.get(_SCRUB, db=self.dbs.meta) is not None
        if scrub:
            self._scrub()

    def _open_env(self, map_size: int, vault: Keys | None) -> tuple[Any, Databases]:
        env = lmdb.open(
            str(self.data_dir / LMDB_DIR),
            map_size=map_size,
            max_dbs=16,
            # The commit syncs the data pages; the meta page is synced by sync(),
            # which the writer overlaps with the next batch (see apply).
            sync=self.durable,
            metasync=False,
            readahead=False,
            mode=0o600,
        )
        dbs = {name: env.open_db(name.encode()) for name in Databases.names()}
        return env, Databases(**dbs, vault=vault)

    def _open_vault(self, load: Callable[[str], Keys] | None) -> str | None:
        """Fetch the vault's keys (naming them by the store's vault id); the vault id."""
        with self.env.begin(write=True) as txn:
            sealed = txn.get(_SEALED, db=self.dbs.meta) is not None
            vault_id = txn.get(_VAULT_ID, db=self.dbs.meta)
            if load is not None and vault_id is None:
                vault_id = secrets.token_hex(8).encode()
                txn.put(_VAULT_ID, vault_id, db=self.dbs.meta)
        if load is None:
            if sealed:
                raise VaultLocked(
                    f"{self.data_dir} holds encrypted traces and the vault is off: set"
                    " [vault] enabled = true in the policy and start hikmahd with the keyring"
                    " that holds its keys"
                )
            return None if vault_id is None else bytes(vault_id).decode()
        assert vault_id is not None
        self.use_keys(load(bytes(vault_id).decode()))
        return bytes(vault_id).decode()

    def use_keys(self, keys: Keys) -> None:
        """Seal and open with ``keys`` from now on (after a rotation began: the same
        index key, a new current master)."""
        self.dbs = dataclasses.replace(self.dbs, vault=keys)

    def _check_layout(self) -> None:
        """Rebuild the indexes from the ledger when they were built with another layout
        (an older version), or blind under another index key (or none)."""
        keys = self.dbs.vault
        blind = b"" if keys is None else keys.index_id.encode()
        with self.env.begin() as txn:
            raw = txn.get(_LAYOUT, db=self.dbs.meta)
            built_blind = bytes(txn.get(_BLIND_INDEX, b"", db=self.dbs.meta))
            empty = txn.stat(self.dbs.ledger)["entries"] == 0
        layout_ok = raw is not None and int(_SEQ.unpack(raw)[0]) == index.LAYOUT
        if layout_ok and built_blind == blind:
            return
        if not empty:
            why = "an older layout" if not layout_ok else "another index key (or none)"
            log.warning("the indexes have %s: rebuilding them from the ledger", why)
            self.rebuild_index()
        with self.env.begin(write=True) as txn:
            txn.put(_LAYOUT, _SEQ.pack(index.LAYOUT), db=self.dbs.meta)
            if blind:
                txn.put(_BLIND_INDEX, blind, db=self.dbs.meta)
            else:
                txn.delete(_BLIND_INDEX, db=self.dbs.meta)
        self.sync()

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

    # -- head ---------------------------------------------------------------

    def _load_head(self) -> Head | None:
        try:
            acknowledged, pending = self.head_file.read()
        except LedgerError as exc:
            self.head_error = str(exc)
            return None
        if pending is not None:
            with self.env.begin() as txn:
                raw = txn.get(_SEQ.pack(pending.seq), db=self.dbs.ledger)
            try:
                matches = raw is not None and decode_record(bytes(raw)).hash == pending.hash
            except LedgerError:
                matches = False  # a damaged last record: verify-ledger reports it
            if matches:
                return pending
        return acknowledged

    def _last_record(self, txn: Any) -> Head | None:
        cursor = txn.cursor(db=self.dbs.ledger)
        if not cursor.last():
            return None
        record = decode_record(bytes(cursor.value()))
        return Head(seq=record.seq, hash=record.hash)

    # -- writes -------------------------------------------------------------

    def apply(
        self,
        operations: Sequence[Operation],
        *,
        now_ms: int,
        policy: KernelPolicy,
        sync: bool = True,
    ) -> list[Outcome]:
        """Validate and commit a batch; one outcome per operation, in order.

        With ``sync`` (the default) the batch is durable on return. Without it
        the commit has synced its data pages but not the meta page that makes
        them the current state: a power cut could still undo the batch (never
        corrupt it) until :meth:`sync` returns. The daemon's writer uses that to
        sync one batch while it applies the next, and answers a batch's callers
        only after its sync.

        Raises:
            StoreFull: the map cannot grow or the disk is full; nothing was written.
        """
        while True:
            try:
                with self._gate.shared():
                    outcomes, scrub = self._apply_once(operations, now_ms, policy)
                if sync or scrub:
                    self.sync()
                if scrub:
                    # A destroyed data key must not stay readable in a free page.
                    self._scrub()
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
        if self.durable:
            committed = self._commits
            try:
                self.env.sync(True)
            except lmdb.Error as exc:
                raise self._write_failure(exc) from None
            with self._lock:
                self._synced_commits = max(self._synced_commits, committed)

    def _grow(self) -> None:
        current = int(self.env.info()["map_size"])
        if current >= self.max_map_size:
            raise StoreFull(
                f"the store reached its size limit ({current >> 20} MiB): nothing was written"
            )
        new = min(current * 2, self.max_map_size)
        log.info("growing the LMDB map from %d to %d MiB", current >> 20, new >> 20)
        self.env.set_mapsize(new)

    def _apply_once(
        self, operations: Sequence[Operation], now_ms: int, policy: KernelPolicy
    ) -> tuple[list[Outcome], bool]:
        """Commit a batch; its outcomes, and whether it destroyed a data key."""
        outcomes: list[Outcome] = []
        dirty: set[int] = set()
        destroyed = False
        txn = self.env.begin(write=True)
        try:
            last = self._last_record(txn)
            if self.head_error is not None or (last is not None and last != self.head):
                error = ConflictError(
                    "the ledger has records no write of this store acknowledged (or its head"
                    " is unreadable): nothing is written until a person runs"
                    " hikmah verify-ledger and accepts or resets the head"
                )
                txn.abort()
                return [error for _ in operations], False
            seq, prev = (0, GENESIS) if last is None else (last.seq, last.hash)
            for operation in operations:
                try:
                    payloads = self._validate(txn, operation, now_ms, policy)
                except HikmahError as exc:
                    outcomes.append(exc)
                    continue
                except (lmdb.BadValsizeError, OverflowError, ValueError) as exc:
                    # Validation writes nothing, so one operation's bad input (a key
                    # LMDB cannot hold, a number out of range) is refused on its own
                    # instead of failing every write of the batch.
                    outcomes.append(InvalidInput(f"the request cannot be stored: {exc}"))
                    continue
                for plain in payloads:
                    payload = self._at_rest(txn, plain)
                    record = encode_record(seq + 1, prev, PAYLOAD_ENCODER.encode(payload))
                    key = _SEQ.pack(record.seq)
                    if not txn.put(key, record.line, db=self.dbs.ledger, append=True):
                        # The ledger's keys are out of order (records moved behind
                        # the store's back): refuse rather than lose this record.
                        raise LedgerError(
                            f"record {record.seq} cannot be appended: the ledger's records"
                            " are out of order; run hikmah verify-ledger"
                        )
                    opened = plain.trace if isinstance(plain, RememberPayload) else None
                    index.apply_payload(txn, self.dbs, payload, dirty, plain=opened)
                    self._forget_reminders(txn, payload)
                    shredded = isinstance(payload, PurgePayload) and self._shred(txn, payload.id)
                    destroyed |= shredded
                    seq, prev = record.seq, record.hash
                outcomes.append(self._written(txn, payloads[0], seq, key_destroyed=shredded))
            if (last is not None and seq == last.seq) or (last is None and seq == 0):
                txn.abort()
                return outcomes, False
            txn.put(_INDEXED, _SEQ.pack(seq), db=self.dbs.meta)
            if destroyed:
                txn.put(_SCRUB, b"", db=self.dbs.meta)
            new_head = Head(seq=seq, hash=prev)
            if self._synced_commits < self._commits:
                # The head file is about to call the previous batch acknowledged: its
                # commit must be durable first, or a power cut could leave the head
                # naming records the store lost (its sync may still be under way).
                self.sync()
            self.head_file.write(self.head, new_head)
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        self.head = new_head
        self._commits += 1
        self._log_commit(seq, dirty)
        return outcomes, destroyed

    def _shred(self, txn: Any, trace_id: str) -> bool:
        """Destroy a trace's data key: without it the sealed text is noise for good."""
        return bool(txn.delete(trace_id.encode(), db=self.dbs.keys))

    def _at_rest(self, txn: Any, payload: Payload) -> Payload:
        """The payload as the ledger keeps it: a trace sealed under the vault, its
        wrapped data key put in ``keys``."""
        keys = self.dbs.vault
        if keys is None or not isinstance(payload, RememberPayload):
            return payload
        sealed, entry = seal_trace(keys, payload.trace)
        txn.put(payload.trace.id.encode(), entry, db=self.dbs.keys)
        txn.put(_SEALED, b"", db=self.dbs.meta)
        return sealed

    def _validate(
        self, txn: Any, operation: Operation, now_ms: int, policy: KernelPolicy
    ) -> list[Payload]:
        if isinstance(operation, Remember):
            return self._validate_remember(txn, operation, now_ms, policy)
        if isinstance(operation, Promote):
            found = {p.id: p for p in self._proposals(txn, policy)}.get(operation.proposal)
            if found is None:
                raise ConflictError(
                    f"no current proposal has id {operation.proposal}: its evidence changed"
                    " since it was made (or it never existed); run consolidate again"
                )
            draft = promotion_draft(found, source=operation.source, verified=operation.verified)
            remember = Remember(draft=draft, session=operation.session)
            return self._validate_remember(txn, remember, now_ms, policy)
        if isinstance(operation, Fulfill):
            self._open_target(txn, operation.id)
            by = stamp_locator(operation.session, operation.by)
            return [FulfillPayload(id=operation.id, by=by)]
        if isinstance(operation, Feedback | Pin):
            self._visible(txn, operation.id)
            by = stamp_locator(operation.session, None)
            if isinstance(operation, Feedback):
                return [FeedbackPayload(id=operation.id, outcome=operation.outcome, by=by)]
            return [PinPayload(id=operation.id, pinned=operation.pinned, by=by)]
        refuse_in_agent_session(operation.session, "purge")
        docno = index.docno_of(txn, self.dbs, operation.id)
        if docno is None:
            raise NotFound(f"no trace has id {operation.id}")
        status = index.status_of(txn, self.dbs, docno)
        if not operation.reason.strip():
            raise InvalidInput("purge needs a reason, kept in the tombstone for the audit trail")
        check_fields([("reason", operation.reason)])
        if status == "purged":
            raise ConflictError(f"{operation.id} is already purged")
        return [PurgePayload(id=operation.id, reason=operation.reason.strip())]

    def _validate_remember(
        self, txn: Any, operation: Remember, now_ms: int, policy: KernelPolicy
    ) -> list[Payload]:
        draft = operation.draft
        superseded: tuple[Trace, Status] | None = None
        if draft.supersedes is not None:
            old = index.docno_of(txn, self.dbs, draft.supersedes)
            if old is not None:
                superseded = (
                    index.trace_at(txn, self.dbs, old),
                    index.status_of(txn, self.dbs, old),
                )
        trace = build_trace(
            draft,
            now_ms=now_ms,
            policy=policy,
            session=operation.session,
            superseded=superseded,
            trace_id=operation.trace_id,
            created_at=operation.created_at,
            allow_prediction=operation.allow_prediction,
        )
        if index.docno_of(txn, self.dbs, trace.id) is not None:
            raise ConflictError(f"a trace with id {trace.id} exists already")
        if trace.privacy == "sensitive" and self.dbs.vault is None:
            raise PolicyError(
                "sensitive traces are kept only encrypted, and this store runs without the"
                " vault's keys: nothing was written"
            )
        payloads: list[Payload] = [RememberPayload(trace=trace)]
        if trace.supersedes is not None:
            payloads.append(SupersedePayload(old_id=trace.supersedes, new_id=trace.id))
        if trace.fulfills is not None:
            self._open_target(txn, trace.fulfills, outcome=trace)
            payloads.append(FulfillPayload(id=trace.fulfills, by=trace.id))
        return payloads

    def _visible(self, txn: Any, trace_id: str) -> None:
        """Check ``trace_id`` names a trace that was not purged.

        Raises:
            NotFound: it does not.
        """
        docno = index.docno_of(txn, self.dbs, trace_id)
        if docno is None or index.status_of(txn, self.dbs, docno) == "purged":
            raise NotFound(f"no trace has id {trace_id}")

    def _open_target(self, txn: Any, trace_id: str, *, outcome: Trace | None = None) -> None:
        """Check ``trace_id`` names an open commitment, or an open prediction ``outcome`` resolves.

        Raises:
            NotFound, InvalidInput, ConflictError, ProvenanceRefused: it does not.
        """
        docno = index.docno_of(txn, self.dbs, trace_id)
        if docno is None:
            raise NotFound(f"no trace has id {trace_id}")
        target = index.bare_trace_at(txn, self.dbs, docno)
        status = index.status_of(txn, self.dbs, docno)
        if target.kind == "prediction" and outcome is not None:
            if status != "active":
                done = "resolved" if status == "fulfilled" else status
                raise ConflictError(f"{trace_id} is {done}: a prediction is resolved once")
            check_resolution(target, outcome)
            return
        if target.kind != "commitment":
            what = "a commitment, or a prediction an outcome resolves"
            raise InvalidInput(f"{trace_id} is a {target.kind}, not {what}")
        if status != "active":
            raise ConflictError(f"{trace_id} is {status}, not an open commitment")

    def _written(
        self, txn: Any, payload: Payload, seq: int, *, key_destroyed: bool = False
    ) -> Written:
        if isinstance(payload, RememberPayload):
            trace = payload.trace
            return Written(
                id=trace.id, seq=seq, trace=trace, conflicts=self.conflicts_for(txn, trace)
            )
        # Writes never make supersede (second of a pair) or compaction records first,
        # and this is the payload before sealing.
        assert not isinstance(payload, SupersedePayload | CompactedPayload | Sealed)
        docno = index.docno_of(txn, self.dbs, payload.id)
        assert docno is not None
        status = index.status_of(txn, self.dbs, docno)
        return Written(id=payload.id, seq=seq, status=status, key_destroyed=key_destroyed)

    # -- reads --------------------------------------------------------------

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A read transaction (a consistent snapshot), as a context manager."""
        with self._gate.shared(), self.env.begin() as txn:
            yield txn

    def get(self, trace_id: str) -> StoredTrace:
        """One trace with its status.

        Raises:
            NotFound: no trace has that id, or it was purged.
        """
        with self.read() as txn:
            found = self._stored(txn, trace_id)
        if found is None or found.status == "purged":
            raise NotFound(f"no trace has id {trace_id}")
        return found

    def _stored(self, txn: Any, trace_id: str) -> StoredTrace | None:
        docno = index.docno_of(txn, self.dbs, trace_id)
        if docno is None:
            return None
        return StoredTrace(
            trace=index.trace_at(txn, self.dbs, docno),
            status=index.status_of(txn, self.dbs, docno),
            superseded_by=index.successor(txn, self.dbs, docno),
        )

    def superseded_by(self, txn: Any, trace_id: str) -> str | None:
        """The id of the trace that superseded this one, if any."""
        docno = index.docno_of(txn, self.dbs, trace_id)
        return None if docno is None else index.successor(txn, self.dbs, docno)

    def history(self, trace_id: str) -> list[StoredTrace]:
        """The correction chain a trace belongs to, oldest first."""
        with self.read() as txn:
            current = self._stored(txn, trace_id)
            if current is None or current.status == "purged":
                raise NotFound(f"no trace has id {trace_id}")
            chain = [current]
            seen = {trace_id}
            while (older := chain[0].trace.supersedes) and older not in seen:
                seen.add(older)
                found = self._stored(txn, older)
                if found is None:
                    break
                chain.insert(0, found)
            while (newer := chain[-1].superseded_by) and newer not in seen:
                seen.add(newer)
                found = self._stored(txn, newer)
                if found is None:
                    break
                chain.append(found)
        return [entry for entry in chain if entry.status != "purged"]

    def conflicts_for(self, txn: Any, trace: Trace) -> list[str]:
        """Ids of active traces claiming a different value for the same key."""
        if trace.claim_key is None or trace.claim_value is None:
            return []
        mine = index.claim_value_key(self.dbs, trace.claim_value)
        return [
            index.bare_trace_at(txn, self.dbs, docno).id
            for _key, docno, value in index.claim_entries(txn, self.dbs, trace.claim_key)
            if value != mine
        ]

    def resolutions(self) -> list[tuple[Trace, Trace]]:
        """Every resolved prediction with the outcome that resolved it, in write order."""
        pairs = []
        with self.read() as txn:
            columns = self.features(txn)
            outcomes = np.flatnonzero(
                (columns["present"] == 1)
                & (columns["kind"] == index.KIND_CODE["outcome"])
                & (columns["status"] != index.STATUS_CODE["purged"])
            )
            for docno in outcomes:
                outcome = index.trace_at(txn, self.dbs, int(docno))
                if outcome.fulfills is None:
                    continue
                target = index.docno_of(txn, self.dbs, outcome.fulfills)
                if target is None:
                    continue
                prediction = index.trace_at(txn, self.dbs, target)
                if prediction.kind == "prediction":
                    pairs.append((prediction, outcome))
        return pairs

    def proposals(self, policy: KernelPolicy) -> list[Proposal]:
        """Consolidation proposals of the current state (nothing is written)."""
        with self.read() as txn:
            return self._proposals(txn, policy)

    def _proposals(self, txn: Any, policy: KernelPolicy) -> list[Proposal]:
        claimed = (
            index.trace_at(txn, self.dbs, docno)
            for _key, docno, _value in index.claim_entries(txn, self.dbs)
        )
        return claim_proposals(claimed, policy) + self._transcript_proposals(txn)

    def _transcript_proposals(self, txn: Any) -> list[Proposal]:
        """Candidates from the person's words in ingested sessions, not yet in memory."""
        columns = self.features(txn)
        docs = index.postings(txn, self.dbs, index.TAG_PREFIX + TRANSCRIPT_TAG)
        docs = docs[
            (columns["status"][docs] == index.STATUS_CODE["active"])
            & (columns["kind"][docs] == index.KIND_CODE["episode"])
        ]
        episodes = {
            trace.id: trace
            for trace in (index.trace_at(txn, self.dbs, int(d)) for d in docs)
            if trace.provenance.source.startswith("human:")
        }
        messages = [
            Message(id=t.id, role="user", text=t.content, timestamp_ms=t.created_at, person=True)
            for t in sorted(episodes.values(), key=lambda t: (t.created_at, t.id))
        ]  # in the order they were said, so the first wording of a repeated rule wins
        stored = Transcript(format="claude-code", session_id="", cwd=None, messages=messages)
        return [
            transcript_proposal(candidate, episodes[candidate.message_id])
            for candidate in extract_candidates(stored)
            if not self._restated(txn, candidate.content)
        ]

    def _restated(self, txn: Any, content: str) -> bool:
        """Whether an active rule, preference, procedure or belief already says ``content``."""
        wanted = terms(content)
        if not wanted:
            return False
        docs = np.unique(np.concatenate([index.postings(txn, self.dbs, t) for t in wanted]))
        columns = self.features(txn)
        docs = docs[
            (columns["status"][docs] == index.STATUS_CODE["active"])
            & np.isin(columns["kind"][docs], [index.KIND_CODE[k] for k in _RESTATED_KINDS])
        ]
        texts = (index.trace_at(txn, self.dbs, int(d)) for d in docs[:_RESTATE_READS])
        return restates(content, (t.content for t in texts if TRANSCRIPT_TAG not in t.tags))

    def conflicts(self) -> list[ConflictGroup]:
        """Every open conflict, grouped by normalised key and value."""
        groups: dict[str, dict[str, list[str]]] = {}
        with self.read() as txn:
            for _key, docno, _value in index.claim_entries(txn, self.dbs):
                trace = index.trace_at(txn, self.dbs, docno)
                assert trace.claim_key is not None and trace.claim_value is not None
                key = normalize_claim_key(trace.claim_key)
                value = normalize_claim_value(trace.claim_value)
                groups.setdefault(key, {}).setdefault(value, []).append(trace.id)
        return [
            ConflictGroup(key, [ConflictValue(v, ids) for v, ids in sorted(values.items())])
            for key, values in sorted(groups.items())
            if len(values) > 1
        ]

    def commitments(self, *, until_ms: int | None = None) -> list[StoredTrace]:
        """Active commitments with a deadline, soonest first, up to ``until_ms``."""
        out: list[StoredTrace] = []
        with self.read() as txn:
            cursor = txn.cursor(db=self.dbs.deadlines)
            for key in cursor.iternext(values=False):
                deadline, docno = index.split_deadline_key(bytes(key))
                if until_ms is not None and deadline > until_ms:
                    break
                out.append(StoredTrace(trace=index.trace_at(txn, self.dbs, docno), status="active"))
        return out

    def standing(
        self,
        *,
        kinds: Sequence[str],
        scope: str | None,
        verified_only: bool = False,
        limit: int,
    ) -> list[StoredTrace]:
        """Active traces of these kinds that hold in ``scope``: the rules a session starts with.

        Global traces always hold; ``scope`` adds its own. Sensitive traces are
        never included. Verified first, then the most authoritative, then newest.
        """
        with self.read() as txn:
            columns = self.features(txn)
            mask = (columns["present"] == 1) & (columns["status"] == index.STATUS_CODE["active"])
            mask &= np.isin(columns["kind"], [index.KIND_CODE[kind] for kind in kinds])
            mask &= columns["privacy"] != index.PRIVACY_CODE["sensitive"]
            scopes = [index.GLOBAL_SCOPE_ID]
            if scope is not None:
                found = index.scope_id(txn, self.dbs, scope, create=False)
                scopes += [] if found is None else [found]
            mask &= np.isin(columns["scope"], scopes)
            if verified_only:
                mask &= columns["verified"] == 1
            docs = np.flatnonzero(mask)
            # lexsort sorts by the last key first; negate for descending order.
            order = np.lexsort(
                (
                    -columns["created"][docs],
                    -columns["authority"][docs],
                    -columns["verified"][docs].astype(np.int8),
                )
            )
            return [
                StoredTrace(trace=index.trace_at(txn, self.dbs, int(docno)), status="active")
                for docno in docs[order][:limit]
            ]

    def scheduled(self) -> list[Scheduled]:
        """Every active commitment with a deadline, with the reminder stages delivered."""
        out: list[Scheduled] = []
        with self.read() as txn:
            cursor = txn.cursor(db=self.dbs.deadlines)
            for key in cursor.iternext(values=False):
                deadline, docno = index.split_deadline_key(bytes(key))
                trace = index.bare_trace_at(txn, self.dbs, docno)
                delivered = tuple(
                    stage
                    for stage in STAGES
                    if txn.get(_reminder_key(trace.id, stage), db=self.dbs.reminders) is not None
                )
                out.append(Scheduled(trace.id, deadline, trace.created_at, delivered))
        return out

    def _forget_reminders(self, txn: Any, payload: Payload) -> None:
        """A commitment that leaves the queue needs no delivery records any more."""
        if isinstance(
            payload,
            RememberPayload
            | Sealed
            | FeedbackPayload
            | PinPayload
            | RedactedPayload
            | CompactedPayload,
        ):
            return
        gone = payload.old_id if isinstance(payload, SupersedePayload) else payload.id
        for stage in STAGES:
            txn.delete(_reminder_key(gone, stage), db=self.dbs.reminders)

    def mark_reminded(self, delivered: Sequence[tuple[str, Stage]], at_ms: int) -> None:
        """Record durably that these reminder stages were delivered."""
        with self._gate.shared(), self.env.begin(write=True) as txn:
            for trace_id, stage in delivered:
                txn.put(_reminder_key(trace_id, stage), _SEQ.pack(at_ms), db=self.dbs.reminders)
        self.sync()

    def traces(self, *, include_inactive: bool = True) -> Iterator[StoredTrace]:
        """Every trace in write order (purged ones never), for export."""
        with self.read() as txn:
            features = self.features(txn)
            cursor = txn.cursor(db=self.dbs.docs)
            for key, value in cursor:
                docno = int(struct.unpack(">I", key)[0])
                status = STATUSES[int(features["status"][docno])]
                if status == "purged" or (not include_inactive and status != "active"):
                    continue
                yield StoredTrace(
                    trace=index.load_trace(txn, self.dbs, bytes(value)),
                    status=status,
                    superseded_by=index.successor(txn, self.dbs, docno),
                )

    def lookup(self, trace_id: str) -> StoredTrace | None:
        """One trace with its status, purged ones included (as their stub); None if no
        trace ever had that id. For import, which must tell "already here" from "new"."""
        with self.read() as txn:
            return self._stored(txn, trace_id)

    def export_page(
        self, after: str | None, limit: int, *, include_superseded: bool
    ) -> tuple[list[StoredTrace], str | None]:
        """Up to ``limit`` traces in write order after the trace ``after``.

        Purged traces never, superseded ones only with ``include_superseded``. At
        most ``8 * limit`` traces are looked at, so a page may hold fewer than
        ``limit`` even when more follow.

        Returns:
            The traces, and the id to continue after (None at the end).

        Raises:
            NotFound: no trace has the id ``after``.
        """
        wanted = {"active", "fulfilled"} | ({"superseded"} if include_superseded else set())
        out: list[StoredTrace] = []
        with self.read() as txn:
            start = 0
            if after is not None:
                docno = index.docno_of(txn, self.dbs, after)
                if docno is None:
                    raise NotFound(f"no trace has id {after}: cannot continue an export after it")
                start = docno + 1
            statuses = self.features(txn)["status"]
            cursor = txn.cursor(db=self.dbs.docs)
            if not cursor.set_range(index.u32(start)):
                return out, None
            for looked, (key, value) in enumerate(cursor, 1):
                docno = int(struct.unpack(">I", key)[0])
                status = STATUSES[int(statuses[docno])]
                if status in wanted:
                    out.append(
                        StoredTrace(
                            trace=index.load_trace(txn, self.dbs, bytes(value)),
                            status=status,
                            superseded_by=index.successor(txn, self.dbs, docno),
                        )
                    )
                if len(out) >= limit or looked >= 8 * limit:
                    last = index.bare_trace_at(txn, self.dbs, docno).id
                    return out, (last if cursor.next() else None)
        return out, None

    def counts(self) -> dict[str, int]:
        """How many traces are in each status."""
        with self.read() as txn:
            features = self.features(txn)
        by_status = np.bincount(
            features["status"][features["present"] == 1], minlength=len(STATUSES)
        )
        return {status: int(n) for status, n in zip(STATUSES, by_status, strict=True)}

    # -- the feature columns --------------------------------------------------

    def features(self, txn: Any) -> Columns:
        """Every document's features as columns indexed by document number.

        Loaded on first use (not at open, so start-up does not grow with the
        store), then patched forward to each reader's snapshot.
        """
        seq = self._snapshot_seq(txn)
        with self._lock:
            if self._columns is None or self._columns_seq < self._forgotten_upto:
                columns = Columns()
                chunks = (
                    (int(struct.unpack(">I", key)[0]), np.frombuffer(value, dtype=FEATURES))
                    for key, value in txn.cursor(db=self.dbs.features)
                )
                columns.set_chunks(chunks, index.next_docno(txn, self.dbs))
                self._columns, self._columns_seq = columns, seq
            elif seq > self._columns_seq:
                dirty = set[int]().union(
                    *(chunks for at, chunks in self._changes if self._columns_seq < at <= seq)
                )
                self._columns.set_chunks(
                    ((chunk, index.read_chunk(txn, self.dbs, chunk)) for chunk in dirty),
                    index.next_docno(txn, self.dbs),
                )
                self._columns_seq = seq
            self._changes = [(at, chunks) for at, chunks in self._changes if at > self._columns_seq]
            return self._columns

    def _snapshot_seq(self, txn: Any) -> int:
        cursor = txn.cursor(db=self.dbs.ledger)
        return int(_SEQ.unpack(cursor.key())[0]) if cursor.last() else 0

    def _log_commit(self, seq: int, dirty: set[int]) -> None:
        with self._lock:
            self._changes.append((seq, dirty))
            if len(self._changes) > _MAX_LOGGED_COMMITS:
                # Nobody has read for a long while: forget, and reload on the next read.
                self._changes.clear()
                self._forgotten_upto = seq

    def overdue(self, txn: Any, now_ms: int) -> npt.NDArray[np.uint32]:
        """Document numbers of active commitments whose deadline has passed, ascending."""
        features = self.features(txn)
        if self._dated is None or self._dated_seq != self._columns_seq:
            dated = np.flatnonzero(
                (features["kind"] == index.KIND_CODE["commitment"])
                & (features["status"] == index.STATUS_CODE["active"])
                & (features["deadline"] != index.NO_DEADLINE)
            )
            deadlines = features["deadline"][dated]
            order = np.argsort(deadlines, kind="stable")
            self._dated = (deadlines[order], dated[order].astype(np.uint32))
            self._dated_seq = self._columns_seq
        deadlines, docs = self._dated
        return np.sort(docs[: int(np.searchsorted(deadlines, now_ms, side="right"))])

    # -- the ledger -------------------------------------------------------------

    def records(self, txn: Any) -> Iterator[tuple[int, bytes]]:
        """(key, line) of every ledger record, in key order."""
        for key, value in txn.cursor(db=self.dbs.ledger):
            yield int(_SEQ.unpack(key)[0]), bytes(value)

    def verify(self, *, expect_head: Head | None = None) -> VerifyReport:
        """Check the hash chain and the head (REFERENCE.md, "Ledger")."""
        with self.read() as txn:
            return verify(
                self.records(txn), self.head, expect_head=expect_head, head_error=self.head_error
            )

    def accept_tail(self, *, session: AgentSession | None = None) -> VerifyReport:
        """Acknowledge records past the head, if everything up to the head verifies.

        Raises:
            AgentRestricted: inside an agent session.
            LedgerError: the chain is broken before or inside the tail.
        """
        refuse_in_agent_session(session, "verify-ledger --accept-tail")
        report = self.verify()
        other = [e for e in report.errors if "unacknowledged" not in e]
        if other:
            raise LedgerError(
                "the tail is not accepted: the ledger has other errors: " + "; ".join(other)
            )
        return self._move_head()

    def reset_head(self, *, session: AgentSession | None = None) -> VerifyReport:
        """Rewrite the head from the ledger's last record.

        Raises:
            AgentRestricted: inside an agent session.
        """
        refuse_in_agent_session(session, "verify-ledger --reset-head")
        return self._move_head()

    def _move_head(self) -> VerifyReport:
        """Make the ledger's last record the head, indexing the records it acknowledges.

        Raises:
            LedgerError: a record past the indexed ones cannot be read; nothing moved.
        """
        dirty: set[int] = set()
        with self.env.begin(write=True) as txn:
            last = self._last_record(txn)
            raw = txn.get(_INDEXED, db=self.dbs.meta)
            indexed = 0 if raw is None else int(_SEQ.unpack(raw)[0])
            if last is not None and indexed > last.seq:
                # Records the indexes reflect were removed: only a rebuild is right.
                self._index_records(txn, 0, dirty, rebuild=True)
            elif last is not None:
                self._index_records(txn, indexed, dirty)
            if last is not None:
                self.head_file.write(last, None)
        self.sync()
        self.head, self.head_error = last, None
        self._forget_columns()
        return self.verify()

    def compact(self, now_ms: int) -> Compacted:
        """Rewrite the ledger without the text of purged traces, and re-chain it.

        Each purged trace's remember record becomes a ``redacted`` record (id,
        kind, time: no text); every other payload keeps its exact bytes. The
        chain is recomputed from genesis and ends with a ``compacted`` record
        naming the head it replaced, so the rewrite is itself in the audit
        trail (a head pinned before it no longer matches: compare it with that
        record). The indexes are rebuilt in the same transaction, then the file
        is copied without its free pages, so the old text is not left in
        unused pages either. Nothing is done when no purged text remains.

        Raises:
            ConflictError: the ledger has an unacknowledged tail.
        """
        old_head = self.head
        with self._gate.shared(), self.env.begin(write=True) as txn:
            last = self._last_record(txn)
            if self.head_error is not None or last != old_head or last is None:
                raise ConflictError(
                    "the ledger has records no write acknowledged: run hikmah verify-ledger"
                    " and accept or reset the head before compacting"
                )
            records = [decode_record(bytes(line)) for _key, line in txn.cursor(db=self.dbs.ledger)]
            payloads = [decode_payload(record) for record in records]
            purged = {p.id for p in payloads if isinstance(p, PurgePayload)}
            bodies, redacted = [], []
            for record, payload in zip(records, payloads, strict=True):
                if isinstance(payload, RememberPayload | Sealed) and payload.trace.id in purged:
                    trace = payload.trace
                    stub = RedactedPayload(
                        id=trace.id, kind=trace.kind, created_at=trace.created_at
                    )
                    bodies.append(PAYLOAD_ENCODER.encode(stub))
                    redacted.append(trace.id)
                else:
                    bodies.append(record.payload)
            if not redacted:
                return Compacted(
                    old_head=old_head, head=old_head, records=len(records), redacted=[]
                )
            final = CompactedPayload(
                old_seq=last.seq, old_hash=last.hash, redacted=len(redacted), at=now_ms
            )
            bodies.append(PAYLOAD_ENCODER.encode(final))
            prev = GENESIS
            for seq, body in enumerate(bodies, 1):
                record = encode_record(seq, prev, body)
                txn.put(_SEQ.pack(seq), record.line, db=self.dbs.ledger)
                prev = record.hash
            new_head = Head(seq=len(bodies), hash=prev)
            self._index_records(txn, 0, set(), rebuild=True)
            self.head_file.write(old_head, new_head)  # pending: see the module docstring
        self.sync()
        self.head_file.write(new_head, None)
        self.head = new_head
        self._forget_columns()
        self._drop_free_pages()
        return Compacted(old_head=old_head, head=new_head, records=len(bodies), redacted=redacted)

    def _scrub(self) -> None:
        """Drop the free pages a purge left (they may hold its destroyed data key)."""
        self._drop_free_pages()
        with self._gate.shared(), self.env.begin(write=True) as txn:
            txn.delete(_SCRUB, db=self.dbs.meta)
        self.sync()

    def rotate(self, keys: Keys) -> int:
        """Re-wrap every data key not under ``keys.master`` under it, in one transaction.

        The sealed payloads do not change. Returns how many keys were re-wrapped;
        after it returns (durably), the retired masters open nothing and the
        keyring may forget them.
        """
        self.use_keys(keys)
        count = 0
        with self._gate.shared(), self.env.begin(write=True) as txn:
            cursor = txn.cursor(db=self.dbs.keys)
            for key, entry in cursor:
                new = rewrapped(keys, bytes(key).decode(), bytes(entry))
                if new is not None:
                    cursor.put(key, new)
                    count += 1
        self.sync()
        return count

    def _drop_free_pages(self) -> None:
        """Replace the LMDB file by a copy without free pages (old versions of data).

        Waits for every reader and writer of this store to finish, and holds
        new ones off for the copy (under a second per 100k traces).
        """
        copy_dir = self.data_dir / "compact.tmp"
        shutil.rmtree(copy_dir, ignore_errors=True)
        copy_dir.mkdir(mode=0o700)
        with self._gate.exclusive():
            map_size = int(self.env.info()["map_size"])
            self.env.copy(str(copy_dir), compact=True)
            copied = copy_dir / "data.mdb"
            fsync_file(copied)
            self.env.close()
            os.replace(copied, self.data_dir / LMDB_DIR / "data.mdb")
            fsync_dir(self.data_dir / LMDB_DIR)
            self.env, self.dbs = self._open_env(map_size, self.dbs.vault)
        shutil.rmtree(copy_dir, ignore_errors=True)
        self._forget_columns()

    def rebuild_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Recreate every derived index from the ledger; returns the records replayed."""
        dirty: set[int] = set()
        with self.env.begin(write=True) as txn:
            count = self._index_records(txn, 0, dirty, rebuild=True, progress=progress)
        self.sync()
        self._forget_columns()
        return count

    def _index_records(
        self,
        txn: Any,
        after: int,
        dirty: set[int],
        *,
        rebuild: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Apply the ledger records after seq ``after`` to the indexes (all of them, from
        empty indexes, when ``rebuild``); returns how many were applied."""
        if rebuild:
            for db in self.dbs.derived():
                txn.drop(db, delete=False)
            txn.delete(b"next_doc", db=self.dbs.meta)
            txn.delete(_INDEXED, db=self.dbs.meta)
            after = 0
        count = 0
        cursor = txn.cursor(db=self.dbs.ledger)
        if cursor.set_range(_SEQ.pack(after + 1)):
            for key, line in cursor:
                record = decode_record(bytes(line))
                index.apply_payload(txn, self.dbs, decode_payload(record), dirty)
                txn.put(_INDEXED, bytes(key), db=self.dbs.meta)
                count += 1
                if progress is not None and count % 10_000 == 0:
                    progress(count)
        return count

    def _forget_columns(self) -> None:
        with self._lock:
            self._columns = None
            self._changes.clear()


def _reminder_key(trace_id: str, stage: Stage) -> bytes:
    return f"{trace_id}\0{stage}".encode()
