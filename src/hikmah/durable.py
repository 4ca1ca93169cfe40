"""Files that survive a crash or a power cut: the one place Hikmah makes a file durable.

Standard library only (the CLI writes exports and a person's configuration
files with it). Data reaches the disk with ``fsync``, and a new or renamed
name only once its directory is synced too.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

Data = bytes | bytearray | memoryview


def fsync_file(path: Path) -> None:
    """Make what was written to ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make the names in the directory ``path`` durable (a file created, renamed or removed)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(
    path: Path, data: Data | Iterable[Data], mode: int, *, temp_prefix: str | None = None
) -> None:
    """Replace ``path`` so readers see the old file or the new one, never half, even after
    a crash: a temporary file in the same directory (named from ``temp_prefix``, which a
    sync folder's engines are told to ignore), fsync, rename, fsync of the directory.

    ``data`` may come in parts, written one after the other (a large file need not be
    joined in memory first).
    """
    parts = [data] if isinstance(data, bytes | bytearray | memoryview) else data
    prefix = f".{path.name}." if temp_prefix is None else temp_prefix
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            for part in parts:
                file.write(part)
            os.fchmod(file.fileno(), mode)  # mkstemp creates 0600
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    fsync_dir(path.parent)
