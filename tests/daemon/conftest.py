"""A real hikmahd on a real Unix socket, in a short temp dir (socket paths are limited
to about 108 bytes)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.secret_service import SecretServiceSession

START_TIMEOUT_S = 20.0


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


class Conn:
    """A raw JSON-lines connection, for protocol tests."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(str(path))
        self.buffer = b""
        self.next_id = 0

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def read(self) -> Any:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("the daemon closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def request(self, method: str, **params: Any) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "method": method, "params": params, "id": self.next_id})
        return self.read()

    def call(self, method: str, **params: Any) -> Any:
        reply = self.request(method, **params)
        assert "result" in reply, reply
        return reply["result"]

    def nothing_more(self, wait: float = 0.3) -> bool:
        """True when no byte arrives within ``wait`` seconds (and the connection is open)."""
        if self.buffer:
            return False
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(1)
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(20)
        self.buffer += data
        return False


def wait_for_socket(path: Path, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hikmahd exited {process.returncode}:\n{log.read_text()}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(str(path))
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"hikmahd did not listen within {START_TIMEOUT_S} s:\n{log.read_text()}")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


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


@pytest.fixture
def daemon(short_tmp: Path) -> Iterator[Running]:
    running = Running(short_tmp).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def words_daemon(short_tmp: Path) -> Iterator[Running]:
    """A daemon whose recall is the words' alone (no vectors to wait for)."""
    running = Running(short_tmp)
    running.policy.write_text("[semantic]\nenabled = false\n")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def clean_env(**extra: str) -> dict[str, str]:
    """An environment without any coding-agent variable, plus ``extra``."""
    agent = (
        "CLAUDECODE",
        "CLAUDE_CODE_",
        "CODEX_",
        "CURSOR_",
        "GEMINI_CLI",
        "OPENCODE",
        "AI_AGENT",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(agent)}
    env.update(extra)
    return env


@pytest.fixture
def secret_service(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SecretServiceSession]:
    """GNOME Keyring's Secret Service on a private bus, named in this process's environment."""
    session = SecretServiceSession(short_tmp / "keyring")
    try:
        session.start()
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session.address)
        yield session
    finally:
        session.stop()


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
