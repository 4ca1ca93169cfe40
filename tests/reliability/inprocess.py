"""The real daemon objects in this process: a :class:`~hikmahd.daemon.Daemon` over a
real store in a temp dir, its writer and reminders running, and connections served
by the real :class:`~hikmahd.connection.Connection` over in-memory streams.

Fast enough for property tests (a fresh trio loop per example, one store for a
whole test), and the same code path as the socket from the first byte read: frame
reader, JSON decoding, dispatcher, method, writer, reply encoding.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio.testing

from hikmah.access.principal import AgentSession
from hikmah.store.core import Store
from hikmahd.connection import Connection
from hikmahd.context import Context
from hikmahd.daemon import Config, Daemon
from hikmahd.peers import Peer, Restrictions
from hikmahd.rpc import APPLICATION_CODES, Method

# Codes a reply may carry: JSON-RPC's own, and the application codes by reason.
STANDARD_CODES = {-32700, -32600, -32601, -32602, -32603}
VALID_CODES = STANDARD_CODES | set(APPLICATION_CODES.values())
REASONS = {*APPLICATION_CODES, "invalid", "internal"}
EXCHANGE_TIMEOUT_S = 10.0


@dataclass
class RecordingNotifier:
    """Reminders that fall due go here instead of to a desktop bus."""

    shown: list[str] = field(default_factory=list)

    async def notify(self, summary: str, body: str, *, critical: bool) -> bool:
        self.shown.append(summary)
        return True


@dataclass
class Exchange:
    """The replies to some bytes sent on one connection, and how long it took."""

    replies: list[Any]
    seconds: float
    raw: bytes


class InProcess:
    """A daemon's objects around one open store; :meth:`exchange` runs a connection."""

    def __init__(self, root: Path, *, durable: bool = False) -> None:
        self.root = root
        policy = root / "policy.toml"
        self.config = Config(
            socket_path=root / "unused.sock", data_dir=root / "data", policy_path=policy
        )
        self.store = Store(self.config.data_dir, map_size=1 << 26, durable=durable)
        self.notifier = RecordingNotifier()
        self.restrictions = Restrictions()

    def close(self) -> None:
        self.store.close()

    @property
    def methods(self) -> dict[str, Method]:
        """Every method the daemon serves, read from a live dispatcher (never a list)."""
        daemon = Daemon(self.config, self.store, notifier=self.notifier)  # type: ignore[arg-type]
        return dict(daemon.dispatcher.registry.methods)

    def exchange(
        self,
        chunks: Sequence[bytes],
        *,
        session: AgentSession | None = None,
        timeout: float = EXCHANGE_TIMEOUT_S,
    ) -> Exchange:
        """Send ``chunks`` on one connection, then EOF; every reply line, decoded.

        Raises:
            trio.TooSlowError: the connection did not finish within ``timeout``.
        """
        return trio.run(self._exchange, chunks, session, timeout)

    async def _exchange(
        self, chunks: Sequence[bytes], session: AgentSession | None, timeout: float
    ) -> Exchange:
        daemon = Daemon(self.config, self.store, notifier=self.notifier)  # type: ignore[arg-type]
        daemon.services.restrictions = self.restrictions
        started = time.monotonic()
        received = bytearray()
        with trio.fail_after(timeout):
            async with trio.open_nursery() as nursery:
                await nursery.start(daemon.writer.run)
                await nursery.start(daemon.reminders.run)
                client, server = trio.testing.memory_stream_pair()
                peer = Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid(), session=session)
                connection = Connection(server, Context(daemon.services, peer), daemon.dispatcher)

                async def serve() -> None:
                    async with server:
                        await connection.serve()

                nursery.start_soon(serve)
                for chunk in chunks:
                    await client.send_all(chunk)
                await client.send_eof()
                while data := await client.receive_some(1 << 16):
                    received += data
                await daemon.writer.close()
                nursery.cancel_scope.cancel()
        lines = [line for line in bytes(received).split(b"\n") if line]
        return Exchange([json.loads(line) for line in lines], time.monotonic() - started, received)


@contextmanager
def in_process(root: Path, *, durable: bool = False) -> Iterator[InProcess]:
    served = InProcess(root, durable=durable)
    try:
        yield served
    finally:
        served.close()


def problems(reply: Any, *, allow: Callable[[dict[str, Any]], bool] = lambda e: False) -> list[str]:
    """What is wrong with one JSON-RPC 2.0 response (or batch of them); [] when fine.

    ``allow`` may excuse an internal error (a known bug, tested on its own).
    """
    if isinstance(reply, list):
        if not reply:
            return ["an empty batch reply"]
        return [p for item in reply for p in problems(item, allow=allow)]
    if not isinstance(reply, dict):
        return [f"a reply that is not an object: {reply!r:.200}"]
    found = []
    if reply.get("jsonrpc") != "2.0":
        found.append("jsonrpc is not 2.0")
    if "id" not in reply:
        found.append("no id")
    if ("result" in reply) == ("error" in reply):
        found.append("not exactly one of result and error")
    error = reply.get("error")
    if error is not None:
        code = error.get("code")
        if code not in VALID_CODES:
            found.append(f"error code {code!r} is not a JSON-RPC or application code")
        if not isinstance(error.get("message"), str) or not error["message"]:
            found.append("an error without a message")
        data = error.get("data")
        if data is not None and data.get("reason") not in REASONS:
            found.append(f"unknown reason {data.get('reason')!r}")
        if code == -32603 and not allow(error):
            found.append(f"internal error: {error['message']}")
    if len(json.dumps(reply)) > 1 << 22:
        found.append("a reply over 4 MiB")
    return found


def live_methods() -> dict[str, Method]:
    """Every method a daemon serves, from a real Daemon's dispatcher (no hand list)."""
    with tempfile.TemporaryDirectory(prefix="hk") as root, in_process(Path(root)) as daemon:
        return daemon.methods


METHODS = live_methods()


METHODS = live_methods()
