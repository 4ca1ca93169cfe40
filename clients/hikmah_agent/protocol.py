"""The Model Context Protocol over stdio, as much of it as a server of tools needs.

One JSON-RPC 2.0 message per line on stdin and stdout (the MCP stdio transport).
The server answers ``initialize``, ``ping``, ``tools/list`` and ``tools/call``,
ignores notifications, and says "method not found" to anything else, which is
also how a client that first probes a newer protocol (``server/discover``)
learns to fall back to ``initialize``. Standard library only, so that the
first answer goes out a few milliseconds after the process starts: hosts give
their MCP servers about a second before the first turn goes out without them.

Tool calls run in threads of their own, so that a slow call (a daemon being
started) never holds up a ping or another call; every message to stdout goes
through one lock, one whole line at a time.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any, Protocol

log = logging.getLogger(__name__)

# Newest first; a client asking for another gets the newest (the spec's negotiation).
DRAIN_S = 5.0
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603

JSON = dict[str, Any]


@dataclass(frozen=True)
class Caller:
    """What a tool call says about who makes it.

    Attributes:
        client_name: ``clientInfo.name`` from ``initialize`` (``claude-code``,
            ``codex-mcp-client``), if the client gave one.
        meta: the call's ``_meta`` object as sent (Codex puts its session id there).
    """

    client_name: str | None
    meta: Mapping[str, Any]


class Toolbox(Protocol):
    """The tools a server offers."""

    def listing(self) -> list[JSON]:
        """Every tool as ``tools/list`` shows it."""
        ...

    def call(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> tuple[str, bool]:
        """Run one tool; return its text and whether it is an error the agent should read.

        Raises:
            KeyError: no tool has that name.
        """
        ...


class _Failure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Server:
    """An MCP server of ``toolbox`` over a pair of byte streams."""

    def __init__(self, name: str, version: str, instructions: str, toolbox: Toolbox) -> None:
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.toolbox = toolbox
        self.client_name: str | None = None
        self._write_lock = threading.Lock()
        self._calls: set[threading.Thread] = set()
        self._handlers: dict[str, Callable[[JSON], JSON]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "tools/list": lambda params: {"tools": self.toolbox.listing()},
        }

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Answer what arrives on ``stdin`` until it closes, then give the calls still
        running :data:`DRAIN_S` to answer too (a client that closed its end may still
        read; one that went away for good would wait for nothing)."""
        self._out = stdout
        for line in stdin:
            if line.strip():
                self._receive(line)
        deadline = time.monotonic() + DRAIN_S
        for call in list(self._calls):
            call.join(max(0.0, deadline - time.monotonic()))

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            self._send({"jsonrpc": "2.0", "id": None, "error": _error(PARSE_ERROR, str(exc))})
            return
        if not isinstance(message, dict):
            # MCP has had no batches since 2025-06-18, and no host sends them.
            error = _error(INVALID_REQUEST, "expected one JSON-RPC object per line")
            self._send({"jsonrpc": "2.0", "id": None, "error": error})
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to a request we never send
        if "id" not in message:
            return  # notifications (initialized, cancelled, …) need nothing from a tools server
        request_id, params = message["id"], message.get("params") or {}
        if not isinstance(params, dict):
            self._answer(request_id, error=_error(INVALID_PARAMS, "params must be an object"))
        elif method == "tools/call":
            call = threading.Thread(target=self._call, args=(request_id, params), daemon=True)
            self._calls.add(call)
            call.start()
        elif method in self._handlers:
            try:
                result = self._handlers[method](params)
            except Exception:
                log.exception("%s failed", method)
                self._answer(request_id, error=_error(INTERNAL_ERROR, f"{method} failed"))
            else:
                self._answer(request_id, result=result)
        else:
            self._answer(request_id, error=_error(METHOD_NOT_FOUND, f"no method {method}"))

    def _initialize(self, params: JSON) -> JSON:
        client = params.get("clientInfo")
        if isinstance(client, dict) and isinstance(client.get("name"), str):
            self.client_name = client["name"]
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": self.info,
            "instructions": self.instructions,
        }

    def _call(self, request_id: object, params: JSON) -> None:
        try:
            result = self._run(params)
        except _Failure as failure:
            self._answer(request_id, error=_error(failure.code, str(failure)))
        except Exception:
            log.exception("tool call failed")
            self._answer(request_id, result=_text("Hikmah failed unexpectedly; see its log.", True))
        else:
            self._answer(request_id, result=result)
        finally:
            self._calls.discard(threading.current_thread())

    def _run(self, params: JSON) -> JSON:
        name, arguments = params.get("name"), params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise _Failure(INVALID_PARAMS, "tools/call needs a tool name and an arguments object")
        caller = Caller(self.client_name, meta if isinstance(meta, dict) else {})
        try:
            text, is_error = self.toolbox.call(name, arguments, caller)
        except KeyError:
            raise _Failure(INVALID_PARAMS, f"no tool named {name}") from None
        return _text(text, is_error)

    def _answer(
        self, request_id: object, *, result: JSON | None = None, error: JSON | None = None
    ) -> None:
        reply: JSON = {"jsonrpc": "2.0", "id": request_id}
        reply.update({"error": error} if error is not None else {"result": result})
        self._send(reply)

    def _send(self, message: JSON) -> None:
        data = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        with self._write_lock:
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError):
                log.warning("the MCP client went away before an answer could be sent")


def _text(text: str, is_error: bool) -> JSON:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _error(code: int, message: str) -> JSON:
    return {"code": code, "message": message}
