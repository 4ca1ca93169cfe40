"""Where the person's daemon is, seen from an MCP server whose host passed it little.

Codex starts its MCP servers with a short list of variables (``HOME``, ``PATH``,
``USER``, …) plus those its config names, so ``XDG_RUNTIME_DIR`` and every
``HIKMAH_*`` may be missing where the person's CLI has them. ``hikmah setup codex``
names them (``env_vars``); for a configuration written before that, the server
looks where the person's login session keeps its runtime directory, as
systemd-logind makes it: ``/run/user/<uid>``, owned by the user and private.
That is where the CLI's socket is (``$XDG_RUNTIME_DIR/hikmah/hikmahd.sock``) and
where the systemd socket unit listens.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from hikmah.model import paths

RUNTIME_ROOT = Path("/run/user")
PROC_LOCKS = Path("/proc/locks")
LOCK_NAME = "hikmahd.lock"  # the daemon's lock file in its data directory


def agent_socket(
    flag: str | None,
    environ: Mapping[str, str],
    runtime_root: Path = RUNTIME_ROOT,
    fallback: Path | None = None,
) -> Path:
    """The daemon socket for hikmah-agent.

    ``--socket``, ``$HIKMAH_SOCKET`` and ``$XDG_RUNTIME_DIR`` decide as for the CLI.
    Without them: the login session's ``/run/user/<uid>/hikmah/hikmahd.sock``, unless
    only the CLI's ``/tmp`` fallback (``fallback``) has a socket; the ``/tmp``
    fallback when there is no login runtime directory.
    """
    if flag or environ.get("HIKMAH_SOCKET") or environ.get("XDG_RUNTIME_DIR"):
        return paths.socket_path(flag, environ)
    fallback = fallback or paths.socket_path(None, environ)
    runtime = login_runtime_dir(os.getuid(), runtime_root)
    if runtime is None:
        return fallback
    login = paths.socket_path(None, {**environ, "XDG_RUNTIME_DIR": str(runtime)})
    if not _is_socket(login) and _is_socket(fallback):
        return fallback
    return login


def login_runtime_dir(uid: int, root: Path = RUNTIME_ROOT) -> Path | None:
    """``root/<uid>`` when it is the user's own private directory (not a symlink, owned
    by ``uid``, no access for group or others), else None."""
    candidate = root / str(uid)
    try:
        info = candidate.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077
    return candidate if private else None


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(path.lstat().st_mode)
    except OSError:
        return False


def lock_holder(data_dir: Path, locks: Path = PROC_LOCKS) -> int | None:
    """The pid of the daemon holding ``data_dir``'s lock, read from ``/proc/locks``
    (nothing is locked or opened for writing); None when no process holds it."""
    try:
        info = (data_dir / LOCK_NAME).stat()
        table = locks.read_text()
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:2187941 0 EOF"
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
            return int(fields[4])
    return None
