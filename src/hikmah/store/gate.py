"""Who may use the LMDB environment now: its many users at once, or the one that replaces
its file (dropping free pages copies the file and reopens it)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Gate:
    """Many users of the LMDB environment at once, or the one that replaces its file.

    Shared entry is re-entrant per thread, so a reader that reads again inside
    its own transaction never waits for a replacement that waits for it.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._users = 0
        self._replacing = False
        self._mine = threading.local()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._mine, "depth", 0)
        with self._lock:
            while self._replacing and depth == 0:
                self._lock.wait()
            self._users += 1
        self._mine.depth = depth + 1
        try:
            yield
        finally:
            self._mine.depth = depth
            with self._lock:
                self._users -= 1
                self._lock.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._lock:
            while self._replacing:
                self._lock.wait()
            self._replacing = True
            while self._users:
                self._lock.wait()
        try:
            yield
        finally:
            with self._lock:
                self._replacing = False
                self._lock.notify_all()
