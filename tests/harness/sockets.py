"""Unix sockets as tests and benchmarks see them: waiting for a server to listen, and a
raw JSON-lines connection."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 20.0


def wait_for_socket(
    path: Path,
    process: subprocess.Popen[bytes],
    log: Path,
    *,
    name: str = "hikmahd",
    timeout_s: float = START_TIMEOUT_S,
    poll_s: float = 0.02,
) -> None:
    """Until ``path`` accepts a connection, tried every ``poll_s`` seconds. A
    ``RuntimeError`` with the server's ``log`` when ``process`` (called ``name`` there)
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited {process.returncode}:\n{log.read_text()}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(str(path))
            return
        except OSError:
            time.sleep(poll_s)
    raise RuntimeError(f"{name} did not listen within {timeout_s} s:\n{log.read_text()}")


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
