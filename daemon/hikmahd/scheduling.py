"""What runs where and when: the one way work leaves the event loop, the clock, and whose
recall runs next.

Blocking work (an LMDB sync, a long read, a file) runs through one hook,
:data:`Offload` (a worker thread; inline under trio's ``MockClock``, whose
virtual time jumps ahead while the loop waits for a thread). The writer,
the dispatcher (for methods registered as blocking), recall and the timers
all take it from the composition root, so nothing picks its own thread.

Recalls run one at a time (:class:`Turns`): timers and small requests are
not held up behind a burst. When several wait, the next turn goes to the
longest-waiting connection that has read every reply it was sent; one whose
replies pile up unread (a client that queues recalls and never reads them)
waits until no reader does. A well-behaved client then waits for at most the
recall under way, however many silent connections queue behind it, and a
silent one is still served whenever the daemon has nothing better to do.
Handing a turn on asks only the waiters it picks how much they left unread: a
waiter is sorted when it arrives, so a thousand silent ones cost nothing
more per turn than one.
Each connection also waits for its own previous recall first, so a client
that queues many takes one turn at a time, not every turn before others, and
a laggard's recall runs in a worker thread, never on the loop.

A recall's query is embedded on a thread of the daemon's own
(:class:`QueryThread`) while the recall gathers and scores its lexical
candidates: the sentence encoder runs without the GIL, so on two cores the
two overlap, and a recall waits for the longer of them, not their sum.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import queue
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import outcome
import trio

from hikmah.index.past import as_of, now_of
from hikmah.index.snapshot import Snapshot
from hikmah.model.moment import Moment
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery, RecallResult
from hikmah.recall.ranking import recall
from hikmah.semantic.embedding import Vectors
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.store.core import Store

T = TypeVar("T")
# How blocking work is run.
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]

# Unread bytes of replies above which a connection no longer counts as reading.
UNREAD_LIMIT = 0
# A recall shorter than the interpreter's switch interval holds the GIL to its
# end in a worker thread too, so the thread gives the event loop nothing and
# costs a hop (about 0.3 ms here); recalls that take longer (large stores) run
# in a thread, where the loop gets the GIL back every interval and timers
# (reminders) stay on time. Decided by the recent average, against the whole
# interval: at half of it, fused recalls at 100k (2-3 ms) sat on the line and
# flipped to a thread now and then, a hop each time.
INLINE_RECALL_S = sys.getswitchinterval()


def wall_ms() -> int:
    """The wall clock in epoch milliseconds: the daemon's ``now`` (tests pass their own)."""
    return time.time_ns() // 1_000_000


@asynccontextmanager
async def held(lock: trio.Lock) -> AsyncIterator[None]:
    """``lock`` for the body, taken at once when it is free: ``async with lock`` would
    first pass through the scheduler (a checkpoint), which on a request's path costs a
    round of the event loop (tens of microseconds here) for nothing."""
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()
    try:
        yield
    finally:
        lock.release()


async def in_thread(call: Callable[[], T]) -> T:
    """Run blocking work in a worker thread: the default :data:`Offload`."""
    return await trio.to_thread.run_sync(call)


def threads_of_their_own(count: int) -> Offload:
    """An offload with ``count`` worker threads of its own, so that what it runs (a
    flood of peers to identify) never queues ahead of the shared pool's work."""
    limiter = trio.CapacityLimiter(count)

    async def offload(call: Callable[[], T]) -> T:
        return await trio.to_thread.run_sync(call, limiter=limiter)

    return offload


class Asker(Protocol):
    """Who asks for a recall: one connection, which knows how much of its replies the
    peer has not read yet."""

    def unread(self) -> int: ...


@dataclass(eq=False)
class _Waiter:
    order: int
    unread: Callable[[], int]
    granted: trio.Event = field(default_factory=trio.Event)
    gone: bool = False  # cancelled while it waited: skipped when its place comes

    def __lt__(self, other: _Waiter) -> bool:
        return self.order < other.order


