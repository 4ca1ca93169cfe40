"""Reading the sync folder: what each device directory holds, read defensively.

The folder is untrusted storage, so a name is only ever read as a regular
file, never through a symbolic link (which could point anywhere) and never
blocking (a FIFO would hang the reader), and never past a size limit. Files
being written (``.tmp-*``) are never read. Nothing here writes: a device
writes only its own directory, with :mod:`hikmah.durable`'s atomic replace.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

import msgspec

from hikmah.sync.device import Untrusted, is_device_id
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
        Untrusted: it is not a regular file (a link, a FIFO, a directory) or is
            larger than ``limit``.
    """
    if not is_device_id(device) or ".." in name.split("/") or name.startswith("/"):
        raise ValueError(f"not a name inside a device directory: {device}/{name}")
    path = folder / DEVICES / device / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Untrusted(f"{device}/{name} is a symbolic link: not read") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{device}/{name} is not a regular file: not read")
        if info.st_size > limit:
            raise Untrusted(f"{device}/{name} is larger than {limit} bytes: not read")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Untrusted(f"{device}/{name} is larger than {limit} bytes: not read")
    return data
