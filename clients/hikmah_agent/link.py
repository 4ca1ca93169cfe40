"""The agent client's one connection to hikmahd, lowered to agent privileges before any use,
and who the writer behind it is.

The daemon detects agent sessions from the peer's environment on its own; the
link also declares itself with ``session.restrict`` as the very first request
on every connection it opens, so the restriction holds even when the agent's
host sets none of the variables detection looks for. The daemon applies a
restriction to the whole process and never lifts it.

The writer (host and session id) comes from what each host really passes its
MCP servers (docs/agents.md has what was observed): Claude Code its session id
in the environment, Codex nothing in the environment but its session id in the
``_meta`` of every tool call; the host otherwise comes from ``clientInfo.name``.
The first call fixes the writer for the life of the process, as the daemon fixes
the restriction.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hikmah.access.principal import detect_agent_session, host_of_client
from hikmah_client.connection import Client, Unavailable, connect

from .locate import lock_holder
from .protocol import Caller

_HOST = re.compile(r"[^a-z0-9._-]+")
DEFAULT_HOST = "mcp-client"
# Where a tool call's _meta carries the host's session id, most specific first
# (Codex 0.171 sends sessionId, threadId and x-codex-turn-metadata.session_id).
META_SESSION_KEYS = ("sessionId", "threadId")


@dataclass(frozen=True)
class Writer:
    """Who writes through the link: ``agent:<host>``, in session ``session_id``."""

    host: str
    session_id: str

    @property
    def source(self) -> str:
        return f"agent:{self.host}"


def host_from_client_name(name: str | None) -> str:
    """An MCP client's ``clientInfo.name`` as a locator host: a known host's own name
    (``codex-mcp-client`` → ``codex``), else the name made safe (``Codex CLI`` →
    ``codex-cli``)."""
    known = host_of_client(name)
    if known is not None:
        return known
    host = _HOST.sub("-", (name or "").strip().lower()).strip("-._")[:32]
    return host or DEFAULT_HOST


def writer_of(environ: Mapping[str, str], caller: Caller) -> Writer:
    """The writer a tool call comes from: the host and session id of the environment
    when it names both, else the host the environment or ``clientInfo`` names and the
    session id of the call's ``_meta``, else ``mcp-<pid>``."""
    session = detect_agent_session(environ)
    if session is not None and session.session_id != "unknown":
        return Writer(session.host, session.session_id)
    host = session.host if session is not None else host_from_client_name(caller.client_name)
    for key in META_SESSION_KEYS:
        value = caller.meta.get(key)
        if isinstance(value, str) and value.strip():
            return Writer(host, value.strip())
    return Writer(host, f"mcp-{os.getpid()}")


class Link:
    """A blocking JSON-RPC link, opened (and restricted) on first use; thread-safe."""

    def __init__(
        self, socket_path: Path, *, autostart: bool, daemon_args: list[str], data_dir: Path
    ) -> None:
        self.socket_path = socket_path
        self.autostart = autostart
        self.daemon_args = daemon_args
        self.data_dir = data_dir
        self._writer: Writer | None = None
        self._client: Client | None = None
        self._lock = threading.Lock()

    def writer(self, caller: Caller) -> Writer:
        """The writer of this process, fixed by its first tool call."""
        with self._lock:
            if self._writer is None:
                self._writer = writer_of(os.environ, caller)
            return self._writer

    def call(self, method: str, params: dict[str, Any], caller: Caller) -> Any:
        """Send one request, connecting and restricting first if needed.

        A connection kept from an earlier call may have died with a daemon that
        was restarted since; then the request is sent once more on a new one.

        Raises:
            Unavailable: no daemon answers.
            RemoteError: the daemon refused the request.
        """
        writer = self.writer(caller)
        with self._lock:
            if self._client is not None:
                try:
                    return self._client.call(method, params)
                except Unavailable:
                    self._client.close()
                    self._client = None
            return self._connected(writer).call(method, params)

    def _connected(self, writer: Writer) -> Client:
        if self._client is None:
            client = self._open()
            try:
                declaration = {"host": writer.host, "session_id": writer.session_id}
                client.call("session.restrict", declaration)
            except BaseException:
                client.close()
                raise
            self._client = client
        return self._client

    def _open(self) -> Client:
        """A connection to the daemon, starting one only when none runs for the data
        directory: a daemon that holds it but listens elsewhere is the person's, and a
        second one would only fail on its lock."""
        try:
            return connect(self.socket_path, autostart=False, daemon_args=self.daemon_args)
        except Unavailable:
            if not self.autostart:
                raise
        holder = lock_holder(self.data_dir)
        if holder is not None:
            raise Unavailable(
                f"hikmahd (pid {holder}) is running for {self.data_dir} but does not answer"
                f" at {self.socket_path}: the agent host did not pass the variables that say"
                " where its socket is. Rerun `hikmah setup` for the host, or give"
                " hikmah-agent the socket `hikmah status` shows with --socket"
            )
        return connect(self.socket_path, autostart=True, daemon_args=self.daemon_args)
