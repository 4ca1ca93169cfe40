"""Proofs of person presence: a ticket per terminal and shell, or a proof for one command,
and the throttle on attempts that fail.

A person proves presence by typing the passphrase (``presence.prove``). The proof
gives a ticket for the :class:`~hikmahd.peers.Terminal` of the process that sent it
(the terminal, its session, and the shell that started the process) for ``[presence]
ticket_seconds``: a later connection is present when it comes from that same
terminal and shell, and is no agent's (:class:`~hikmahd.context.Context`).

A ticket cannot tell the person's keystrokes from keys pushed into their terminal
(``tmux send-keys``, ``TIOCSTI``): a command typed that way within the ticket's time
is the person's. So with ``ticket_seconds = 0``, and wherever the kernel lets any
process push keys into its terminal (:func:`tiocsti_allowed`) unless the policy says
``tickets_with_tiocsti``, a proof holds for the one process that asked for it (one
``hikmah`` command), until it exits: every person-only command asks, naming itself.

A proof also holds the person key the passphrase unlocked (:mod:`hikmah.access.person`), for
the writes made under it to carry the person's signature. Proofs, and their keys, live
in the daemon's memory only: a restart ends them all. Attempts are taken
one at a time, and each failure doubles the wait before the next one (up to
:data:`MAX_WAIT_S`), whoever sends it, so that guessing stays slow however many
processes try.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from hikmah.access.person import PersonKey
from hikmah.access.presence import PresenceState
from hikmah.model.policy import PresencePolicy

from .peers import Peer, Terminal, start_time

log = logging.getLogger(__name__)

MAX_WAIT_S = 300.0
# The kernel that made TIOCSTI a choice (dev.tty.legacy_tiocsti); before it, any process
# could push keys into its controlling terminal.
_TIOCSTI_SYSCTL = Path("/proc/sys/dev/tty/legacy_tiocsti")
_OPTIONAL_SINCE = (6, 2)

Process = tuple[Terminal, int, int]  # a terminal and shell, and one process in it


def tiocsti_allowed(sysctl: Path = _TIOCSTI_SYSCTL, release: str | None = None) -> bool:
    """Whether any process may push keystrokes into its controlling terminal (TIOCSTI),
    to be read as typed by whatever reads the terminal next, the person's shell."""
    try:
        return sysctl.read_text().strip() != "0"
    except FileNotFoundError:
        found = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
        return found is None or (int(found[1]), int(found[2])) < _OPTIONAL_SINCE
    except OSError:
        return True  # unreadable: assume the worst


def per_command(policy: PresencePolicy) -> bool:
    """Whether a proof holds for the one command that asked for it (see the module)."""
    return policy.ticket_seconds == 0 or (tiocsti_allowed() and not policy.tickets_with_tiocsti)


def process_of(peer: Peer) -> Process | None:
    """The process a per-command proof of ``peer`` is bound to (None: it cannot prove)."""
    if peer.terminal is None or peer.start is None:
        return None
    return peer.terminal, peer.pid, peer.start


class Tickets:
    """Who holds a proof of presence now, and how the last attempts went."""

    def __init__(self) -> None:
        self._until: dict[Terminal, int] = {}
        self._commands: dict[Process, PersonKey | None] = {}  # until the process exits
        self._keys: dict[Terminal, PersonKey | None] = {}  # of the tickets
        self._turn = trio.Lock()
        self._next_attempt = 0.0  # trio.current_time() before which none is checked
        self.failures = 0  # in a row, since the last proof
        self.last_failure_ms: int | None = None

    def present(self, state: PresenceState, peer: Peer, now_ms: int) -> bool:
        """Whether a person at ``peer``'s terminal counts as present: presence is off, or
        they hold a ticket that has not expired or a proof for this very process (never
        while presence is damaged)."""
        if not state.on:
            return True
        if state.damaged is not None:
            return False
        return self.expiry(peer.terminal, now_ms) is not None or self.proven(peer)

    def proven(self, peer: Peer) -> bool:
        """Whether ``peer``'s process holds a per-command proof."""
        return process_of(peer) in self._commands

    def key(self, peer: Peer, now_ms: int) -> PersonKey | None:
        """The person key of the proof ``peer`` holds (its process's, or its terminal's
        ticket); None without one, or from before person keys."""
        process = process_of(peer)
        if process is not None and process in self._commands:
            return self._commands[process]
        if peer.terminal is not None and self.expiry(peer.terminal, now_ms) is not None:
            return self._keys.get(peer.terminal)
        return None

    def expiry(self, terminal: Terminal | None, now_ms: int) -> int | None:
        """When the ticket of ``terminal`` expires (epoch ms); None without one."""
        until = None if terminal is None else self._until.get(terminal)
        return until if until is not None and until > now_ms else None

    def grant(self, terminal: Terminal, now_ms: int, seconds: float, key: PersonKey | None) -> int:
        """A ticket for ``terminal`` from now, for ``seconds``, holding ``key``; when it
        expires."""
        self._until = {t: u for t, u in self._until.items() if u > now_ms}
        self._keys = {t: k for t, k in self._keys.items() if t in self._until}
        until = now_ms + round(seconds * 1000)
        self._until[terminal], self._keys[terminal] = until, key
        self._proved()
        return until

    def grant_command(self, process: Process, key: PersonKey | None) -> None:
        """A proof for ``process`` alone, until it exits, holding ``key``."""
        # Forget the proofs of processes that have exited: a pid that comes back is
        # another process (its start time differs), so they could never be used again.
        self._commands = {p: k for p, k in self._commands.items() if start_time(p[1]) == p[2]}
        self._commands[process] = key
        self._proved()

    def _proved(self) -> None:
        self.failures, self.last_failure_ms = 0, None

    def end(self, peer: Peer) -> bool:
        """Drop the ticket of ``peer``'s terminal and its process's proof; whether there
        was either."""
        ticket = peer.terminal is not None and self._until.pop(peer.terminal, None) is not None
        if peer.terminal is not None:
            self._keys.pop(peer.terminal, None)
        process = process_of(peer)
        if process is None or process not in self._commands:
            return ticket
        del self._commands[process]
        return True

    def clear(self) -> None:
        """Drop every ticket and proof (the passphrase changed, or presence went off)."""
        self._until.clear()
        self._keys.clear()
        self._commands.clear()

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
