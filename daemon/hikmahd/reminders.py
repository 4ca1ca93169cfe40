"""The promise queue's timer: sleep until the next reminder stage falls due, deliver it.

Delivery goes to event subscribers (``reminder.due``) and to the desktop,
then is recorded durably, so a restart neither loses nor repeats it (at
least once: a crash between delivery and record repeats that one stage).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import msgspec
import trio

from hikmah.deadlines import format_ms
from hikmah.errors import HikmahError
from hikmah.promises import PromiseQueue, Reminder
from hikmah.store import Outcome, Store, Written

from .events import Events
from .notify import DesktopNotifier
from .writer import Writer

log = logging.getLogger(__name__)

# Wake at least this often, so a wall clock that jumped (suspend, NTP) is noticed.
MAX_SLEEP_S = 30.0
MINUTE_MS = 60_000


class Reminders:
    def __init__(
        self,
        store: Store,
        writer: Writer,
        events: Events,
        notifier: DesktopNotifier | None,
        now_ms: Callable[[], int],
        lead_minutes: int,
    ) -> None:
        self.store, self.writer, self.events, self.notifier = store, writer, events, notifier
        self.now_ms = now_ms
        self.queue = PromiseQueue(lead_minutes * MINUTE_MS)
        self._wake = trio.Event()
        # Commits seen while the queue is being loaded, applied once it is.
        self._early: list[Sequence[Outcome]] | None = []
        self.delivered = 0

    def on_commit(self, outcomes: Sequence[Outcome]) -> None:
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
        for entry in await self.writer.offload(self.store.scheduled):
            self.queue.schedule(entry.trace_id, entry.deadline, entry.created_at, entry.delivered)
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

    def _apply(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes:
            if not isinstance(outcome, Written):
                continue
            trace = outcome.trace
            if trace is None:
                self.queue.cancel(outcome.id)  # fulfilled or purged
                continue
            for gone in (trace.supersedes, trace.fulfills):
                if gone is not None:
                    self.queue.cancel(gone)
            if trace.kind == "commitment" and trace.deadline is not None:
                self.queue.schedule(trace.id, trace.deadline, trace.created_at)

    async def _deliver(self, due: list[Reminder], now: int, nursery: trio.Nursery) -> None:
        settled = []
        for reminder in due:
            try:
                stored = self.store.get(reminder.trace_id)
            except HikmahError:
                continue  # purged meanwhile
            if stored.status != "active":
                continue
            trace = stored.trace
            self.events.publish(
                "reminder.due",
                {
                    "trace": msgspec.to_builtins(trace),
                    "due_at": reminder.due_at,
                    "stage": reminder.stage,
                    "late": reminder.late,
                },
            )
            if self.notifier is not None:
                overdue = reminder.stage == "overdue"
                summary = ("Overdue: " if overdue else "Due soon: ") + trace.content[:80]
                body = f"{trace.content}\n\ndue {format_ms(reminder.deadline)} · {trace.id}"
                nursery.start_soon(self._notify, summary, body, overdue)
            settled += [(reminder.trace_id, stage) for stage in reminder.settles]
            self.delivered += 1
        if settled:
            try:
                await self.writer.exclusive(lambda: self.store.mark_reminded(settled, now))
            except HikmahError as exc:
                log.error("could not record delivered reminders (they may repeat): %s", exc)

    async def _notify(self, summary: str, body: str, critical: bool) -> None:
        assert self.notifier is not None
        await self.notifier.notify(summary, body, critical=critical)
