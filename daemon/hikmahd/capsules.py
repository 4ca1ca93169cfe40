"""The daemon's focus capsules by name, and closing the idle ones."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hikmah.model.errors import InvalidInput, NotFound
from hikmah.model.wire.focus import CapsuleSummary
from hikmah.working.focus import FocusCapsule

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")


@dataclass
class _Open:
    capsule: FocusCapsule
    last_used: int


class Capsules:
    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open(self, name: str, limit: int, now_ms: int) -> FocusCapsule:
        """The capsule called ``name``, created empty if it is not open."""
        if not _NAME.fullmatch(name):
            raise InvalidInput(
                "a capsule name is 1-128 letters, digits or . _ : / @ - (e.g. task:fix-login)"
            )
        entry = self._open.get(name)
        if entry is None:
            entry = self._open[name] = _Open(FocusCapsule(name, limit), now_ms)
        entry.last_used = now_ms
        entry.capsule.set_limit(limit)
        return entry.capsule

    def get(self, name: str, now_ms: int) -> FocusCapsule:
        """An open capsule.

        Raises:
            NotFound: no capsule of that name is open.
        """
        entry = self._open.get(name)
        if entry is None:
            raise NotFound(
                f"no focus capsule {name!r} is open: open it first"
                f" (hikmah focus open {name!r}, or recall with --focus {name!r})"
            )
        entry.last_used = now_ms
        return entry.capsule

    def close(self, name: str) -> None:
        if self._open.pop(name, None) is None:
            raise NotFound(f"no focus capsule {name!r} is open")

    def names(self) -> list[str]:
        return sorted(self._open)

    def summary(self, name: str, now_ms: int) -> CapsuleSummary:
        """An open capsule's name, size, limit, pins, notes and idle time (a listing: not
        a use)."""
        entry = self._open[name]
        held = entry.capsule.held
        return CapsuleSummary(
            name=name,
            size=len(held),
            limit=entry.capsule.limit,
            pinned=sum(h.pinned for h in held.values()),
            notes=len(entry.capsule.notes),
            idle_s=(now_ms - entry.last_used) // 1000,
        )

    def close_idle(self, now_ms: int, idle_ms: int) -> list[str]:
        """Close every capsule unused for ``idle_ms``; returns their names."""
        idle = [name for name, e in self._open.items() if now_ms - e.last_used >= idle_ms]
        for name in idle:
            del self._open[name]
        return idle