class Turns:
    """A one-at-a-time turn that prefers connections that read their replies."""

    def __init__(self) -> None:
        self._busy = False
        self._waiting = 0
        self._readers: deque[_Waiter] = deque()  # in arrival order
        self._laggards: list[_Waiter] = []  # a heap by arrival
        self._order = itertools.count()

    @asynccontextmanager
    async def turn(self, unread: Callable[[], int] = lambda: 0) -> AsyncIterator[None]:
        """Hold the turn for the body; ``unread`` tells how many bytes of replies the
        caller's peer has not read yet (asked when it arrives and when its turn comes)."""
        if self._busy or self._waiting:
            waiter = _Waiter(next(self._order), unread)
            if unread() > UNREAD_LIMIT:
                heapq.heappush(self._laggards, waiter)
            else:
                self._readers.append(waiter)
            self._waiting += 1
            try:
                await waiter.granted.wait()
            except BaseException:
                if waiter.granted.is_set():
                    self._hand_on()  # handed the turn as it was cancelled: pass it on
                else:
                    waiter.gone = True
                    self._waiting -= 1
                raise
        else:
            self._busy = True
        try:
            yield
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        chosen = self._next()
        if chosen is None:
            self._busy = False
            return
        self._waiting -= 1
        chosen.granted.set()  # the turn stays busy: it passes straight to ``chosen``

    def _next(self) -> _Waiter | None:
        """The longest-waiting reader; else the longest-waiting laggard. A reader whose
        replies piled up while it waited joins the laggards in its place; a laggard that
        caught up while it waited counts as a reader from its next request on."""
        while self._readers:
            waiter = self._readers.popleft()
            if waiter.gone:
                continue
            if waiter.unread() <= UNREAD_LIMIT:
                return waiter
            heapq.heappush(self._laggards, waiter)
        while self._laggards:
            waiter = heapq.heappop(self._laggards)
            if not waiter.gone:
                return waiter
        return None


class OwnThread:
    """An :data:`Offload` onto one thread of the daemon's own, which runs what it is given
    in turn. The answer wakes the event loop once, through trio's token: trio's
    ``to_thread`` also takes a limiter token, names a cached thread and waits for it
    through its own machinery for each call, about 0.1 ms more each way here, on every
    durable write. As with ``to_thread``, a call is not sent when its task is cancelled
    already, and cannot be cancelled once it is."""

    def __init__(self, name: str, initializer: Callable[[], None] | None = None) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._serve, args=(initializer,), name=name, daemon=True
        )

    async def __call__(self, call: Callable[[], T]) -> T:
        # Cancelled already, nothing is sent (as with to_thread): a loop of calls ends.
        await trio.lowlevel.checkpoint_if_cancelled()
        if not self._thread.is_alive():
            self._thread.start()  # at the first call: an offload never used starts none
        token = trio.lowlevel.current_trio_token()
        task = trio.lowlevel.current_task()

        def answer(result: outcome.Outcome[T]) -> None:
            token.run_sync_soon(trio.lowlevel.reschedule, task, result)

        self._jobs.put((call, answer))
        found: T = await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        return found

    def _serve(self, initializer: Callable[[], None] | None) -> None:
        if initializer is not None:
            initializer()
        while (job := self._jobs.get()) is not None:
            call, answer = job
            result = outcome.capture(call)
            with contextlib.suppress(trio.RunFinishedError):  # the loop is gone: nobody waits
                answer(result)

    def close(self) -> None:
        """End the thread once what was sent before is done."""
        self._jobs.put(None)


_Job = tuple[Callable[[], Any], Callable[[Any], None]]


class IdleThread(OwnThread):
    """An :data:`Offload` onto one thread of the daemon's own at the lowest CPU priority:
    for work that may take all the CPU the daemon does not need and none it does, such
    as embedding what the vectors are behind on while writes and recalls come.

    The thread runs under ``SCHED_IDLE`` (at ``nice`` 19 where that is refused). Linux
    schedules each thread on its own. ``SCHED_IDLE`` is a weight, not a strict class: a
    busy core still gives the thread a small share, so when it holds the GIL or the
    semantic index's lock, whoever waits for it is not starved. Measured while the
    vectors caught up after a 50k import: recall at 0.43-0.46x FTS5 under
    ``SCHED_IDLE``, 0.43-0.53x at nice 19 and 0.53-0.55x at nice 10, with the
    catch-up itself no slower."""

    def __init__(self, name: str) -> None:
        super().__init__(name, _lowest_priority)


