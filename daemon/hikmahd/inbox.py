"""The review inbox's count, kept for the person: a desktop notification when the first
held trace arrives, and ``review.waiting`` to event subscribers whenever it changes.

Whether a trace is held is the kernel's (:mod:`hikmah.index.review`); this only watches the
durable batches that can change the count (an agent's write, a supersede, a purge,
another device's records) and counts again after them, off the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import trio

from hikmah.index import review
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import source_class
from hikmah.rules.operations import Applied, Outcome, Written
from hikmah.store.core import Store

from .events import Events
from .notify import DesktopNotifier
from .scheduling import Offload

log = logging.getLogger(__name__)


def _may_change(outcomes: Sequence[Outcome | Applied]) -> bool:
    for outcome in outcomes:
        if isinstance(outcome, Applied):
            if outcome.records:
                return True
        elif isinstance(outcome, Written):
            trace = outcome.trace
            if trace is None or trace.supersedes is not None or source_class(trace) == "agent":
                return True
    return False


class Inbox:
    def __init__(
        self,
        store: Store,
        events: Events,
        notifier: DesktopNotifier,
        policy: Callable[[], KernelPolicy],
        offload: Offload,
    ) -> None:
        self.store, self.events, self.notifier = store, events, notifier
        self.policy, self.offload = policy, offload
        self.waiting = 0
        self._changed = trio.Event()

    def on_commit(self, outcomes: Sequence[Outcome | Applied]) -> None:
        if _may_change(outcomes):
            self._changed.set()

    def policy_changed(self) -> None:
        self._changed.set()  # [review] may hold more, or less

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Count what waits (no notification for what waited before the start), then
        count again after every batch that may change it."""
        self.waiting = await self._count()
        task_status.started()
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            before, self.waiting = self.waiting, await self._count()
            if self.waiting == before:
                continue
            self.events.publish("review.waiting", {"waiting": self.waiting})
            if before == 0:
                await self.notifier.notify(
                    "A memory from an agent awaits your review",
                    "No agent reads it until you accept it: hikmah review",
                    critical=False,
                )

    async def _count(self) -> int:
        policy = self.policy().review
        found: int = await self.offload(lambda: self.store.read(review.waiting, policy))
        return found
