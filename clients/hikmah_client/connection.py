"""A blocking JSON-RPC client over the daemon's Unix socket, with autostart."""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

AUTOSTART_TIMEOUT_S = 15.0
# How long a connect refused with EAGAIN is retried. A Unix socket refuses at once
# (never blocks) while the daemon's listen backlog is full, such as when a client
# opens and closes connections in a loop; the daemon runs and soon accepts again.
BUSY_RETRY_S = 1.0
_FIRST_BACKOFF_S = 0.005
_MAX_BACKOFF_S = 0.1
_ids = itertools.count(1)


class Unavailable(Exception):
    """No daemon answers; the message says what was tried."""


class NotRunning(Unavailable):
    """Nothing listens at the socket, and no daemon was to be started."""


class RemoteError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.data = data

    @property
    def reason(self) -> str | None:
        return self.data.get("reason") if isinstance(self.data, dict) else None


class Client:
    def __init__(self, path: Path, timeout: float | None = 60.0) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self._buffer = b""

    def close(self) -> None:
        self.sock.close()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and wait for its answer.

        Raises:
            RemoteError: the daemon refused or failed the request.
            Unavailable: the connection broke.
        """
        return self.result(self.send(method, params))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, encoded: str | None = None
    ) -> int:
        """Send one request without waiting for its answer; its id, for :meth:`result`.
        ``encoded``: the params already as JSON text (an import page, encoded once as it
        was built), instead of ``params``.

        Raises:
            Unavailable: the connection broke.
        """
        request_id = next(_ids)
        text = json.dumps(params or {}, ensure_ascii=False) if encoded is None else encoded
        method_text = json.dumps(method)
        line = f'{{"jsonrpc":"2.0","method":{method_text},"params":{text},"id":{request_id}}}'
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError as exc:
            raise Unavailable(f"the connection to hikmahd at {self.path} broke: {exc}") from None
        return request_id

    def result(self, request_id: int) -> Any:
        """The answer to the request :meth:`send` sent as ``request_id``.

        Raises:
            RemoteError: the daemon refused or failed the request.
            Unavailable: the connection broke.
        """
        try:
            reply = self._read_reply(request_id)
        except OSError as exc:
            raise Unavailable(f"the connection to hikmahd at {self.path} broke: {exc}") from None
        if "error" in reply:
            error = reply["error"]
            raise RemoteError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    def _read_reply(self, request_id: int) -> dict[str, Any]:
        while True:
            newline = self._buffer.find(b"\n")
            while newline < 0:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise Unavailable(f"hikmahd at {self.path} closed the connection")
                self._buffer += chunk
                newline = self._buffer.find(b"\n")
            line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
            message = json.loads(line)
            # Skip event notifications (they have a method); an error about an
            # unreadable request has a null id.
            if (
                isinstance(message, dict)
                and "method" not in message
                and message.get("id") in (request_id, None)
            ):
                return message


def connect(
    socket_path: Path,
    *,
    autostart: bool,
    daemon_args: list[str],
) -> Client:
    """A client of the daemon at ``socket_path``, starting one if none answers.

    Raises:
        NotRunning: none listens, and ``autostart`` is off.
        Unavailable: none answers and none could be started.
    """
    try:
        return _client_when_free(socket_path)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        if not autostart:
            raise NotRunning(
                f"no hikmahd answers at {socket_path} ({exc.strerror}); start it with"
                " `hikmahd` or drop --no-autostart"
            ) from None
    except BlockingIOError:
        raise Unavailable(
            f"hikmahd at {socket_path} is running but busy: its queue of new connections"
            f" stayed full for {BUSY_RETRY_S:.0f} s; try again in a moment"
        ) from None
    except OSError as exc:
        raise Unavailable(f"cannot connect to hikmahd at {socket_path}: {exc}") from None
    return _start_daemon(socket_path, daemon_args)


def _client_when_free(socket_path: Path) -> Client:
    """A client of ``socket_path``, retrying with backoff for :data:`BUSY_RETRY_S`
    while the daemon's listen backlog is full.

    Raises:
        BlockingIOError: the backlog stayed full.
        OSError: any other failure to connect, at once.
    """
    deadline = time.monotonic() + BUSY_RETRY_S
    backoff = _FIRST_BACKOFF_S
    while True:
        try:
            return Client(socket_path)
        except BlockingIOError:
            if time.monotonic() + backoff > deadline:
                raise
        time.sleep(backoff)
        backoff = min(2 * backoff, _MAX_BACKOFF_S)


# The daemon is started by a launcher that exits at once, so that it belongs to no
# process tree but init's: a host that ends its MCP servers' whole tree (OpenCode
# does) or a terminal closing never takes it down with the client that started it.
_LAUNCHER = (
    "import os, subprocess, sys\n"
    "daemon = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, start_new_session=True)\n"
    "os.write(int(sys.argv[1]), str(daemon.pid).encode())\n"
)


def _start_daemon(socket_path: Path, daemon_args: list[str]) -> Client:
    import subprocess  # noqa: PLC0415 -- 6 ms, paid only when a daemon must be started

    directory = socket_path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = directory / "hikmahd.log"
    command = [sys.executable, "-m", "hikmahd", "--socket", str(socket_path), *daemon_args]
    told, tell = os.pipe()
    try:
        with open(log_path, "ab") as log:
            launched = subprocess.run(
                [sys.executable, "-I", "-c", _LAUNCHER, str(tell), *command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(tell,),
                check=False,
            )
        os.close(tell)
        tell = -1
        said = os.read(told, 32)
    finally:
        os.close(told)
        if tell >= 0:
            os.close(tell)
    if launched.returncode != 0 or not said.isdigit():
        raise Unavailable(f"hikmahd could not be started; see {log_path}:\n" + _tail(log_path))
    pid = int(said)
    deadline = time.monotonic() + AUTOSTART_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            return Client(socket_path)
        except OSError:
            pass
        if started_at(pid) is None:  # exited (init reaps it)
            raise Unavailable(f"hikmahd did not start; see {log_path}:\n" + _tail(log_path))
        time.sleep(0.02)
    raise Unavailable(f"hikmahd did not answer within {AUTOSTART_TIMEOUT_S:.0f} s; see {log_path}")


def started_at(pid: int) -> str | None:
    """When process ``pid`` started (a process that takes the pid later is another), or
    None once it has exited: a zombie its parent has not reaped yet has exited too, but
    not a main thread that ended while other threads of the process still wind down
    (its state reads zombie then as well)."""
    try:
        # Fields after the name, which may hold spaces and parentheses: state is the
        # third field of the line, the start time the 22nd.
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        if fields[0] in (b"Z", b"X") and len(os.listdir(f"/proc/{pid}/task")) <= 1:
            return None
    except OSError:
        return None
    return fields[19].decode()


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def environment_flags(data_dir: str | None, policy: str | None) -> list[str]:
    """The daemon flags that carry a client's own --data-dir and --policy over."""
    flags: list[str] = []
    if data_dir:
        flags += ["--data-dir", os.path.abspath(data_dir)]
    if policy:
        flags += ["--policy", os.path.abspath(policy)]
    return flags
