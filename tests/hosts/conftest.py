"""The real agent hosts, driven headless against a scripted model on loopback, on a
person's machine in miniature.

Each test gets a person: a HOME of their own (so no host run ever touches the real
user's configuration), a private runtime directory as their login session would have
(``XDG_RUNTIME_DIR``), their daemon on the systemd socket path under it
(``$XDG_RUNTIME_DIR/hikmah/hikmahd.sock``, socket-activated as the user unit does it
when ``systemd-socket-activate`` is there), their ``hikmah`` CLI, and a git repository
to work in. Hosts come from tests/hosts/install.py (npm, pinned versions); where one
cannot be installed or started, its tests skip and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.hosts import Person

from . import install


@pytest.fixture
def person() -> Iterator[Person]:
    root = Path(tempfile.mkdtemp(prefix="hkh", dir="/tmp"))  # short: socket paths
    env = {
        "HOME": str(root / "home"),
        "USER": os.environ.get("USER", "person"),
        "LOGNAME": os.environ.get("LOGNAME", "person"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SHELL": "/bin/sh",
        "LANG": "C.UTF-8",
        "TMPDIR": str(root / "tmp"),
        "XDG_RUNTIME_DIR": str(root / "run"),
    }
    found = Person(root, env)
    for directory in (found.home, found.runtime, root / "tmp"):
        directory.mkdir(mode=0o700)
    found.project.mkdir()
    subprocess.run(["git", "init", "-q", str(found.project)], check=True, timeout=30)
    try:
        yield found
    finally:
        found.stop()
        shutil.rmtree(root, ignore_errors=True)


def host_executable(host: install.Host) -> Path:
    """The installed host, or a skip that says why it cannot be had here."""
    try:
        executable = install.install(host, install.cache_dir())
    except RuntimeError as exc:
        pytest.skip(f"{host.package}@{host.version} cannot be installed here: {exc}")
    # Some hosts write into HOME even for --version (Gemini CLI, OpenCode): a throwaway one.
    with tempfile.TemporaryDirectory(prefix="hkv", ignore_cleanup_errors=True) as home:
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        try:
            version = subprocess.run(
                [str(executable), "--version"], capture_output=True, text=True, timeout=60,
                env=env, cwd=home, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"{host.package}@{host.version} does not start here: {exc}")
    if version.returncode != 0 or host.version not in version.stdout:
        pytest.skip(
            f"{host.package}@{host.version} does not start here: {version.stdout}{version.stderr}"
        )
    return executable


@pytest.fixture(scope="session")
def claude() -> Path:
    return host_executable(install.CLAUDE_CODE)


@pytest.fixture(scope="session")
def codex() -> Path:
    return host_executable(install.CODEX)


@pytest.fixture(scope="session")
def gemini() -> Path:
    return host_executable(install.GEMINI_CLI)


@pytest.fixture(scope="session")
def opencode() -> Path:
    return host_executable(install.OPENCODE)
