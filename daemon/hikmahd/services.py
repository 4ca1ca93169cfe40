"""What the daemon's method handlers may use: its parts, never the daemon itself.

The composition root (:mod:`hikmahd.daemon`) builds one :class:`Services`
and every connection's :class:`~hikmahd.context.Context` carries it. The
store is seen through :class:`Reads` only: every change goes through the
writer, and store maintenance runs in the writer's turn
(:meth:`~hikmahd.writer.Writer.exclusive`), which hands it the store.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from hikmah.access.presence import PresenceState
from hikmah.index.snapshot import Snapshot
from hikmah.model.head import Head
from hikmah.model.policy import KernelPolicy

from .capsules import Capsules
from .events import Events
from .peers import Restrictions
from .policywatch import PolicyHolder
from .prescreen import Prescreen
from .reminders import Reminders
from .scheduling import Offload, Recalls
from .semantics import Semantics
from .syncing import Syncing
from .tickets import Tickets
from .vaulting import Vault
from .writer import Writer

P = ParamSpec("P")
T = TypeVar("T")


class Reads(Protocol):
    """The store as handlers see it: snapshots to read, and where it lives."""

    @property
    def data_dir(self) -> Path: ...

    @property
    def head(self) -> Head | None: ...

    @property
    def durable_head(self) -> Head | None: ...

    @property
    def vault_id(self) -> str | None: ...

    @property
    def presence_read(self) -> bool: ...

    @property
    def presence(self) -> PresenceState: ...

    def snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def read(
        self, query: Callable[Concatenate[Snapshot, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


@dataclass
class Services:
    """The daemon's parts a method handler may use."""

    store: Reads
    writer: Writer
    recalls: Recalls
    reminders: Reminders
    events: Events
    capsules: Capsules
    policies: PolicyHolder
    semantics: Semantics
    prescreen: Prescreen
    restrictions: Restrictions
    tickets: Tickets
    vault: Vault | None
    syncing: Syncing
    now_ms: Callable[[], int]
    offload: Offload
    started: float  # time.monotonic() at start, for the uptime
    socket_path: Path  # where the daemon listens (under socket activation: systemd's)
    # Stop serving, as on SIGTERM (queued writes are committed first); the reason is logged.
    stop: Callable[[str], None]
    socket_activated: bool = False  # systemd passed the socket: its unit starts a new daemon

    @property
    def policy(self) -> KernelPolicy:
        return self.policies.policy

    async def presence_read(self) -> None:
        """Return once person presence is read from the ledger (at once after the first
        moments of a start), waiting off the event loop: the read holds the store's
        presence lock meanwhile."""
        store = self.store
        if not store.presence_read:
            await self.offload(lambda: store.presence)
