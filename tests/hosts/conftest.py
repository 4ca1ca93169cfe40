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

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hikmah_agent.locate import lock_holder
from tests.daemon.conftest import wait_for_socket

from . import install
from .fakemodel import FakeModel

HOST_TIMEOUT_S = 120  # a whole headless run; they take a few seconds
BIN = Path(sys.executable).parent


@dataclass
class Person:
    """Their HOME, runtime directory, project (a git repository) and daemon socket."""

    root: Path
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.runtime = self.root / "run"
        self.project = self.home / "app"
        self.socket = self.runtime / "hikmah" / "hikmahd.sock"  # where hikmahd.socket listens

    def hikmah(self, *args: str, env: dict[str, str] | None = None) -> Any:
        """The person's own ``hikmah`` (the installed script, as setup writes it), with
        ``--json`` output parsed; a failure fails the test."""
        done = subprocess.run(
            [str(BIN / "hikmah"), *args],
            capture_output=True, text=True, timeout=60, cwd=self.project,
            env=env or self.env, start_new_session=True,
        )  # fmt: skip
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout) if "--json" in args else done.stdout

    def start_daemon(self) -> None:
        """hikmahd with every path at its default for this person, listening on the
        systemd socket path."""
        self.socket.parent.mkdir(mode=0o700, parents=True)
        log = self.root / "hikmahd.log"
        daemon = [sys.executable, "-m", "hikmahd"]
        activate = shutil.which("systemd-socket-activate")
        # As hikmahd.socket does it: systemd listens, the first connection starts hikmahd.
        argv = [activate, "-l", str(self.socket), *daemon] if activate else daemon
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=out, env=self.env, start_new_session=True
            )
        self.processes.append(process)
        wait_for_socket(self.socket, process, log)

    def stop(self) -> None:
        """Stop the daemon: the one started here, or one the CLI or the agent started."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=20)
        autostarted = lock_holder(self.home / ".local" / "share" / "hikmah")
        if autostarted is not None:
            os.kill(autostarted, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while (
                lock_holder(self.home / ".local" / "share" / "hikmah")
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)


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


def run_host(
    argv: list[str], person: Person, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=HOST_TIMEOUT_S, cwd=person.project,
        env=env, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def shell_remember(content: str, *flags: str) -> str:
    """A shell command for an agent's shell tool: the person's ``hikmah remember``, then
    its exit code (``exit=N``)."""
    return f"{shlex.join([str(BIN / 'hikmah'), 'remember', content, *flags])}; echo exit=$?"


def provenance_of(person: Person, content: str) -> dict[str, Any]:
    """The provenance of the memory stored with exactly this content."""
    (found,) = person.hikmah("recall", content, "--json", "--limit", "1")["results"]
    assert found["trace"]["content"] == content
    provenance: dict[str, Any] = found["trace"]["provenance"]
    return provenance


def texts(value: object) -> list[str]:
    """Every string inside a JSON value (a request body), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in texts(item)]
    return []


__all__ = [
    "FakeModel", "Person", "claude", "codex", "gemini", "opencode", "person", "provenance_of",
    "run_host", "shell_remember", "texts",
]  # fmt: skip
