"""Server subprocesses for the benchmarks: hikmahd (or an echo server) on a Unix socket."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.sockets import wait_for_socket

START_TIMEOUT_S = 60.0
OK_PREFIX = b'{"jsonrpc":"2.0","result"'  # how hikmahd's msgspec encoder starts a success


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS``, ``RssAnon`` (heap), ``RssFile`` (mapped files: the LMDB pages touched)
    and ``VmHWM`` (peak RSS) of a process, in KiB, from ``/proc/<pid>/status``."""
    fields = ("VmRSS", "RssAnon", "RssFile", "VmHWM")
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in fields:
            found[name] = int(value.split()[0])
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hikmahd_argv(directory: Path, *extra: str) -> list[str]:
    """``python -m hikmahd`` with its socket, data dir and policy under ``directory``."""
    return [
        sys.executable, "-m", "hikmahd",
        "--socket", str(directory / "s"),
        "--data-dir", str(directory / "data"),
        "--policy", str(directory / "policy.toml"),
        *extra,
    ]  # fmt: skip


@dataclass
class Server:
    """A server subprocess on the Unix socket ``directory/s``, logging to ``directory/log``."""

    name: str
    directory: Path
    argv: list[str]
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def socket(self) -> Path:
        return self.directory / "s"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def launch(self) -> None:
        """Start the process (without waiting for it to listen)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=log, env=self.env, start_new_session=True
            )

    def listening(self, poll_s: float = 0.02) -> None:
        """Until the socket accepts a connection, tried every ``poll_s`` seconds."""
        assert self.process is not None
        wait_for_socket(
            self.socket,
            self.process,
            self.log,
            name=self.name,
            timeout_s=START_TIMEOUT_S,
            poll_s=poll_s,
        )

    def start(self) -> Server:
        self.launch()
        self.listening()
        return self

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> None:
        """SIGTERM, and SIGKILL if it has not exited within 20 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


@dataclass
class Daemon(Server):
    """hikmahd, ready once its promise queue is loaded (the start-up the reminder and
    scale benchmarks time)."""

    loaded_s: float = 0.0  # from Popen to the "promise queue loaded" log line

    def start(self) -> Daemon:
        self.launch()
        self.loaded_s = self.wait_for_log("promise queue loaded")
        return self

    def wait_for_log(self, text: str) -> float:
        """Seconds from ``Popen`` until ``text`` shows in the log (polled every 5 ms)."""
        assert self.process is not None
        while time.monotonic() - self.started_at < START_TIMEOUT_S:
            if text in self.log.read_text(errors="replace"):
                return time.monotonic() - self.started_at
            if self.process.poll() is not None:
                raise RuntimeError(f"hikmahd exited {self.process.returncode}:\n{self.log_text()}")
            time.sleep(0.005)
        raise RuntimeError(f"hikmahd did not log {text!r} in {START_TIMEOUT_S} s")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def rss_anon(self) -> int:
        """Anonymous resident memory (heap, not the LMDB mmap), in bytes."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no RssAnon in /proc status")


def cli(server: Server, *args: str) -> tuple[float, dict[str, Any]]:
    """Wall time (ms) of one ``hikmah`` run against ``server``, and its JSON report."""
    argv = [sys.executable, "-m", "hikmah_cli", "--socket", str(server.socket), "--no-autostart",
            *args, "--json"]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    took = (time.perf_counter() - began) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"hikmah {' '.join(args[:3])} exited {done.returncode}: {done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    return took, report


def hikmahd_daemon(root: Path, directory: Path) -> Daemon:
    """hikmahd on ``directory``, logging the queue's line, with no session bus under ``root``."""
    argv = hikmahd_argv(directory, "--log-level", "info")
    return Daemon("hikmahd", directory, argv, env=daemon_env(root))


def daemon_env(root: Path) -> dict[str, str]:
    """The environment with a session bus address nobody listens on."""
    return {**os.environ, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={root}/no-bus"}


# The semantic channel loads in the background after the socket accepts; a figure of
# the channel on waits until it is ready (a rebuild at 1M takes minutes).
SEMANTIC_TIMEOUT_S = 3600.0
CHANNEL_OFF = "[semantic]\nenabled = false\n"


def wait_semantic_ready(path: Path, timeout_s: float = SEMANTIC_TIMEOUT_S) -> dict[str, Any]:
    """``daemon.status``'s semantic part once the channel is ready, no write's vectors
    behind (or off)."""
    deadline = time.monotonic() + timeout_s
    request = b'{"jsonrpc":"2.0","method":"daemon.status","id":1}\n'
    while True:
        (reply,) = call_many(path, [request], window=1)
        channel: dict[str, Any] = reply["semantic"]
        if channel["state"] == "off" or (channel["state"] == "ready" and not channel["behind"]):
            return channel
        if channel["state"] == "unavailable" or time.monotonic() > deadline:
            raise RuntimeError(f"the semantic channel did not come up: {channel}")
        time.sleep(0.01)


def call_many(path: Path, lines: list[bytes], window: int = 64) -> list[dict[str, Any]]:
    """Send ``lines`` pipelined, ``window`` at a time; every result, in order."""
    results = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        replies = sock.makefile("rb")
        for first in range(0, len(lines), window):
            chunk = lines[first : first + window]
            sock.sendall(b"".join(chunk))
            for _ in chunk:
                reply = replies.readline()
                if not reply.startswith(OK_PREFIX):
                    raise RuntimeError(f"request refused: {reply[:300]!r}")
                results.append(json.loads(reply)["result"])
    return results
