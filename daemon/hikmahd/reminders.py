"""The promise queue's timer: sleep until the next reminder stage falls due, deliver it.

Delivery goes to event subscribers (``reminder.due``) and to the desktop,
then is recorded durably, so a restart neither loses nor repeats it (at
least once: a crash between delivery and record repeats that one stage).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import trio

from hikmah.index import queries
from hikmah.model.deadlines import format_ms
from hikmah.model.errors import HikmahError
from hikmah.rules.operations import Applied, Outcome, Written
from hikmah.store.core import Store
from hikmah.store.reminders import mark_reminded
from hikmah.working.promises import PromiseQueue, Reminder, Stage

from .events import Events
from .notify import DesktopNotifier
from .scheduling import Offload
from .writer import Writer

log = logging.getLogger(__name__)

# Wake at least this often, so a wall clock that jumped (suspend, NTP) is noticed.
MAX_SLEEP_S = 30.0
MINUTE_MS = 60_000
# A client subscribing this soon after a reminder fired still gets it, marked replayed.
REPLAY_MS = 10 * MINUTE_MS


class Reminders:
    def __init__(
        self,
        store: Store,
        writer: Writer,
        events: Events,
        notifier: DesktopNotifier | None,
        now_ms: Callable[[], int],
        lead_minutes: int,
        offload: Offload,
    ) -> None:
        self.store, self.writer, self.events, self.notifier = store, writer, events, notifier
        self.now_ms, self.offload = now_ms, offload
        self.queue = PromiseQueue(lead_minutes * MINUTE_MS)
        self._wake = trio.Event()
        # Commits seen while the queue is being loaded, applied once it is.
        self._early: list[Sequence[Outcome | Applied]] | None = []
        self.delivered = 0
        self.recording = 0  # delivery records not yet durable
        self.recent: deque[tuple[int, dict[str, Any]]] = deque()

    def on_commit(self, outcomes: Sequence[Outcome | Applied]) -> None:
        """Keep the queue in step with what was written."""
        if self._early is not None:
            self._early.append(outcomes)
            return
        self._apply(outcomes)
        self._wake.set()

    def set_lead(self, lead_minutes: int) -> None:
        self.queue.set_lead(lead_minutes * MINUTE_MS)
        self._wake.set()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load the queue from the store, then deliver reminders as they fall due."""
        await self._load()
        for outcomes in self._early or ():
            self._apply(outcomes)
        self._early = None
        log.info("promise queue loaded: %d commitments scheduled", len(self.queue))
        task_status.started()
        async with trio.open_nursery() as deliveries:
            while True:
                now = self.now_ms()
                due = self.queue.pop_due(now)
                if due:
                    await self._deliver(due, now, deliveries)
                    continue
                next_due = self.queue.next_due()
                delay = MAX_SLEEP_S if next_due is None else (next_due - now) / 1000
                with trio.move_on_after(min(max(delay, 0.0), MAX_SLEEP_S)):
                    await self._wake.wait()
                self._wake = trio.Event()

    def _apply(self, outcomes: Sequence[Outcome | Applied]) -> None:
        for outcome in outcomes:
            if not isinstance(outcome, Written):
                continue
            trace = outcome.trace
            if trace is None:
                if outcome.status != "active":  # fulfilled or purged, not feedback or a pin
                    self.queue.cancel(outcome.id)
                continue
            for gone in (trace.supersedes, trace.fulfills):
                if gone is not None:
                    self.queue.cancel(gone)
            if trace.kind == "commitment" and trace.deadline is not None:
                self.queue.schedule(trace.id, trace.deadline, trace.created_at)

    async def _deliver(self, due: list[Reminder], now: int, nursery: trio.Nursery) -> None:
        settled = []
        for count, reminder in enumerate(due, 1):
            try:
                stored = self.store.read(queries.get, reminder.trace_id)
            except HikmahError:
                continue  # purged meanwhile
            if stored.status != "active":
                continue
            trace = stored.trace
            params = {
                "trace": msgspec.to_builtins(trace),
                "due_at": reminder.due_at,
                "stage": reminder.stage,
                "late": reminder.late,
            }
            self.events.publish("reminder.due", params)
            self.recent.append((now, params))
            if self.notifier is not None:
                overdue = reminder.stage == "overdue"
                summary = ("Overdue: " if overdue else "Due soon: ") + trace.content[:80]
                body = f"{trace.content}\n\ndue {format_ms(reminder.deadline)} · {trace.id}"
                nursery.start_soon(self._notify, summary, body, overdue)
            settled += [(reminder.trace_id, stage) for stage in reminder.settles]
            self.delivered += 1
            if count % 64 == 0:
                await trio.lowlevel.checkpoint()  # let subscribers drain a long burst
        self._forget_old(now)
        if settled:
            # Recorded off the timer's path, so closely spaced reminders do not queue
            # behind the write; a crash before it lands repeats them (at least once).
            self.recording += 1
            nursery.start_soon(self._record, settled, now)

    async def _record(self, settled: list[tuple[str, Stage]], now: int) -> None:
        try:
            await self.writer.exclusive(lambda store: mark_reminded(store, settled, now))
        except HikmahError as exc:
            log.error("could not record delivered reminders (they may repeat): %s", exc)
        finally:
            self.recording -= 1

    def replay(self, now: int) -> list[dict[str, Any]]:
        """Reminders delivered in the last few minutes, for a client that subscribes late
        (one that fired at start for a commitment that fell due while the daemon was down)."""
        self._forget_old(now)
        return [{**params, "replayed": True} for _at, params in self.recent]

    def _forget_old(self, now: int) -> None:
        while self.recent and self.recent[0][0] < now - REPLAY_MS:
            self.recent.popleft()

    async def reload(self) -> None:
        """Rebuild the queue from the store (after a person accepted a ledger tail)."""
        self.queue = PromiseQueue(self.queue.lead_ms)
        await self._load()
        self._wake.set()

    async def _load(self) -> None:
        scheduled = await self.offload(lambda: self.store.read(queries.scheduled))
        for count, entry in enumerate(scheduled, 1):
            self.queue.schedule(entry.trace_id, entry.deadline, entry.created_at, entry.delivered)
            if count % 4096 == 0:
                await trio.lowlevel.checkpoint()  # a long queue must not stall requests

    async def _notify(self, summary: str, body: str, critical: bool) -> None:
        assert self.notifier is not None
        await self.notifier.notify(summary, body, critical=critical)
