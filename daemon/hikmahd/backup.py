"""``hikmah backup DIR`` and ``hikmahd --restore DIR``: a consistent copy, checked before use.

A backup directory holds what a data directory holds, and a manifest::

    DIR/lmdb/data.mdb   LMDB's compacting copy of the environment
    DIR/head            the acknowledged head of that copy
    DIR/sync/device.key the sync signing key, when it is a file (vault off; docs/sync.md)
    DIR/manifest.json   format, version, records, head, time, size and BLAKE3 of data.mdb

**The head matches the copy.** The copy is taken from one read snapshot
(``env.copy(compact=True, txn=…)``), and that transaction is opened, with its last
record and the acknowledged head read, in the writer's turn between batches
(:meth:`~hikmahd.writer.Writer.exclusive`, a few microseconds): then every
committed record is acknowledged, so the snapshot's last record *is* the head
(records appended behind the daemon's back are a tail: the backup is refused
until a person has inspected them with ``verify-ledger``). The copy itself runs
outside that turn, so the daemon keeps serving reads and writes meanwhile;
later writes are simply not in the backup. The copy is verified against its
head before the manifest, written last, makes it a backup at all.

**Restore** refuses a backup that does not check out (manifest, size and
checksum of the data file, head file, every record's hash and link, record
count) and changes nothing then. Otherwise it stages the backup beside the
data directory, moves the current one aside (``<data>.before-restore-<time>``)
and renames the staged copy into place: both renames are atomic, and a crash
between them leaves both directories whole, side by side (``<data>.restoring-…``
and ``<data>.before-restore-…``), for a person to rename.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import lmdb
import msgspec

from hikmah import __version__
from hikmah.index import queries
from hikmah.ledger.chain import decode_record, verify
from hikmah.ledger.headfile import HeadFile
from hikmah.model.digests import file_blake3
from hikmah.model.durable import fsync_dir, fsync_file, write_atomic
from hikmah.model.errors import HikmahError, InvalidInput, LedgerError
from hikmah.model.head import Head
from hikmah.semantic.vector_file import remove_vectors
from hikmah.store import maintenance
from hikmah.store.core import HEAD_FILE, Store
from hikmah.store.opening import LMDB_DIR
from hikmah.vault.sealing import Keys

from .synckeys import KEY_FILE, SYNC_DIR

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
DATA_FILE = "data.mdb"
FORMAT: Literal["hikmah-backup"] = "hikmah-backup"
VERSION = 1


class BackupError(HikmahError):
    """A backup cannot be made, or a backup directory is not one that can be restored."""

    reason = "ledger"


class Manifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a backup says about itself; restore checks the files against it.

    Attributes:
        format: Always ``hikmah-backup``.
        version: The backup layout version (1).
        hikmah: The version of hikmahd that made it.
        created_at: When, in epoch milliseconds.
        records: Ledger records in the copy.
        head: The acknowledged head of the copy (None for an empty store).
        data_bytes: Size of ``lmdb/data.mdb``.
        data_blake3: Hex BLAKE3 of ``lmdb/data.mdb``.
    """

    format: Literal["hikmah-backup"]
    version: int
    hikmah: str
    created_at: int
    records: int
    head: Head | None
    data_bytes: int
    data_blake3: str


@dataclass
class Pinned:
    """A read transaction of the live store, pinned with the head that goes with it."""

    env: Any
    txn: Any
    last: Head | None
    head: Head | None
    head_error: str | None
    data_dir: Path
    _open: bool = True

    def close(self) -> None:
        if self._open:
            self._open = False
            self.txn.abort()


def prepare_dir(target: Path) -> None:
    """Make ``target`` an empty directory of mode 0700 (creating it if needed).

    Raises:
        InvalidInput: it is relative, not a directory, or not empty.
    """
    if not target.is_absolute():
        raise InvalidInput("give the backup directory as an absolute path")
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        if any(target.iterdir()):
            raise InvalidInput(
                f"{target} is not empty: a backup goes into a new or empty directory"
            )
        target.chmod(0o700)
    except NotADirectoryError:
        raise InvalidInput(f"{target} is not a directory") from None
    except FileExistsError:
        raise InvalidInput(f"{target} exists and is not a directory") from None
    except OSError as exc:
        raise InvalidInput(f"cannot use {target} for a backup: {exc.strerror}") from None


def pin(store: Store) -> Pinned:
    """Open the read transaction a backup copies. Call it in the writer's turn, between
    batches."""
    txn = store.env.begin()
    opened = False
    try:
        cursor = txn.cursor(db=store.dbs.ledger)
        last = decode_record(bytes(cursor.value())) if cursor.last() else None
        opened = True
    finally:
        if not opened:
            txn.abort()
    return Pinned(
        env=store.env,
        txn=txn,
        last=None if last is None else Head(seq=last.seq, hash=last.hash),
        head=store.head,
        head_error=store.head_error,
        data_dir=store.data_dir,
    )


