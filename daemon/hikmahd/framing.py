"""Newline-delimited frames over a byte stream, at most :data:`MAX_FRAME` bytes each.

Sans-I/O: feed bytes, take frames. A frame that grows past the limit is
reported once and then skipped up to its newline, so one oversized request
costs its sender an error and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAX_FRAME = 1 << 20


@dataclass(frozen=True)
class Oversized:
    """A frame longer than the limit was skipped."""

    size: int


class FrameReader:
    def __init__(self, limit: int = MAX_FRAME) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._skipping = 0  # bytes of an oversized frame dropped so far

    def feed(self, data: bytes | bytearray) -> Iterator[bytes | Oversized]:
        """Frames completed by ``data``, in order (blank lines are ignored)."""
        self._buffer += data
        while True:
            newline = self._buffer.find(b"\n")
            if self._skipping:
                if newline < 0:
                    self._skipping += len(self._buffer)
                    self._buffer.clear()
                    return
                del self._buffer[: newline + 1]
                self._skipping = 0
                continue
            if newline < 0:
                if len(self._buffer) > self.limit:
                    yield Oversized(len(self._buffer))
                    self._skipping = len(self._buffer)
                    self._buffer.clear()
                return
            frame = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if len(frame) > self.limit:
                yield Oversized(len(frame))
            elif frame.strip():
                yield frame

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held."""
        return len(self._buffer)
