"""The free pages of a store's LMDB file dropped: the file replaced by a compact copy.

Free pages hold old versions of data. After a purge under the vault one may hold the
purged trace's destroyed data key, so the batch marks the store (``scrub``) and its
free pages are dropped at once; a scrub a crash cut short is finished at the next open.
"""

from __future__ import annotations

import os
import shutil

from hikmah.model.durable import fsync_dir, fsync_file
from hikmah.store.handle import StoreHandle
from hikmah.store.opening import LMDB_DIR, open_env

SCRUB = b"scrub"  # meta: a destroyed data key may remain in free pages until they are dropped


def drop_free_pages(store: StoreHandle) -> None:
    """Replace the LMDB file by a copy without free pages (old versions of data).

    Waits for every reader and writer of this store to finish, and holds
    new ones off for the copy (under a second per 100k traces).
    """
    copy_dir = store.data_dir / "compact.tmp"
    shutil.rmtree(copy_dir, ignore_errors=True)
    copy_dir.mkdir(mode=0o700)
    with store.gate.exclusive():
        map_size = int(store.env.info()["map_size"])
        store.env.copy(str(copy_dir), compact=True)
        copied = copy_dir / "data.mdb"
        fsync_file(copied)
        store.env.close()
        os.replace(copied, store.data_dir / LMDB_DIR / "data.mdb")
        fsync_dir(store.data_dir / LMDB_DIR)
        store.env, store.dbs = open_env(
            store.data_dir, map_size, durable=store.durable, keys=store.dbs.vault
        )
    shutil.rmtree(copy_dir, ignore_errors=True)
    store.columns.forget()


def scrub(store: StoreHandle) -> None:
    """Drop the free pages a purge left (they may hold its destroyed data key)."""
    drop_free_pages(store)
    with store.transaction() as snapshot:
        snapshot.txn.delete(SCRUB, db=snapshot.dbs.meta)
    store.sync()


def finish_scrub(store: StoreHandle) -> None:
    """Scrub ``store`` if a purge marked it and a crash came before its scrub."""
    with store.env.begin() as txn:
        marked = txn.get(SCRUB, db=store.dbs.meta) is not None
    if marked:
        scrub(store)
