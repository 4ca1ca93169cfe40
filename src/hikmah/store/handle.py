"""What the store's jobs outside its core (indexing, free pages, the vectors) use of a
:class:`~hikmah.store.core.Store`: they take this, so the core they are called from
is not imported by them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hikmah.index.layout import Databases
from hikmah.index.snapshot import FeatureCache, Snapshot
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.store.gate import Gate

T = TypeVar("T")


class StoreHandle(Protocol):
    data_dir: Path
    durable: bool
    env: Any  # the LMDB environment (replaced when free pages are dropped)
    dbs: Databases
    gate: Gate
    columns: FeatureCache
    semantic: SemanticIndex | None

    def snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def transaction(self) -> AbstractContextManager[Snapshot]: ...

    def sync(self) -> None: ...

    def growing(self, write: Callable[[], T]) -> T: ...
