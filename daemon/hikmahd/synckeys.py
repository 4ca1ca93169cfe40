"""This device's sync secrets: its signing key, and (with the vault) its prekeys.

With the vault on they live in the OS keyring beside the vault's own keys
(entries ``sync-device:<vault id>`` and ``sync-prekeys:<vault id>``, under
service ``hikmah``). Without the vault, the signing key is a file,
``<data dir>/sync/device.key``, mode 0600 in a 0700 directory: the same
protection as the LMDB file it signs the records of (a backup carries it).
No prekey exists without the vault: nothing sealed needs sending.

Every call blocks (D-Bus, files): the daemon runs them through its offload hook.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Final

import msgspec

from hikmah.model.durable import write_atomic
from hikmah.model.errors import LedgerError
from hikmah.sync.device import DeviceKey
from hikmah.sync.envelope import PrekeyPair
from hikmah.vault.crypto import VaultError

from .keys import Keyring

SYNC_DIR: Final = "sync"
KEY_FILE: Final = "device.key"
_DEVICE_ENTRY = "sync-device"
_PREKEYS_ENTRY = "sync-prekeys"


class Prekey(msgspec.Struct, frozen=True):
    """A prekey's private half and the first generation of this device's manifest that
    announced it (when every sender has seen it, the prekeys before it can go)."""

    private: bytes
    since: int


class SyncSecrets:
    """Where this data directory keeps its sync secrets."""

    def __init__(self, data_dir: Path, keyring: Keyring | None) -> None:
        self.path = data_dir / SYNC_DIR / KEY_FILE
        self.keyring = keyring

    def device_key(self) -> DeviceKey:
        """The signing key, made on first use.

        Raises:
            LedgerError: the key file or entry is not a key Hikmah wrote.
            VaultError, VaultLocked: the keyring cannot be used.
        """
        text = self._read()
        if text is None:
            key = DeviceKey.generate()
            self._write(base64.b64encode(key.to_bytes()).decode("ascii"))
            return key
        try:
            return DeviceKey.from_bytes(base64.b64decode(text.strip(), validate=True))
        except (binascii.Error, ValueError, LedgerError):
            where = f"{self.path}" if self.keyring is None else f"keyring entry {_DEVICE_ENTRY}"
            raise LedgerError(
                f"the sync device key in {where} is not one Hikmah wrote: restore it, or"
                " remove it to make this a new device (then pair it again)"
            ) from None

    def prekeys(self) -> list[tuple[PrekeyPair, int]]:
        """The prekeys held, oldest first, each with the generation that announced it."""
        if self.keyring is None:
            return []
        text = self.keyring.read_entry(_PREKEYS_ENTRY)
        if text is None:
            return []
        try:
            held = msgspec.json.decode(text, type=list[Prekey])
            return [(PrekeyPair.from_bytes(p.private), p.since) for p in held]
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            raise VaultError(
                f"the keyring entry {_PREKEYS_ENTRY} is not what Hikmah wrote; remove it and"
                " the paired devices send the keys again"
            ) from None

    def keep_prekeys(self, prekeys: list[tuple[PrekeyPair, int]]) -> None:
        """Hold exactly these prekeys: a prekey left out is destroyed for good."""
        assert self.keyring is not None
        held = [Prekey(pair.to_bytes(), since) for pair, since in prekeys]
        self.keyring.write_entry(_PREKEYS_ENTRY, msgspec.json.encode(held).decode())

    def _read(self) -> str | None:
        if self.keyring is not None:
            return self.keyring.read_entry(_DEVICE_ENTRY)
        try:
            return self.path.read_text(encoding="ascii")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(f"cannot read the sync device key {self.path}: {exc}") from None

    def _write(self, text: str) -> None:
        if self.keyring is not None:
            self.keyring.write_entry(_DEVICE_ENTRY, text)
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(self.path, text.encode("ascii") + b"\n", 0o600)