def write_backup(pinned: Pinned, target: Path, now_ms: int) -> Manifest:
    """Copy the pinned transaction into the empty directory ``target``; closes it.

    Raises:
        BackupError: the store's head is unreadable, or the copy does not verify
            against it (what was written is removed again).
    """
    done = False
    try:
        manifest = _write_backup(pinned, target, now_ms)
        done = True
    finally:
        pinned.close()
        if not done:
            _clear(target)
    return manifest


def _write_backup(pinned: Pinned, target: Path, now_ms: int) -> Manifest:
    if pinned.head_error is not None:
        raise BackupError(
            f"the ledger head is unreadable ({pinned.head_error}): a backup could not"
            " be checked; run hikmah verify-ledger first"
        )
    head = pinned.head
    if pinned.last is not None and (head is None or pinned.last.seq > head.seq):
        raise BackupError(
            "the ledger has records past its acknowledged head: a backup would keep a"
            " tail nobody acknowledged; inspect it with hikmah verify-ledger first"
        )
    (target / LMDB_DIR).mkdir(mode=0o700)
    try:
        pinned.env.copy(str(target / LMDB_DIR), compact=True, txn=pinned.txn)
    except lmdb.Error as exc:
        raise BackupError(f"LMDB could not copy the store ({exc}); nothing was kept") from None
    pinned.close()  # the copy is made: let LMDB reuse the pages it pinned
    data = target / LMDB_DIR / DATA_FILE
    data.chmod(0o600)
    fsync_file(data)
    if head is not None:
        head_file = HeadFile(target / HEAD_FILE)
        head_file.write(head, None)
        head_file.close()
    _copy_device_key(pinned.data_dir, target)
    manifest = Manifest(
        format=FORMAT,
        version=VERSION,
        hikmah=__version__,
        created_at=now_ms,
        records=_verify_copy(target, head),
        head=head,
        data_bytes=data.stat().st_size,
        data_blake3=file_blake3(data),
    )
    # Written last: a directory without it is an unfinished backup, and restore says so.
    write_atomic(
        target / MANIFEST, msgspec.json.format(msgspec.json.encode(manifest)) + b"\n", 0o600
    )
    fsync_dir(target / LMDB_DIR)
    fsync_dir(target)
    log.info("backed up %d ledger records to %s", manifest.records, target)
    return manifest


def check_backup(source: Path) -> Manifest:
    """Check everything a backup directory says about itself.

    Raises:
        BackupError: the first thing that does not check out.
    """
    path = source / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BackupError(
            f"{source} has no {MANIFEST}: it is not a backup, or an unfinished one"
        ) from None
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror}") from None
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BackupError(f"{path} is not a backup manifest: {exc}") from None
    if manifest.version != VERSION:
        raise BackupError(
            f"{source} is a version {manifest.version} backup; this hikmahd reads version {VERSION}"
        )
    data = source / LMDB_DIR / DATA_FILE
    try:
        size = data.stat().st_size
        digest = file_blake3(data)
    except OSError as exc:
        raise BackupError(f"cannot read the backup's data file {data}: {exc.strerror}") from None
    if size != manifest.data_bytes or digest != manifest.data_blake3:
        raise BackupError(
            f"the backup's data file {data} does not match its manifest (size or BLAKE3"
            " checksum): it was changed or damaged after the backup"
        )
    try:
        acknowledged, pending = HeadFile(source / HEAD_FILE).read()
    except LedgerError as exc:
        raise BackupError(f"the backup's head is unreadable: {exc}") from None
    if pending is not None or acknowledged != manifest.head:
        raise BackupError(
            "the backup's head file does not say what its manifest says: it was changed"
            " after the backup"
        )
    records = _verify_copy(source, manifest.head)
    if records != manifest.records:
        raise BackupError(
            f"the backup's ledger has {records} records, its manifest says {manifest.records}"
        )
    return manifest


@dataclass(frozen=True)
class Restored:
    """What a restore did."""

    source: Path
    data_dir: Path
    aside: Path | None
    manifest: Manifest
    counts: dict[str, int]


