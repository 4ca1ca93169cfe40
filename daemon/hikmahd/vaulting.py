"""The vault in the daemon: keys from the keyring when the store opens, and rotation
(its methods are :mod:`hikmahd.handlers.vault`).

The store names its keys by a vault id it keeps in its own meta data (so a
backup restored elsewhere finds the same keyring entries); :meth:`Vault.load`
is the loader the store calls with it. Keyring calls block (D-Bus), so they
run before the event loop starts or in the writer's thread.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hikmah.model.errors import PolicyError
from hikmah.model.policy import load_policy
from hikmah.semantic.vector_file import rewrap_vectors
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.vault.crypto import VaultError

from .keys import Keyring, VaultKeys

log = logging.getLogger(__name__)
VAULT_OFF = "the vault is off: set [vault] enabled = true and restart hikmahd"


class Vault:
    """The keyring and the keys of one data directory's vault."""

    def __init__(self) -> None:
        self._keyring: Keyring | None = None
        self.keys: VaultKeys | None = None
        self.backend = ""

    def load(self, vault_id: str) -> VaultKeys:
        """The keys of ``vault_id``, created on first use (the store's loader).

        Raises:
            VaultError: no usable keyring backend, or its entries were changed.
            VaultLocked: the keyring is locked or unreachable.
        """
        self._keyring = Keyring(vault_id)
        self.backend = self._keyring.check_backend()
        self.keys = self._keyring.load_or_create()
        return self.keys

    def settle(self, store: Store) -> None:
        """Finish a rotation a crash interrupted (at start, before serving)."""
        if self.keys is None or not self.keys.retiring:
            return
        try:
            self._rewrap(store)
        except VaultError as exc:
            # Keys under a master that left the keyring cannot be re-wrapped; the
            # rest of the store still serves.
            log.error("vault: the interrupted rotation could not finish: %s", exc)

    def rotate(self, store: Store) -> int:
        """Make a new master current and re-wrap every data key under it.

        Returns:
            How many data keys were re-wrapped.
        """
        keyring = self._opened()
        self.keys = keyring.begin_rotation()
        store.use_keys(self.keys)  # new traces are wrapped under the new master at once
        return self._rewrap(store)

    def _rewrap(self, store: Store) -> int:
        keyring, keys = self._opened(), self.keys
        assert keys is not None
        count = maintenance.rotate(store, keys)  # durable when it returns
        rewrap_vectors(store.data_dir, keys)  # the vector file's key, too
        for old in keys.retiring:
            keyring.finish_rotation(old)
        self.keys = keyring.load_or_create()
        store.use_keys(self.keys)
        log.info("vault: %d data keys re-wrapped under master %s", count, self.keys.master_id)
        return count

    @property
    def keyring(self) -> Keyring:
        """The keyring of this data directory (other secrets live beside the vault's)."""
        return self._opened()

    def _opened(self) -> Keyring:
        if self._keyring is None:
            raise VaultError(VAULT_OFF)
        return self._keyring


def vault_for(policy_path: Path) -> Vault | None:
    """A vault when the policy file enables it, else None.

    An unreadable or invalid file counts as the defaults (vault off), as it
    does for the rest of the policy; the daemon reports the file's error.
    """
    try:
        policy = load_policy(policy_path)
    except PolicyError:
        return None
    return Vault() if policy.vault.enabled else None
