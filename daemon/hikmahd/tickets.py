"""Proofs of person presence: a ticket per terminal and shell, and the throttle on
attempts that fail.

A person proves presence by typing the passphrase (``presence.prove``); the
proof gives a ticket for the :class:`~hikmahd.peers.Terminal` of the process
that sent it (the terminal, its session, and the shell that started the
process) for ``[presence] ticket_minutes``. A later connection is present
when it comes from that same terminal and shell, and is no agent's
(:class:`~hikmahd.context.Context`). Tickets live in the daemon's memory only:
a restart ends them all. Attempts are taken one at a time, and each failure
doubles the wait before the next one (up to :data:`MAX_WAIT_S`), whoever sends
it, so that guessing stays slow however many processes try.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from hikmah.presence import PresenceState

from .peers import Terminal

log = logging.getLogger(__name__)

MAX_WAIT_S = 300.0


class Tickets:
    """Who holds a proof of presence now, and how the last attempts went."""

    def __init__(self) -> None:
        self._until: dict[Terminal, int] = {}
        self._turn = trio.Lock()
        self._next_attempt = 0.0  # trio.current_time() before which none is checked
        self.failures = 0  # in a row, since the last proof
        self.last_failure_ms: int | None = None

    def present(self, state: PresenceState, terminal: Terminal | None, now_ms: int) -> bool:
        """Whether a person at ``terminal`` counts as present: presence is off, or they
        hold a ticket that has not expired (never while presence is damaged)."""
        if not state.on:
            return True
        return state.damaged is None and self.expiry(terminal, now_ms) is not None

    def expiry(self, terminal: Terminal | None, now_ms: int) -> int | None:
        """When the ticket of ``terminal`` expires (epoch ms); None without one."""
        until = None if terminal is None else self._until.get(terminal)
        return until if until is not None and until > now_ms else None

    def grant(self, terminal: Terminal, now_ms: int, minutes: float) -> int:
        """A ticket for ``terminal`` from now, for ``minutes``; when it expires."""
        self._until = {t: u for t, u in self._until.items() if u > now_ms}
        until = now_ms + round(minutes * 60_000)
        self._until[terminal] = until
        self.failures, self.last_failure_ms = 0, None
        return until

    def end(self, terminal: Terminal | None) -> bool:
        """Drop the ticket of ``terminal``; whether there was one."""
        return terminal is not None and self._until.pop(terminal, None) is not None

    def clear(self) -> None:
        """Drop every ticket (the passphrase changed, or presence went off)."""
        self._until.clear()

    async def attempt(self, check: Callable[[], Awaitable[bool]], now_ms: int) -> bool:
        """Run one check of a passphrase in its turn, after the wait the failures before
        it earned; whether it was right."""
        async with self._turn:
            await trio.sleep_until(self._next_attempt)
            right = await check()
            if right:
                self.failures = 0
                return True
            self.failures += 1
            self.last_failure_ms = now_ms
            wait = min(2.0 ** (self.failures - 1), MAX_WAIT_S)
            self._next_attempt = trio.current_time() + wait
            return False