def restore(
    data_dir: Path, source: Path, now_ms: int, *, vault: Callable[[str], Keys] | None = None
) -> Restored:
    """Install the backup at ``source`` as the data directory, once it checks out.

    Run with the data directory's lock held (no daemon on it).

    Raises:
        BackupError: the backup does not check out, or cannot be installed; the data
            directory is then as it was.
    """
    source = source.absolute()
    manifest = check_backup(source)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))
    current = (data_dir / LMDB_DIR).exists() or (data_dir / HEAD_FILE).exists()
    aside: Path | None = None
    if current:
        staging = _free(data_dir.with_name(f"{data_dir.name}.restoring-{stamp}"))
        staging.mkdir(mode=0o700)
        staged = False
        try:
            _install(source, staging)
            staged = True
        finally:
            if not staged:
                shutil.rmtree(staging, ignore_errors=True)
        aside = _free(data_dir.with_name(f"{data_dir.name}.before-restore-{stamp}"))
        os.rename(data_dir, aside)
        try:
            os.rename(staging, data_dir)
        except OSError as exc:
            os.rename(aside, data_dir)
            shutil.rmtree(staging, ignore_errors=True)
            raise BackupError(f"cannot move the backup into place: {exc.strerror}") from None
        fsync_dir(data_dir.parent)
    else:
        # Vectors left from another store would number other traces: made anew.
        remove_vectors(data_dir)
        _install(source, data_dir)
    with Store(data_dir, vault=vault) as store:
        report = maintenance.verify(store)
        counts = store.read(queries.counts)
    if not report.ok:  # checked above; this would be a bug or a disk going bad
        raise BackupError("the restored ledger does not verify: " + "; ".join(report.errors))
    return Restored(source=source, data_dir=data_dir, aside=aside, manifest=manifest, counts=counts)


def _install(source: Path, target: Path) -> None:
    """Copy the backup's data file and head into the directory ``target``."""
    lmdb_dir = target / LMDB_DIR
    lmdb_dir.mkdir(mode=0o700)
    data = lmdb_dir / DATA_FILE
    shutil.copyfile(source / LMDB_DIR / DATA_FILE, data)
    data.chmod(0o600)
    fsync_file(data)
    if (source / HEAD_FILE).exists():
        head = target / HEAD_FILE
        shutil.copyfile(source / HEAD_FILE, head)
        head.chmod(0o600)
        fsync_file(head)
    _copy_device_key(source, target)
    fsync_dir(lmdb_dir)
    fsync_dir(target)


def _copy_device_key(source: Path, target: Path) -> None:
    """The sync signing key goes with the store it signs for (vault off: a file; with the
    vault it is in the keyring, under the store's vault id, which the copy keeps)."""
    key = source / SYNC_DIR / KEY_FILE
    if not key.is_file():
        return
    (target / SYNC_DIR).mkdir(mode=0o700, exist_ok=True)
    copied = target / SYNC_DIR / KEY_FILE
    shutil.copyfile(key, copied)
    copied.chmod(0o600)
    fsync_file(copied)
    fsync_dir(target / SYNC_DIR)


def _verify_copy(directory: Path, head: Head | None) -> int:
    """Verify the ledger of a copied environment against ``head``; its record count.

    Raises:
        BackupError: it does not verify.
    """
    try:
        env = lmdb.open(
            str(directory / LMDB_DIR), readonly=True, lock=False, max_dbs=16, readahead=False
        )
    except lmdb.Error as exc:
        raise BackupError(f"the backup's LMDB environment cannot be opened: {exc}") from None
    try:
        with env.begin() as txn:
            try:
                ledger = env.open_db(b"ledger", txn=txn, create=False)
            except lmdb.NotFoundError:
                ledger = None
            rows = (
                []
                if ledger is None
                else [
                    (int.from_bytes(key, "big"), bytes(value))
                    for key, value in txn.cursor(db=ledger)
                ]
            )
    except lmdb.Error as exc:
        raise BackupError(f"the backup's ledger cannot be read: {exc}") from None
    finally:
        env.close()
    report = verify(rows, head)
    if not report.ok:
        raise BackupError("the backup's ledger does not verify: " + "; ".join(report.errors))
    return report.records


def _free(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``… if taken."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _clear(target: Path) -> None:
    """Remove what a failed backup wrote, leaving ``target`` empty."""
    for child in target.iterdir():
        with contextlib.suppress(OSError):
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()


def summary(restored: Restored) -> str:
    """What a restore did, for the person who ran it."""
    manifest = restored.manifest
    taken = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(manifest.created_at / 1000))
    head = manifest.head
    counts = ", ".join(f"{n} {status}" for status, n in restored.counts.items() if n)
    lines = [
        f"restored {manifest.records} ledger records from {restored.source} (taken {taken})",
        f"ledger verified; head {head.seq}:{head.hash}" if head else "empty ledger",
        f"traces: {counts or 'none'}",
    ]
    if restored.aside is not None:
        lines.append(f"the previous data directory was moved to {restored.aside}")
    lines.append(f"installed in {restored.data_dir}; start hikmahd to serve it")
    return "\n".join(lines)
