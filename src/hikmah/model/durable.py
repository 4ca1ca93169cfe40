"""Files that survive a crash or a power cut: the one place Hikmah makes a file durable.

Standard library only (the CLI writes exports and a person's configuration
files with it). Data reaches the disk with ``fsync``, and a new or renamed
name only once its directory is synced too.
"""

from __future__ import annotations

import contextlib
import os
import secrets
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
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_atomic_at(directory, path.name, data, mode, temp_prefix=temp_prefix)
    finally:
        os.close(directory)


def write_atomic_at(
    directory: int,
    name: str,
    data: Data | Iterable[Data],
    mode: int,
    *,
    temp_prefix: str | None = None,
) -> None:
    """:func:`write_atomic` of ``name`` in the directory open as ``directory``. The
    temporary file is created there anew (never through a link), and the rename replaces
    whatever ``name`` is, a link included, never what a link points to."""
    parts = [data] if isinstance(data, bytes | bytearray | memoryview) else data
    prefix = f".{name}." if temp_prefix is None else temp_prefix
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        temp = f"{prefix}{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(temp, flags, 0o600, dir_fd=directory)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as file:
            for part in parts:
                file.write(part)
            os.fchmod(file.fileno(), mode)  # created 0600, whatever the umask
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=directory)
    os.fsync(directory)
