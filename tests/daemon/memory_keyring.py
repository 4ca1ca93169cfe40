"""A keyring backend that keeps the vault's keys in the daemon's own memory.

A daemon started with ``PYTHON_KEYRING_BACKEND=tests.daemon.memory_keyring.MemoryKeyring``
runs its vault for real (sealed text, keys destroyed by a purge, rotation) with no
Secret Service to start; its keys die with the process, which suits a test's daemon.
"""

from __future__ import annotations

from keyring.backend import KeyringBackend

BACKEND = f"{__name__}.MemoryKeyring"


class MemoryKeyring(KeyringBackend):
    """Entries by (service, user), for this process's life."""

    priority = -1  # never picked by keyring itself

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[service, username] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)
