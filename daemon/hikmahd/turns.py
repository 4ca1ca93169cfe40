"""Whose recall runs next: one at a time, readers first.

Recalls run one at a time in a worker thread (timers and small requests are
not held up behind a burst). When several wait, the next turn goes to the
longest-waiting connection that has read every reply it was sent; one whose
replies pile up unread (a client that queues recalls and never reads them)
waits until no reader does. A well-behaved client then waits for at most the
recall under way, however many silent connections queue behind it, and a
silent one is still served whenever the daemon has nothing better to do.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

# Unread bytes of replies above which a connection no longer counts as reading.
UNREAD_LIMIT = 0


@dataclass(eq=False)
class _Waiter:
    order: int
    unread: Callable[[], int]
    granted: trio.Event = field(default_factory=trio.Event)


class Turns:
    """A one-at-a-time turn that prefers connections that read their replies."""

    def __init__(self) -> None:
        self._busy = False
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def turn(self, unread: Callable[[], int] = lambda: 0) -> AsyncIterator[None]:
        """Hold the turn for the body; ``unread`` tells how many bytes of replies the
        caller's peer has not read yet (asked when a turn is handed on)."""
        if self._busy or self._waiting:
            waiter = _Waiter(next(self._order), unread)
            self._waiting.append(waiter)
            try:
                await waiter.granted.wait()
            except BaseException:
                if waiter.granted.is_set():
                    self._hand_on()  # handed the turn as it was cancelled: pass it on
                else:
                    self._waiting.remove(waiter)
                raise
        else:
            self._busy = True
        try:
            yield
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        if not self._waiting:
            self._busy = False
            return
        chosen = min(self._waiting, key=lambda w: (w.unread() > UNREAD_LIMIT, w.order))
        self._waiting.remove(chosen)
        chosen.granted.set()  # the turn stays busy: it passes straight to ``chosen``
