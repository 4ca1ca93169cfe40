"""Opening what a person points an import at, with errors that say what was expected."""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hikmah.migration.items import ImportSourceError

# Text sources are read whole (an export is one document); a larger file is not an
# export of a personal memory tool, and reading it would hold the daemon's memory.
MAX_TEXT_BYTES = 256 << 20


def check_file(path: Path, what: str) -> None:
    """Refuse anything but a regular file (a directory, a FIFO that would block).

    Raises:
        ImportSourceError: naming ``path`` and what the source expects (``what``).
    """
    mode = _mode(path)
    if stat.S_ISDIR(mode):
        raise ImportSourceError(f"{path} is a directory: give the file of {what}")
    if not stat.S_ISREG(mode):
        raise ImportSourceError(f"{path} is not a regular file: give the file of {what}")


def check_directory(path: Path, what: str) -> None:
    """Refuse anything but a directory.

    Raises:
        ImportSourceError: naming ``path`` and what the source expects.
    """
    if not stat.S_ISDIR(_mode(path)):
        raise ImportSourceError(f"{path} is not a directory: give the folder of {what}")


@contextlib.contextmanager
def open_file(path: Path, what: str) -> Iterator[BinaryIO]:
    """Open a regular file for reading in binary; OS errors become import errors.

    Raises:
        ImportSourceError: not a regular file, over :data:`MAX_TEXT_BYTES`, or it
            cannot be read.
    """
    check_file(path, what)
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ImportSourceError(f"{path} is over {MAX_TEXT_BYTES >> 20} MiB: too large for {what}")
    try:
        file = path.open("rb")
    except OSError as exc:
        raise ImportSourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    with file:
        try:
            yield file
        except OSError as exc:
            raise ImportSourceError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_text(path: Path, what: str) -> str:
    """A whole UTF-8 text file.

    Raises:
        ImportSourceError: not a regular file, unreadable, or not UTF-8 text.
    """
    with open_file(path, what) as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportSourceError(f"{path}:{line} is not UTF-8 text: not {what}") from None
    if "\0" in text:
        raise ImportSourceError(f"{path} holds NUL bytes: it is binary, not {what}")
    return text


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        raise ImportSourceError(f"{path} does not exist") from None
    except OSError as exc:
        raise ImportSourceError(f"cannot read {path}: {exc.strerror or exc}") from None
