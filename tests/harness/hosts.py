"""A person's machine in miniature, for the agent hosts' tests: their HOME, runtime
directory, project and daemon, their ``hikmah`` CLI, and a host run headless in it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hikmah_agent.locate import lock_holder
from tests.harness.sockets import wait_for_socket

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
