"""A real hikmahd on a real Unix socket, in a short temp dir (socket paths are limited
to about 108 bytes), and the semantic channel's state as its status reports it."""

from __future__ import annotations

import contextlib
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.harness.sockets import Conn, wait_for_socket


class Running:
    """One hikmahd process and the paths it uses."""

    def __init__(
        self,
        root: Path,
        *extra: str,
        env: dict[str, str] | None = None,
        module: tuple[str, ...] = ("hikmahd",),
    ) -> None:
        self.root = root
        self.module = module  # what ``python -m`` runs: hikmahd, or a wrapper and its args
        self.socket = root / "run" / "hikmahd.sock"
        self.data = root / "data"
        self.policy = root / "policy.toml"
        self.log = root / "hikmahd.log"
        self.extra = extra
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Running:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", *self.module, *self.flags(), *self.extra],
                stdout=log,
                stderr=log,
                env=self.env,
                start_new_session=True,
            )
        wait_for_socket(self.socket, self.process, self.log)
        return self

    def flags(self) -> list[str]:
        return [
            "--socket",
            str(self.socket),
            "--data-dir",
            str(self.data),
            "--policy",
            str(self.policy),
        ]

    def kill(self, sig: int = signal.SIGKILL) -> int:
        assert self.process is not None
        process, self.process = self.process, None
        process.send_signal(sig)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()  # a daemon that hangs fails this test, not the ones after it
            process.wait()
            raise

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGTERM)

    def connect(self) -> Conn:
        return Conn(self.socket)

    def call(self, method: str, **params: Any) -> Any:
        with self.connect() as conn:
            return conn.call(method, **params)

    def cli(
        self, *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The real ``hikmah`` CLI against this daemon (never autostarting another)."""
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "hikmah_cli",
                "--socket",
                str(self.socket),
                "--no-autostart",
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            input=input,
            timeout=60,
            start_new_session=True,
        )

    def cli_on_terminal(
        self, *args: str, env: dict[str, str], typed: str = ""
    ) -> tuple[int, str, str]:
        """The real CLI at a person's terminal: stdin and stderr a pty (where ``typed`` is
        typed), stdout a pipe. The exit code, stdout, and what the terminal showed."""
        leader, follower = pty.openpty()
        argv = [sys.executable, "-m", "hikmah_cli", "--socket", str(self.socket),
                "--no-autostart", *args]  # fmt: skip
        with subprocess.Popen(
            argv, stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=env
        ) as process:
            os.close(follower)
            os.write(leader, typed.encode())
            out, _ = process.communicate(timeout=60)
        shown = b""
        with contextlib.suppress(OSError):  # EIO: every end of the terminal is closed
            while chunk := os.read(leader, 4096):
                shown += chunk
        os.close(leader)
        return process.returncode, out.decode(), shown.decode(errors="replace")


@contextlib.contextmanager
def own_daemon() -> Iterator[Running]:
    """A daemon in a short temp dir of its own, removed afterwards (for a module's tests)."""
    root = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
    running = Running(root).start()
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


SEMANTIC_READY_S = 30.0  # the channel's model and vectors, on a loaded machine


def semantic(running: Running) -> dict[str, Any]:
    """The semantic channel's part of ``daemon.status``."""
    return dict(running.call("daemon.status")["semantic"])


def wait_state(running: Running, state: str, timeout: float = SEMANTIC_READY_S) -> dict[str, Any]:
    """Wait until the semantic channel is in ``state`` (``ready``: and no write's vectors
    are behind, the background having embedded them all); its status then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = semantic(running)
        if now["state"] == state and not (state == "ready" and now.get("behind")):
            return now
        time.sleep(0.05)
    raise AssertionError(f"the channel stayed {now} (wanted {state}):\n{running.log.read_text()}")
