"""An asyncio JSON-RPC 2.0 client of hikmahd: one connection, many requests in flight.

The daemon answers the requests of one connection in the order they complete,
so replies are matched to their callers by id. Notifications (lines with a
``method`` and no ``id``, sent after ``events.subscribe``) go to a callback.

A caller that is cancelled while waiting (a search overtaken by the next
keystroke) only stops waiting: its request was already sent whole, the daemon
still answers it, and the answer is dropped. When the connection ends, every
waiting caller is failed with :class:`~hikmah_client.connection.Unavailable`, so
nothing hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hikmah_client.connection import RemoteError, Unavailable, connect

__all__ = ["Connection", "RemoteError", "Unavailable"]

# Replies are one line each; a listing of the whole promise queue of a large store is
# several MiB. The daemon is the same user's, so the limit only stops a runaway line.
REPLY_LIMIT = 256 << 20
CALL_TIMEOUT_S = 60.0
Notify = Callable[[str, dict[str, Any]], None]


class Connection:
    """One open connection to hikmahd. Make it with :meth:`open`, end it with :meth:`aclose`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        path: Path,
        on_notification: Notify | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_lost = on_lost
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False
        self._read_task = asyncio.get_running_loop().create_task(self._read_replies())

    @classmethod
    async def open(
        cls,
        socket_path: Path,
        *,
        autostart: bool,
        daemon_args: list[str],
        on_notification: Notify | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> Connection:
        """Connect to the daemon at ``socket_path``, starting one first if none answers
        and ``autostart`` (the blocking :func:`~hikmah_client.connection.connect` of every
        client, in a thread).

        Raises:
            Unavailable: none answers and none could be started.
        """
        client = await asyncio.to_thread(
            connect, socket_path, autostart=autostart, daemon_args=daemon_args
        )
        return await cls.over(client.sock, socket_path, on_notification, on_lost)

    @classmethod
    async def over(
        cls,
        sock: socket.socket,
        path: Path,
        on_notification: Notify | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> Connection:
        """A connection over a socket already connected to the daemon."""
        sock.settimeout(None)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=REPLY_LIMIT)
        return cls(reader, writer, path, on_notification, on_lost)

    @property
    def closed(self) -> bool:
        return self._closed

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = CALL_TIMEOUT_S
    ) -> Any:
        """Send one request and wait for its result.

        Raises:
            RemoteError: the daemon refused or failed the request (its words in the message).
            Unavailable: the connection is closed or broke, or no answer came in ``timeout``.
        """
        if self._closed:
            raise Unavailable(f"the connection to hikmahd at {self.path} is closed")
        request_id = next(self._ids)
        request = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": request_id}
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            # write() buffers the whole line at once: a caller cancelled later never
            # leaves half a request on the wire.
            self._writer.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            await self._writer.drain()
            reply = await asyncio.wait_for(future, timeout)
        except (ConnectionError, OSError) as exc:
            raise Unavailable(f"the connection to hikmahd at {self.path} broke: {exc}") from None
        except TimeoutError:
            raise Unavailable(f"hikmahd at {self.path} did not answer {method} in time") from None
        finally:
            self._pending.pop(request_id, None)
        if "error" in reply:
            error = reply["error"]
            raise RemoteError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    async def _read_replies(self) -> None:
        try:
            while True:
                line = await self._reader.readuntil(b"\n")
                self._dispatch(json.loads(line))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        except ValueError:  # not JSON: the peer is not hikmahd
            pass
        finally:
            self._lost()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" in message and "id" not in message:
            if self._on_notification is not None:
                params = message.get("params")
                self._on_notification(message["method"], params if isinstance(params, dict) else {})
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(message)

    def _lost(self) -> None:
        if self._closed:
            return
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(Unavailable(f"hikmahd at {self.path} closed the connection"))
        self._pending.clear()
        self._writer.close()
        if self._on_lost is not None:
            self._on_lost()

    async def aclose(self) -> None:
        """Close the connection; waiting callers are failed."""
        self._on_lost = None  # closing on purpose is not a loss to report
        self._read_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._read_task
        self._lost()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


class Dialer:
    """How to reach the daemon, again and again: the first connection may be one made
    already (before the screen was taken, so that an unreachable daemon is reported on
    a plain terminal), later ones are made on demand (after the daemon restarted)."""

    def __init__(
        self,
        socket_path: Path,
        *,
        autostart: bool = False,
        daemon_args: list[str] | None = None,
        first: socket.socket | None = None,
    ) -> None:
        self.socket_path = socket_path
        self.autostart = autostart
        self.daemon_args = daemon_args or []
        self._first = first

    async def dial(
        self, on_notification: Notify | None = None, on_lost: Callable[[], None] | None = None
    ) -> Connection:
        """A new connection.

        Raises:
            Unavailable: no daemon answers (and none could be started).
        """
        if self._first is not None:
            sock, self._first = self._first, None
            return await Connection.over(sock, self.socket_path, on_notification, on_lost)
        return await Connection.open(
            self.socket_path,
            autostart=self.autostart,
            daemon_args=self.daemon_args,
            on_notification=on_notification,
            on_lost=on_lost,
        )
