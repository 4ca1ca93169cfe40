"""Where Hikmah keeps its socket, data and policy (DESIGN.md §7) and its systemd user
units, what project a directory belongs to, and who the person is.

Standard library only: the CLI imports this on every shell command. Each
function resolves one path in the same order: the explicit flag, the
``HIKMAH_*`` override, the XDG location, a fallback.
"""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Mapping
from pathlib import Path

APP = "hikmah"
SOCKET_NAME = "hikmahd.sock"


def socket_path(flag: str | None = None, environ: Mapping[str, str] = os.environ) -> Path:
    """``--socket``, ``$HIKMAH_SOCKET``, ``$XDG_RUNTIME_DIR/hikmah/hikmahd.sock``, or
    ``/tmp/hikmah-<uid>/hikmahd.sock``."""
    if flag:
        return Path(flag)
    if environ.get("HIKMAH_SOCKET"):
        return Path(environ["HIKMAH_SOCKET"])
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / APP / SOCKET_NAME
    return Path(f"/tmp/{APP}-{os.getuid()}") / SOCKET_NAME


def data_dir(flag: str | None = None, environ: Mapping[str, str] = os.environ) -> Path:
    """``--data-dir``, ``$HIKMAH_DATA_DIR``, ``$XDG_DATA_HOME/hikmah`` or
    ``~/.local/share/hikmah``."""
    if flag:
        return Path(flag)
    if environ.get("HIKMAH_DATA_DIR"):
        return Path(environ["HIKMAH_DATA_DIR"])
    return _xdg(environ, "XDG_DATA_HOME", ".local/share") / APP


def policy_path(flag: str | None = None, environ: Mapping[str, str] = os.environ) -> Path:
    """``--policy``, ``$HIKMAH_POLICY``, ``$XDG_CONFIG_HOME/hikmah/policy.toml`` or
    ``~/.config/hikmah/policy.toml``. The file need not exist."""
    if flag:
        return Path(flag)
    if environ.get("HIKMAH_POLICY"):
        return Path(environ["HIKMAH_POLICY"])
    return _xdg(environ, "XDG_CONFIG_HOME", ".config") / APP / "policy.toml"


def model_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$HIKMAH_MODEL_CACHE``, ``$XDG_CACHE_HOME/hikmah/models`` or
    ``~/.cache/hikmah/models``: models built from installed weights (derived, so a
    cache: deleting it costs a rebuild of a few seconds)."""
    if environ.get("HIKMAH_MODEL_CACHE"):
        return Path(environ["HIKMAH_MODEL_CACHE"])
    return _xdg(environ, "XDG_CACHE_HOME", ".cache") / APP / "models"


def systemd_user_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_CONFIG_HOME/systemd/user`` or ``~/.config/systemd/user``: where systemd
    reads the units a user wrote (``hikmah setup systemd`` writes hikmahd's)."""
    return _xdg(environ, "XDG_CONFIG_HOME", ".config") / "systemd" / "user"


def _xdg(environ: Mapping[str, str], variable: str, fallback: str) -> Path:
    value = environ.get(variable)
    if value and os.path.isabs(value):
        return Path(value)
    home = environ.get("HOME") or os.path.expanduser("~")
    return Path(home) / fallback


def project_root(directory: Path) -> Path:
    """The nearest enclosing directory with a ``.git`` entry, else ``directory`` itself."""
    directory = directory.resolve()
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return directory


def project_scope(directory: Path) -> str:
    """``project:<root>``: the scope of memory about the project ``directory`` belongs to."""
    return f"project:{project_root(directory)}"


@functools.cache  # every write asks; the login may be looked up in the passwd file
def person_source() -> str:
    """``human:<login>``: the source of the person's own writes (the user this process
    runs as), ``human:unknown`` where the system knows no login name (a container
    without a passwd entry)."""
    try:
        return f"human:{getpass.getuser()}"
    except (KeyError, OSError):
        return "human:unknown"
