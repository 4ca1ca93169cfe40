"""Shared fixtures for kernel tests: a real LMDB store in a temp dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hikmah.errors import HikmahError
from hikmah.policy import KernelPolicy
from hikmah.store import Operation, Remember, Store, Written
from hikmah.trace import Draft, Trace
from hikmah.vault import IndexKey, MasterKey, VaultLocked, key_id, new_index_key, new_master_key

NOW = 1_790_000_000_000
DAY = 86_400_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "data", map_size=1 << 24) as opened:
        yield opened


def write(store: Store, *ops: Operation, now: int = NOW) -> list[Written]:
    """Apply operations that must all succeed."""
    outcomes = store.apply(ops, now_ms=now, policy=KernelPolicy())
    for outcome in outcomes:
        if isinstance(outcome, HikmahError):
            raise outcome
    return [o for o in outcomes if isinstance(o, Written)]


def remember(store: Store, content: str, now: int = NOW, **fields: object) -> Trace:
    """Write one trace and return it."""
    (written,) = write(store, Remember(draft=Draft(content=content, **fields)), now=now)  # type: ignore[arg-type]
    assert written.trace is not None
    return written.trace


@dataclass(frozen=True)
class HeldKeys:
    """Vault keys held in memory: the kernel takes its keys from the daemon and never
    sees the keyring (tests/daemon/test_vault*.py use a real Secret Service)."""

    master: MasterKey = field(default_factory=new_master_key)
    index: IndexKey = field(default_factory=new_index_key)
    retiring: Mapping[str, MasterKey] = field(default_factory=dict)

    @property
    def master_id(self) -> str:
        return key_id(self.master)

    @property
    def index_id(self) -> str:
        return key_id(self.index)

    def master_for(self, wrapped_by: str) -> MasterKey:
        if wrapped_by == self.master_id:
            return self.master
        if wrapped_by in self.retiring:
            return self.retiring[wrapped_by]
        raise VaultLocked(f"no master key {wrapped_by}")

    def rotated(self) -> HeldKeys:
        """A new current master, this one retiring."""
        return HeldKeys(index=self.index, retiring={self.master_id: self.master})

    def loader(self) -> Callable[[str], HeldKeys]:
        return lambda _vault_id: self
