"""hikmah-agent's MCP stdio transport, byte for byte: what hosts send that the SDK's own
client does not (a newer protocol probe, notifications, bad lines), and that a slow call
holds nothing else up."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tests.harness.daemon import Running
from tests.harness.environment import clean_env


class Stdio:
    """hikmah-agent as a host runs it, spoken to one JSON line at a time."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin: IO[bytes] = process.stdin
        self.stdout: IO[bytes] = process.stdout

    def send(self, message: Any) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.stdin.write(raw + b"\n")
        self.stdin.flush()

    def read(self) -> Any:
        line = self.stdout.readline()
        assert line, "hikmah-agent closed stdout"
        return json.loads(line)

    def request(self, request_id: int, method: str, params: Any = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.read()


@contextmanager
def served(*args: str) -> Iterator[Stdio]:
    with subprocess.Popen(
        [sys.executable, "-m", "hikmah_agent", "--no-autostart", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    ) as process:
        try:
            yield Stdio(process)
        finally:
            if process.poll() is None:
                process.kill()


def initialize(stdio: Stdio, version: str = "2025-06-18") -> Any:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.171.0"},
    }
    return stdio.request(0, "initialize", params)


def test_initialize_negotiates_the_version_and_introduces_the_server(daemon: Running) -> None:
    with served("--socket", str(daemon.socket)) as stdio:
        known = initialize(stdio)["result"]
        assert known["protocolVersion"] == "2025-06-18"
        assert known["serverInfo"]["name"] == "hikmah"
        assert known["capabilities"] == {"tools": {"listChanged": False}}
        assert "observations" in known["instructions"]
        newer = initialize(stdio, "2099-01-01")["result"]
        assert newer["protocolVersion"] == "2025-11-25"  # the newest it speaks


def test_a_newer_protocol_probe_is_refused_so_the_client_falls_back(daemon: Running) -> None:
    # Claude Code 2.1.332 and the SDK's client first send server/discover (2026-07-28).
    probe = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    with served("--socket", str(daemon.socket)) as stdio:
        refused = stdio.request(1, "server/discover", probe)
        assert refused["error"]["code"] == -32601 and refused["id"] == 1
        assert initialize(stdio)["result"]["protocolVersion"] == "2025-06-18"


def test_bad_lines_get_errors_and_the_server_goes_on(daemon: Running) -> None:
    with served("--socket", str(daemon.socket)) as stdio:
        initialize(stdio)
        stdio.send(b"{not json")
        assert stdio.read()["error"]["code"] == -32700
        stdio.send([{"jsonrpc": "2.0", "id": 5, "method": "ping"}])
        assert stdio.read()["error"]["code"] == -32600
        assert stdio.request(6, "tools/call", ["recall"])["error"]["code"] == -32602
        assert stdio.request(7, "tools/call", {"name": "purge"})["error"]["code"] == -32602
        assert stdio.request(8, "resources/list")["error"]["code"] == -32601
        # Notifications and stray responses are answered with nothing: the next reply is the ping's.
        stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        stdio.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
        stdio.send({"jsonrpc": "2.0", "id": 99, "result": {}})
        assert stdio.request(9, "ping") == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_slow_call_holds_up_neither_a_ping_nor_the_tool_list(short_tmp: Path) -> None:
    # A daemon socket that accepts and never answers: the call waits on it.
    silent = short_tmp / "silent.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(silent))
    listener.listen()
    try:
        with served("--socket", str(silent)) as stdio:
            initialize(stdio)
            call = {"name": "recall", "arguments": {"query": "deploy"}}
            stdio.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
            assert stdio.request(2, "ping")["id"] == 2
            assert len(stdio.request(3, "tools/list")["result"]["tools"]) == 15
            stdio.stdin.close()  # the host goes away: the server does not wait for ever
            assert stdio.process.wait(timeout=20) == 0
    finally:
        listener.close()
