"""The one writer: group commit of every write request into durable batches.

Requests queue on a channel. The writer takes everything that is waiting,
commits it as one LMDB transaction in a worker thread (so the sync never
stalls the event loop), then answers each caller. While one batch syncs,
the next one gathers, which is what makes concurrent writers cheap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import trio

from hikmah.errors import HikmahError
from hikmah.policy import KernelPolicy
from hikmah.store import Operation, Outcome, Store

log = logging.getLogger(__name__)

MAX_BATCH = 512
T = TypeVar("T")


async def in_thread(call: Callable[[], T]) -> T:
    """Run blocking store work (a sync, a long read) off the event loop."""
    return await trio.to_thread.run_sync(call)


# How blocking store work is run; tests on trio's MockClock run it inline, since a
# virtual clock jumps ahead while the loop waits for a thread.
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]


class ShuttingDown(HikmahError):
    """The daemon stopped taking writes."""

    reason = "unavailable"


@dataclass
class _Pending:
    # A write to batch, or a store maintenance call (a head move) to run alone.
    work: Operation | Callable[[], Any]
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


class Writer:
    """Owns every change to the store. Start :meth:`run` in a nursery."""

    def __init__(
        self,
        store: Store,
        policy: Callable[[], KernelPolicy],
        on_commit: Callable[[Sequence[Outcome]], None] | None = None,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        offload: Offload = in_thread,
    ) -> None:
        self.store = store
        self.policy = policy
        self.on_commit = on_commit
        self.now_ms = now_ms
        self.offload = offload
        self._send, self._receive = trio.open_memory_channel[_Pending](MAX_BATCH * 4)

    async def submit(self, operation: Operation) -> Outcome:
        """Queue one operation; its outcome once durable (or the error refusing it).

        Raises:
            HikmahError: the whole batch failed (the store is full, the daemon
                is stopping); nothing of it was written.
        """
        result: Outcome = await self._queue(operation)
        return result

    async def exclusive(self, call: Callable[[], T]) -> T:
        """Run ``call`` in a worker thread in the writer's turn, between batches."""
        result: T = await self._queue(call)
        return result

    async def _queue(self, work: Operation | Callable[[], Any]) -> Any:
        # Shielded: a caller whose client hung up cannot pull its write back out
        # of a batch that is already committing, nor leave the batch unanswered.
        pending = _Pending(work)
        with trio.CancelScope(shield=True):
            try:
                await self._send.send(pending)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise ShuttingDown("the daemon is shutting down: nothing was written") from None
            await pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Commit batches until :meth:`close`; everything queued before it is committed."""
        task_status.started()
        async with self._receive:
            async for first in self._receive:
                batch = [first]
                while len(batch) < MAX_BATCH and not callable(batch[-1].work):
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                alone = batch.pop() if callable(batch[-1].work) else None
                if batch:
                    await self._commit(batch)
                if alone is not None:
                    await self._run(alone)

    async def close(self) -> None:
        """Stop taking work; :meth:`run` returns once the queued work is done."""
        await self._send.aclose()

    async def _commit(self, batch: list[_Pending]) -> None:
        operations: list[Operation] = [p.work for p in batch]  # type: ignore[misc]
        now_ms = self.now_ms()
        policy = self.policy()
        done = await self._run_in_thread(
            batch, lambda: self.store.apply(operations, now_ms=now_ms, policy=policy)
        )
        if done is None:
            return  # every caller already has the error
        for pending, outcome in zip(batch, done, strict=True):
            pending.result = outcome
            pending.done.set()
        if self.on_commit is not None:
            self.on_commit(done)

    async def _run(self, pending: _Pending) -> None:
        call = pending.work
        assert callable(call)
        result = await self._run_in_thread([pending], call)
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
