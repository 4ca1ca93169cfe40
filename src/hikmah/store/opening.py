"""Opening a store's LMDB environment: the file and its databases, and the vault's id.

:class:`~hikmah.store.core.Store` opens its environment here when it starts, and again
when its file is replaced by a compact copy (:mod:`hikmah.store.free_pages`).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import lmdb

from hikmah.index.layout import SEALED_MARK, Databases
from hikmah.vault.crypto import VaultLocked
from hikmah.vault.sealing import Keys

LMDB_DIR = "lmdb"
_VAULT_ID = b"vault_id"  # meta: names this data directory's keys in the keyring


def open_env(
    data_dir: Path, map_size: int, *, durable: bool, keys: Keys | None
) -> tuple[Any, Databases]:
    """The environment in ``data_dir`` (created when there is none) and its databases,
    sealing and opening with ``keys``."""
    # py-lmdb would create the directory with the file mode (no x bit).
    (data_dir / LMDB_DIR).mkdir(mode=0o700, exist_ok=True)
    env = lmdb.open(
        str(data_dir / LMDB_DIR),
        map_size=map_size,
        max_dbs=32,
        # The commit syncs the data pages; the meta page is synced by Store.sync,
        # which the writer overlaps with the next batch (see Store.apply).
        sync=durable,
        metasync=False,
        readahead=False,
        mode=0o600,
    )
    dbs = {name: env.open_db(name.encode()) for name in Databases.names()}
    return env, Databases(**dbs, vault=keys)


def vault_id(env: Any, dbs: Databases, data_dir: Path, *, vault: bool) -> str | None:
    """The id that names this data directory's keys in the keyring: made on the first
    open with the ``vault`` on, kept when it goes off.

    Raises:
        VaultLocked: the vault is off and the store holds sealed traces.
    """
    with env.begin(write=True) as txn:
        sealed = txn.get(SEALED_MARK, db=dbs.meta) is not None
        found = txn.get(_VAULT_ID, db=dbs.meta)
        if vault and found is None:
            found = secrets.token_hex(8).encode()
            txn.put(_VAULT_ID, found, db=dbs.meta)
    if not vault and sealed:
        raise VaultLocked(
            f"{data_dir} holds encrypted traces and the vault is off: set"
            " [vault] enabled = true in the policy and start hikmahd with the keyring"
            " that holds its keys"
        )
    return None if found is None else bytes(found).decode()
