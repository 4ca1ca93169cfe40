"""The agent client's one connection to hikmahd, lowered to agent privileges before any use.

The daemon detects agent sessions from the peer's environment on its own; the
link also declares itself with ``session.restrict`` as the very first request
on every connection it opens, so the restriction holds even when the agent's
host sets none of the variables detection looks for. The daemon applies a
restriction to the whole process and never lifts it.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from hikmah.principal import detect_agent_session
from hikmah_cli.client import Client, Unavailable, connect

_HOST = re.compile(r"[^a-z0-9._-]+")
DEFAULT_HOST = "mcp-client"


def host_from_client_name(name: str | None) -> str:
    """An MCP client's ``clientInfo.name`` as a locator host (``Claude Code`` → ``claude-code``)."""
    host = _HOST.sub("-", (name or "").strip().lower()).strip("-._")[:32]
    return host or DEFAULT_HOST


class Link:
    """A blocking JSON-RPC link, opened (and restricted) on first use; thread-safe."""

    def __init__(self, socket_path: Path, *, autostart: bool, daemon_args: list[str]) -> None:
        self.socket_path = socket_path
        self.autostart = autostart
        self.daemon_args = daemon_args
        self.session = detect_agent_session(os.environ)
        self._client: Client | None = None
        self._lock = threading.Lock()
        self.principal: dict[str, Any] | None = None

    @property
    def host(self) -> str | None:
        """The host the environment names, if any (it wins over what the MCP client says)."""
        return None if self.session is None else self.session.host

    def call(self, method: str, params: dict[str, Any], client_name: str | None = None) -> Any:
        """Send one request, connecting and restricting first if needed.

        A connection kept from an earlier call may have died with a daemon that
        was restarted since; then the request is sent once more on a new one.

        Raises:
            Unavailable: no daemon answers.
            RemoteError: the daemon refused the request.
        """
        with self._lock:
            if self._client is not None:
                try:
                    return self._client.call(method, params)
                except Unavailable:
                    self._client.close()
                    self._client = None
            return self._connected(client_name).call(method, params)

    def _connected(self, client_name: str | None) -> Client:
        if self._client is None:
            client = connect(
                self.socket_path, autostart=self.autostart, daemon_args=self.daemon_args
            )
            try:
                self.principal = client.call("session.restrict", self._declaration(client_name))
            except BaseException:
                client.close()
                raise
            self._client = client
        return self._client

    def _declaration(self, client_name: str | None) -> dict[str, Any]:
        if self.session is not None and self.session.session_id != "unknown":
            return {"host": self.session.host, "session_id": self.session.session_id}
        host = self.host or host_from_client_name(client_name)
        return {"host": host, "session_id": f"mcp-{os.getpid()}"}

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
