"""Focus Capsules: named, bounded working sets (primary seed, "Working memory").

A capsule absorbs recall results and holds at most ``limit`` traces; when it
overflows, the unpinned trace with the lowest activation leaves first (the
oldest absorbed among equals), and pinned traces never leave. Absorbing a
trace again rehearses it: its activation grows by the new score. Beside the
traces a capsule keeps short working-memory notes (hippo's ``wm_push``),
bounded too, the least important leaving first. Capsules are working
memory: they live in the daemon and are never written to the ledger.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import msgspec

from hikmah.model.errors import ConflictError, InvalidInput, NotFound
from hikmah.model.wire.focus import Note

NOTES_LIMIT = 20
NOTE_MAX_CHARS = 2_000


class Held(msgspec.Struct, kw_only=True):
    """A trace held in a capsule."""

    id: str
    activation: float
    pinned: bool = False
    absorbed: int = 0


def check_note(text: str, importance: float) -> str:
    """The note's text, trimmed.

    Raises:
        InvalidInput: empty, too long, or an importance outside [0, 1].
    """
    text = text.strip()
    if not text:
        raise InvalidInput("a note needs text")
    if len(text) > NOTE_MAX_CHARS:
        raise InvalidInput(f"a note holds at most {NOTE_MAX_CHARS} characters")
    if not 0.0 <= importance <= 1.0:
        raise InvalidInput("importance must be between 0 and 1")
    return text


class FocusCapsule:
    def __init__(self, name: str, limit: int, *, notes_limit: int = NOTES_LIMIT) -> None:
        self.name = name
        self.limit = limit
        self.notes_limit = notes_limit
        self.held: dict[str, Held] = {}
        self.notes: list[Note] = []
        self._order = itertools.count()

    def absorb(self, scored: Iterable[tuple[str, float]]) -> list[str]:
        """Take in (trace id, score) pairs; returns the ids evicted to stay in bounds."""
        for trace_id, score in scored:
            held = self.held.get(trace_id)
            if held is None:
                self.held[trace_id] = Held(
                    id=trace_id, activation=score, absorbed=next(self._order)
                )
            else:
                held.activation += score
        return self._evict()

    def pin(self, trace_id: str) -> list[str]:
        """Keep a trace whatever comes in, taking it in if it is not held yet; returns
        the ids evicted to make room.

        Raises:
            ConflictError: every place is pinned already.
        """
        held = self.held.get(trace_id)
        if held is not None and held.pinned:
            return []
        if sum(h.pinned for h in self.held.values()) >= self.limit:
            raise ConflictError(
                f"capsule {self.name!r} has {self.limit} pinned traces, its limit; unpin one first"
            )
        if held is None:
            held = self.held[trace_id] = Held(
                id=trace_id, activation=0.0, absorbed=next(self._order)
            )
        held.pinned = True
        return self._evict()

    def set_limit(self, limit: int) -> list[str]:
        """Change the bound (the policy changed); returns the ids evicted to meet it."""
        self.limit = limit
        return self._evict()

    def unpin(self, trace_id: str) -> list[str]:
        """Let a trace be evicted again; returns what had to leave (nothing, normally)."""
        self._held(trace_id).pinned = False
        return self._evict()

    def note(self, text: str, importance: float, at: int) -> list[Note]:
        """Push a working-memory note; returns the notes evicted to stay in bounds."""
        self.notes.append(Note(text=check_note(text, importance), importance=importance, at=at))
        evicted: list[Note] = []
        while len(self.notes) > self.notes_limit:
            # Least important first; among equals, the oldest.
            weakest = min(self.notes, key=lambda n: (n.importance, n.at))
            self.notes.remove(weakest)
            evicted.append(weakest)
        return evicted

    def ordered(self) -> list[Held]:
        """Held traces, most activated first."""
        return sorted(self.held.values(), key=lambda h: (-h.pinned, -h.activation, h.absorbed))

    def _held(self, trace_id: str) -> Held:
        held = self.held.get(trace_id)
        if held is None:
            raise NotFound(f"capsule {self.name!r} does not hold {trace_id}")
        return held

    def _evict(self) -> list[str]:
        evicted: list[str] = []
        while len(self.held) > self.limit:
            candidates = [h for h in self.held.values() if not h.pinned]
            if not candidates:
                break
            weakest = min(candidates, key=lambda h: (h.activation, h.absorbed))
            del self.held[weakest.id]
            evicted.append(weakest.id)
        return evicted
