"""The listening socket: made here (0600 in a 0700 directory) or inherited from systemd."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from pathlib import Path

import trio

LISTEN_FDS_START = 3
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


class SocketError(Exception):
    """The socket cannot be made or is in use; the message says what to do."""


def inherited_socket(environ: dict[str, str] | None = None) -> socket.socket | None:
    """The listening socket systemd passed (socket activation), if any."""
    env = os.environ if environ is None else environ
    if env.get("LISTEN_PID") != str(os.getpid()) or not env.get("LISTEN_FDS", "").isdigit():
        return None
    if int(env["LISTEN_FDS"]) < 1:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)  # not passed on to anything we start
    sock = socket.socket(fileno=LISTEN_FDS_START)
    sock.listen(system_backlog())  # systemd's Backlog= may be shorter; listen() again raises it
    sock.setblocking(False)
    return sock


def secure_directory(directory: Path) -> None:
    """Create the socket directory 0700, or check an existing one is ours and private."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SocketError(f"{directory} is not a directory owned by you; refusing to use it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)


def bind_socket(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0600, replacing a stale one.

    Raises:
        SocketError: another daemon answers there, or the path is unusable.
    """
    secure_directory(path.parent)
    if path.exists() or path.is_symlink():
        if _answers(path):
            raise SocketError(f"another hikmahd is already serving {path}")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is born 0600: no window where others could connect
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
    sock.listen(system_backlog())
    sock.setblocking(False)
    return sock


def system_backlog() -> int:
    """The longest queue of connections not yet accepted the system allows: a burst
    of connections waits there instead of being refused with EAGAIN."""
    try:
        return max(int(SOMAXCONN.read_text()), socket.SOMAXCONN)
    except (OSError, ValueError):
        return socket.SOMAXCONN


def unlink_if_ours(path: Path, inode: int) -> None:
    """Remove the socket file on a clean stop, unless another daemon replaced it."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            path.unlink()


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            return False
        raise SocketError(f"cannot check {path}: {exc.strerror}") from None
    finally:
        probe.close()
    return True


def notify_systemd(message: str) -> None:
    """Tell systemd (``Type=notify``) about our state; nothing when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(message.encode())


def trio_listener(sock: socket.socket) -> trio.SocketListener:
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))