def _lowest_priority() -> None:
    """Run the calling thread only on CPU that nothing else wants."""
    thread = threading.get_native_id()
    try:
        os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):  # not Linux, or refused: the lowest niceness
        with contextlib.suppress(OSError):  # where threads cannot be niced, they run as others
            os.setpriority(os.PRIO_PROCESS, thread, 19)


class QueryThread:
    """The thread a recall's query is embedded on, beside the recall's lexical work
    (:data:`hikmah.recall.fusion.QueryEmbedding`). One: recalls run one at a time."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hikmahd-query")

    def __call__(self, index: SemanticIndex, text: str) -> Callable[[], Vectors | None]:
        started = threading.Event()

        def embed() -> Vectors | None:
            started.set()
            return index.embed_query(text)

        future = self._pool.submit(embed)
        # Let the thread reach the model, which runs without the GIL: a recall's lexical
        # work is Python holding the GIL, and a thread waiting for the GIL to start would
        # wait for the whole of it (measured: no overlap at all without this wait).
        started.wait()
        return future.result

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Recalls:
    """Resonance Recall over the store, one at a time, on the loop or off it."""

    def __init__(
        self,
        store: Store,
        policy: Callable[[], KernelPolicy],
        now_ms: Callable[[], int],
        offload: Offload,
        query_thread: QueryThread,
    ) -> None:
        self.store, self.policy, self.now_ms, self.offload = store, policy, now_ms, offload
        self.query_thread = query_thread
        self.turns = Turns()
        self._own: weakref.WeakKeyDictionary[Asker, trio.Lock] = weakref.WeakKeyDictionary()
        # Assumed long until measured: the first recall loads the feature columns.
        self._took_s = INLINE_RECALL_S

    async def recall(
        self,
        query: RecallQuery,
        asker: Asker | None = None,
        *,
        point: Moment | None = None,
        hide_held: bool = False,
    ) -> list[RecallResult]:
        """The results of ``query`` (as of ``point``, or now), after ``asker``'s previous
        recall and in a turn; ``hide_held``: for an agent (:mod:`hikmah.index.review`)."""
        return await self.recall_then(query, _as_they_are, asker, point=point, hide_held=hide_held)

    async def recall_then(
        self,
        query: RecallQuery,
        then: Callable[[Snapshot, list[RecallResult]], T],
        asker: Asker | None = None,
        *,
        point: Moment | None = None,
        hide_held: bool = False,
    ) -> T:
        """:meth:`recall`, its results passed on to ``then`` with the present snapshot they
        were read in: what ``then`` reads of them agrees with them."""
        if asker is None:
            return await self._in_turn(query, then, lambda: 0, point, hide_held)
        own = self._own.setdefault(asker, trio.Lock())
        async with held(own):
            return await self._in_turn(query, then, asker.unread, point, hide_held)

    async def _in_turn(
        self,
        query: RecallQuery,
        then: Callable[[Snapshot, list[RecallResult]], T],
        unread: Callable[[], int],
        point: Moment | None,
        hide_held: bool,
    ) -> T:
        async with self.turns.turn(unread):
            now, policy = self.now_ms(), self.policy()

            def run() -> T:
                with self.store.snapshot() as present:
                    snapshot = as_of(present, point, now)
                    results = recall(
                        snapshot,
                        query,
                        now_ms=now_of(snapshot, now),
                        policy=policy,
                        vectors=self.store.semantic,
                        embed=self.query_thread,
                        hide_held=hide_held,
                    )
                    return then(present, results)

            began = time.perf_counter()
            # A laggard's recall runs in a worker thread however short it is: the loop
            # stays free to accept, read requests and hand turns on meanwhile (under a
            # flood of them, back to back on the loop, a good client's identification
            # waited in its worker thread for the GIL).
            if self._took_s < INLINE_RECALL_S and unread() <= UNREAD_LIMIT:
                results = run()
            else:
                results = await self.offload(run)
            took = time.perf_counter() - began
            self._took_s += (took - self._took_s) / 5  # a moving average
        return results


def _as_they_are(present: Snapshot, results: list[RecallResult]) -> list[RecallResult]:
    """A recall's results, nothing read besides."""
    return results
