"""The one writer: group commit of every write request into durable batches.

Requests queue on a channel. The writer takes everything that is waiting,
commits it as one LMDB transaction in a worker thread (so the sync never
stalls the event loop), then answers each caller. While one batch syncs,
the next one gathers, which is what makes concurrent writers cheap.

Under load a batch also waits a moment for the writes it can expect: callers
that wrote in the last ``RECENT_S`` write again as soon as they are answered,
so the batch waits for one write from each of them, until none came for
``GATHER_QUIET_S`` and at most ``GATHER_MAX_S``. Fewer,
larger batches pay for fewer syncs (docs/performance.md, "Writes"). A lone
writer never waits. The window opens once the batch before is answered
(``ANSWER_WAIT_S`` at most): opened earlier, a slow sync used it up and the
batch split into two smaller ones, a pattern that then kept itself going;
and a batch counted on as many writes as the largest recent batch held, so after
a pause four clients that came back one by one kept to batches of one or two.

The semantic channel's vectors follow each batch as it is applied
(:meth:`~hikmah.store.core.Store.apply`), so a recall by meaning finds what its callers
wrote once they are answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import trio

from hikmah.access.person import PersonKey
from hikmah.model.errors import HikmahError, Unavailable
from hikmah.model.policy import KernelPolicy
from hikmah.rules.operations import Applied, ApplyRemote, Change, Operation, Outcome, Written
from hikmah.store.core import Store

from .scheduling import Offload, in_thread, wall_ms

log = logging.getLogger(__name__)

MAX_BATCH = 512
GATHER_QUIET_S = 0.001  # a gathering batch stops waiting once no write came for this long
GATHER_MAX_S = 0.002  # and never waits longer than this in all
ANSWER_WAIT_S = 0.02  # before which it waits this long at most for the batch before's answer
RECENT_S = 0.1  # the callers that wrote this recently are the writes to expect
T = TypeVar("T")
SHUTTING_DOWN = "the daemon is shutting down: nothing was written"


@dataclass
class _Pending:
    # A write to batch, or a store maintenance call (a head move) to run alone.
    work: Change | Callable[[Store], Any]
    caller: object  # who asked: the nursery of the caller's task (a connection's)
    person: PersonKey | None = None  # signs the person-only records it makes
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


class Writer:
    """Owns every change to the store. Start :meth:`run` in a nursery."""

    def __init__(
        self,
        store: Store,
        policy: Callable[[], KernelPolicy],
        listeners: Sequence[Callable[[Sequence[Outcome | Applied]], None]] = (),
        now_ms: Callable[[], int] = wall_ms,
        offload: Offload = in_thread,
    ) -> None:
        """Make the writer of ``store``.

        Args:
            listeners: called with each batch's outcomes once it is durable, in
                batch order (the promise queue, the event subscribers).
        """
        self.store = store
        self.policy = policy
        self.listeners = listeners
        self.now_ms = now_ms
        self.offload = offload
        # Set once every batch committed so far has been synced and answered.
        self._answered = trio.Event()
        self._answered.set()
        self._send, self._receive = trio.open_memory_channel[_Pending](MAX_BATCH * 4)
        # When each caller last wrote, oldest first: how many writes to gather.
        self._callers: dict[object, float] = {}

    async def submit(self, operation: Operation, *, person: PersonKey | None = None) -> Outcome:
        """Queue one operation; its outcome once durable (or the error refusing it).
        ``person``: the key of the person who proved presence for it, whose signature
        its person-only records carry (:mod:`hikmah.access.person`).

        Raises:
            HikmahError: the whole batch failed (the store is full, the daemon
                is stopping); nothing of it was written.
        """
        result: Outcome = await self._queue(operation, person)
        return result

    async def write(self, operation: Operation, *, person: PersonKey | None = None) -> Written:
        """Queue one operation (``person`` as for :meth:`submit`); what it wrote once
        durable.

        Raises:
            HikmahError: the operation was refused, or the whole batch failed.
        """
        outcome = await self.submit(operation, person=person)
        if isinstance(outcome, HikmahError):
            raise outcome
        return outcome

    async def submit_all(
        self, operations: Sequence[Operation], *, person: PersonKey | None = None
    ) -> list[Outcome]:
        """Submit operations together, so that they share commits; their outcomes, in order.
        They take effect in their order (a correction after the trace it supersedes).

        Raises:
            HikmahError: a batch they were in failed as a whole (the first such error).
        """
        found: list[Outcome] = await self._all(operations, person)
        return found

    async def receive(self, steps: Sequence[ApplyRemote]) -> list[Applied | HikmahError]:
        """Apply paired devices' records (a step each), in batches with the writes."""
        found: list[Applied | HikmahError] = await self._all(steps, None)
        return found

    async def _all(self, operations: Sequence[Change], person: PersonKey | None) -> list[Any]:
        """Queue ``operations`` in their order, at once while the channel has room (so
        that the writer finds them together), and wait for all of them."""
        caller = trio.lowlevel.current_task().parent_nursery
        queued = [_Pending(operation, caller, person) for operation in operations]
        with trio.CancelScope(shield=True):  # as in _queue
            for pending in queued:
                await self._send_now(pending)
            for pending in queued:
                if not pending.done.is_set():  # waiting on a set event is a round of the loop
                    await pending.done.wait()
        for pending in queued:
            if pending.error is not None:
                raise pending.error
        return [pending.result for pending in queued]

    async def exclusive(self, call: Callable[[Store], T]) -> T:
        """Run ``call(store)`` off the event loop in the writer's turn, between batches:
        store maintenance (a head move, compaction, a backup's snapshot)."""
        result: T = await self._queue(call)
        return result

    async def _queue(
        self, work: Change | Callable[[Store], Any], person: PersonKey | None = None
    ) -> Any:
        # Shielded: a caller whose client hung up cannot pull its write back out
        # of a batch that is already committing, nor leave the batch unanswered.
        pending = _Pending(work, trio.lowlevel.current_task().parent_nursery, person)
        with trio.CancelScope(shield=True):
            await self._send_now(pending)
            await pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _send_now(self, pending: _Pending) -> None:
        """Queue ``pending``, without a round of the event loop while there is room."""
        try:
            try:
                self._send.send_nowait(pending)
            except trio.WouldBlock:
                await self._send.send(pending)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise Unavailable(SHUTTING_DOWN) from None

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Commit batches until :meth:`close`; everything queued before it is committed.

        A batch is committed (data pages synced), then its meta page is synced
        in a task of its own while the next batch is applied: the two syncs of
        consecutive batches overlap instead of adding up. Callers are answered
        after their batch's sync, in batch order.
        """
        task_status.started()
        taken: list[_Pending] = []
        try:
            async with trio.open_nursery() as syncing:
                async for first in self._receive:
                    taken = [first]
                    await self._gather(taken)
                    batch = taken[:-1] if callable(taken[-1].work) else taken
                    if batch:
                        self._wrote(batch)
                        await self._commit(batch, syncing)
                    if callable(taken[-1].work):
                        await self._answered.wait()
                        await self._run(taken[-1])
        finally:
            # Cancelled (or done): nobody may be left waiting for work that will
            # never run. No checkpoint here, so nothing is queued in between.
            left = [p for p in taken if not p.done.is_set()]
            while True:
                try:
                    left.append(self._receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
            self._receive.close()
            for pending in left:
                pending.error = Unavailable(SHUTTING_DOWN)
                pending.done.set()

    async def _gather(self, taken: list[_Pending]) -> None:
        """Add to ``taken`` the work waiting behind it and, under load, what comes soon.

        Gathering stops at a store maintenance call (it runs alone), at
        ``MAX_BATCH``, and at the number of writes recent batches held; it waits
        for the batch still syncing, ``ANSWER_WAIT_S`` at most (its callers come
        back after their answers), then for each next write for up to
        ``GATHER_QUIET_S``, ``GATHER_MAX_S`` in all. ``taken`` grows in place: on
        cancellation the caller still holds all.
        """
        self._take_waiting(taken)
        expected = self._expected()
        if self._full(taken, expected):
            return
        with trio.move_on_after(ANSWER_WAIT_S):
            await self._answered.wait()
        self._take_waiting(taken)
        with trio.move_on_after(GATHER_MAX_S):
            while not self._full(taken, expected):
                with trio.move_on_after(GATHER_QUIET_S) as quiet:
                    try:
                        taken.append(await self._receive.receive())
                    except trio.EndOfChannel:
                        return
                if quiet.cancelled_caught:
                    return
                self._take_waiting(taken)

    def _take_waiting(self, taken: list[_Pending]) -> None:
        while not self._full(taken, MAX_BATCH):
            try:
                taken.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return

    @staticmethod
    def _full(taken: list[_Pending], expected: int) -> bool:
        return len(taken) >= min(expected, MAX_BATCH) or callable(taken[-1].work)

    def _wrote(self, batch: list[_Pending]) -> None:
        now = trio.current_time()
        for pending in batch:
            self._callers.pop(pending.caller, None)  # to the end: the order stays by time
            self._callers[pending.caller] = now

    def _expected(self) -> int:
        """How many callers wrote in the last ``RECENT_S`` (at least 1)."""
        cutoff = trio.current_time() - RECENT_S
        while self._callers:
            caller, at = next(iter(self._callers.items()))
            if at >= cutoff:
                break
            del self._callers[caller]
        return max(len(self._callers), 1)

    async def close(self) -> None:
        """Stop taking work; :meth:`run` returns once the queued work is done."""
        await self._send.aclose()

    async def _commit(self, batch: list[_Pending], syncing: trio.Nursery) -> None:
        operations: list[Change] = [p.work for p in batch]  # type: ignore[misc]
        persons = [p.person for p in batch]
        now_ms = self.now_ms()
        policy = self.policy()
        # Nothing syncing and nothing queued behind it: no next batch to overlap the
        # sync with, so it syncs in the same trip to the thread (a lone writer's write
        # pays one thread round trip, not two).
        alone = self._answered.is_set() and not self._receive.statistics().current_buffer_used
        outcomes = await self._run_in_thread(
            batch,
            lambda: self.store.apply(
                operations, now_ms=now_ms, policy=policy, sync=alone, persons=persons
            ),
        )
        if outcomes is None:
            return  # every caller already has the error
        if alone:
            self._answer(batch, outcomes)
            return
        previous, self._answered = self._answered, trio.Event()
        syncing.start_soon(self._sync_and_answer, batch, outcomes, previous, self._answered)

    async def _sync_and_answer(
        self,
        batch: list[_Pending],
        outcomes: list[Outcome | Applied],
        previous: trio.Event,
        answered: trio.Event,
    ) -> None:
        with trio.CancelScope(shield=True):
            synced = await self._run_in_thread(batch, self._sync)
            # Answers (and the events they cause) keep the order of the batches.
            await previous.wait()
        if synced:
            self._answer(batch, outcomes)
        answered.set()

    def _answer(self, batch: list[_Pending], outcomes: list[Outcome | Applied]) -> None:
        """Answer a durable batch's callers, then tell the listeners."""
        for pending, outcome in zip(batch, outcomes, strict=True):
            pending.result = outcome
            pending.done.set()
        for listener in self.listeners:
            listener(outcomes)

    def _sync(self) -> bool:
        self.store.sync()
        return True

    async def _run(self, pending: _Pending) -> None:
        call = pending.work
        assert callable(call)
        result = await self._run_in_thread([pending], lambda: call(self.store))
        if pending.error is None:
            pending.result = result
            pending.done.set()

    async def _run_in_thread(self, batch: list[_Pending], call: Callable[[], T]) -> T | None:
        """``call()`` in a worker thread; on failure every caller of the batch gets the error."""
        try:
            with trio.CancelScope(shield=True):
                result: T = await self.offload(call)
        except Exception as exc:
            if not isinstance(exc, HikmahError):
                log.exception("the writer failed on %d requests", len(batch))
            for pending in batch:
                pending.error = exc
                pending.done.set()
            return None
        return result
