"""The sync folder, read and written defensively: what each device directory holds.

The folder is untrusted storage that git and Syncthing fill with whatever
another machine put there, symbolic links included. So below the folder
itself no link is ever followed, reading or writing: every directory on the
way is entered with ``O_NOFOLLOW`` relative to the one before (a link is
refused, naming it, for ``sync status``), a name is only ever read as a
regular file, never blocking (a FIFO would hang the reader) and never past a
size limit, and files being written (``.tmp-*``) are never read. A device
writes only its own directory, each file with :mod:`hikmah.model.durable`'s atomic
replace, made there anew.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

import msgspec

from hikmah.model.device_id import is_device_id
from hikmah.model.durable import Data, write_atomic_at
from hikmah.sync.device import Untrusted
from hikmah.sync.segment import SEGMENT_BYTES, parse_segment_name

DEVICES: Final = "devices"
TEMP_PREFIX: Final = ".tmp-"
# A tail rolls past SEGMENT_BYTES with its last record, and a record is at most
# a 1 MiB frame plus its envelope; anything larger is not a segment.
MAX_FILE: Final = SEGMENT_BYTES + (4 << 20)


class DeviceDir(msgspec.Struct, frozen=True, kw_only=True):
    """The names in one ``devices/<id>/`` directory, by what they are.

    Attributes:
        segments: epoch → first seq → size in bytes.
        invites, joins: invitation and join request file names.
        envelopes: key envelope paths inside the directory.
        temporary: files being written (the owner removes its leftovers).
        stray: anything else (reported, never read).
    """

    device: str
    manifest: bool = False
    segments: dict[int, dict[int, int]] = msgspec.field(default_factory=dict)
    invites: tuple[str, ...] = ()
    joins: tuple[str, ...] = ()
    envelopes: tuple[str, ...] = ()
    temporary: tuple[str, ...] = ()
    stray: tuple[str, ...] = ()


def scan(folder: Path) -> dict[str, DeviceDir]:
    """Every device directory of the folder (an absent ``devices/`` is an empty folder).

    Directories whose names are not device ids, and symbolic links, are skipped.
    """
    devices = folder / DEVICES
    found: dict[str, DeviceDir] = {}
    try:
        entries = list(os.scandir(devices))
    except FileNotFoundError:
        return found
    for entry in entries:
        if is_device_id(entry.name) and entry.is_dir(follow_symlinks=False):
            found[entry.name] = _scan_device(Path(entry.path), entry.name)
    return found


def _scan_device(path: Path, device: str) -> DeviceDir:
    segments: dict[int, dict[int, int]] = {}
    manifest = False
    invites: list[str] = []
    joins: list[str] = []
    envelopes: list[str] = []
    temporary: list[str] = []
    stray: list[str] = []
    for name, size in _walk(path):
        leaf = name.rsplit("/", 1)[-1]
        parsed = parse_segment_name(name)
        if leaf.startswith(TEMP_PREFIX):
            temporary.append(name)
        elif name == "manifest":
            manifest = True
        elif parsed is not None:
            segments.setdefault(parsed[0], {})[parsed[1]] = size
        elif "/" not in name and name.startswith("invite-"):
            invites.append(name)
        elif "/" not in name and name.startswith("join-"):
            joins.append(name)
        elif name.startswith("keys/") and name.endswith(".keys"):
            envelopes.append(name)
        else:
            stray.append(name)
    return DeviceDir(
        device=device,
        manifest=manifest,
        segments=segments,
        invites=tuple(sorted(invites)),
        joins=tuple(sorted(joins)),
        envelopes=tuple(sorted(envelopes)),
        temporary=tuple(sorted(temporary)),
        stray=tuple(sorted(stray)),
    )


def _walk(root: Path, prefix: str = "", depth: int = 0) -> list[tuple[str, int]]:
    """(relative name, size) of every regular file under ``root``, links not followed."""
    out: list[tuple[str, int]] = []
    if depth > 3:  # keys/<recipient>/<prekey>/<file> is the deepest name
        return out
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return out
    for entry in entries:
        name = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            out.extend(_walk(Path(entry.path), name + "/", depth + 1))
        elif entry.is_file(follow_symlinks=False):
            out.append((name, entry.stat(follow_symlinks=False).st_size))
    return out


def read_file(folder: Path, device: str, name: str, *, limit: int = MAX_FILE) -> bytes | None:
    """The bytes of ``devices/<device>/<name>``, or None when it is not there (yet).

    Raises:
        Untrusted: it is not a regular file (a link, a FIFO, a directory), a directory
            on the way is a link, or it is larger than ``limit``.
    """
    *parents, leaf = _parts(device, name)
    shown = f"{device}/{name}"
    try:
        with _directory(folder, [DEVICES, device, *parents], create=False) as directory:
            fd = os.open(
                leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
            )
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Untrusted(f"{shown} is a symbolic link: not read") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{shown} is not a regular file: not read")
        if info.st_size > limit:
            raise Untrusted(f"{shown} is larger than {limit} bytes: not read")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Untrusted(f"{shown} is larger than {limit} bytes: not read")
    return data


def write_own(
    folder: Path, device: str, writes: Iterable[tuple[str, Data]], removes: Iterable[str] = ()
) -> None:
    """Write files into this device's own directory (created if need be), each atomically
    (a ``.tmp-`` file the engines ignore, fsync, rename), in order, then remove others.

    Raises:
        Untrusted: a directory on the way, or a name written or removed, is a symbolic
            link (or not what it should be): nothing is written through it.
    """
    for name, data in writes:
        *parents, leaf = _parts(device, name)
        with _directory(folder, [DEVICES, device, *parents], create=True) as directory:
            _refuse_link(directory, leaf, f"{device}/{name}")
            write_atomic_at(directory, leaf, data, 0o600, temp_prefix=TEMP_PREFIX)
    for name in removes:
        *parents, leaf = _parts(device, name)
        try:
            with _directory(folder, [DEVICES, device, *parents], create=False) as directory:
                os.unlink(leaf, dir_fd=directory)  # a link itself, never its target
                os.fsync(directory)
        except FileNotFoundError:
            continue


def _parts(device: str, name: str) -> list[str]:
    parts = name.split("/")
    if not is_device_id(device) or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"not a name inside a device directory: {device}/{name}")
    return parts


@contextlib.contextmanager
def _directory(folder: Path, parts: list[str], *, create: bool) -> Iterator[int]:
    """The directory ``folder/parts…`` open, each part entered without following a link
    (and made, 0700, when ``create``); the folder itself is the person's own path.

    Raises:
        Untrusted: a part is a symbolic link or not a directory.
        FileNotFoundError: a part is missing (``create`` false).
    """
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    opened = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        for depth, part in enumerate(parts):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=opened[-1])
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                opened.append(os.open(part, flags, dir_fd=opened[-1]))
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                shown = "/".join(parts[: depth + 1])
                raise Untrusted(
                    f"{shown} in the sync folder is a symbolic link or not a directory:"
                    " nothing is read or written through it; remove it and sync again"
                ) from None
        yield opened[-1]
    finally:
        for fd in reversed(opened):
            os.close(fd)


def _refuse_link(directory: int, name: str, shown: str) -> None:
    """Refuse to replace a link: it was put there by something other than this device."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
            raise Untrusted(
                f"{shown} in the sync folder is a symbolic link: nothing is written through"
                " it; remove it and sync again"
            )
