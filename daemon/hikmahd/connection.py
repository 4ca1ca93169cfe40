"""One client connection: read frames, dispatch them concurrently, send each reply
(and each subscribed event) whole, through one lock; for as long as the process that
opened it lives, and while it is used."""

from __future__ import annotations

import fcntl
import logging
import math
import os
import struct
import termios
from typing import Any

import msgspec
import trio

from hikmah.model.errors import Forbidden, TooLarge

from .context import Context
from .events import Events
from .framing import FrameReader, Oversized
from .peers import BoundProcess
from .rpc import Dispatcher, error_for, response
from .scheduling import held

log = logging.getLogger(__name__)

# Requests of one connection in flight at once; past it, reading pauses.
MAX_IN_FLIGHT = 64
# A connection that asks nothing for this long, and is not subscribed to events, is
# closed (the clients that keep one open connect again when they next need it).
IDLE_S = 600.0
GONE = "the process that opened this connection has exited: each process connects itself"
_ENCODER = msgspec.json.Encoder()


class Connection:
    def __init__(
        self,
        stream: trio.abc.Stream,
        context: Context,
        dispatcher: Dispatcher,
        bound: BoundProcess | None = None,
    ) -> None:
        """``bound`` is the process the connection was accepted for (and identified as):
        requests are served only while it lives, and the connection ends when it exits."""
        self.stream = stream
        self.context = context
        context.line = self
        self.dispatcher = dispatcher
        self.bound = bound
        self._send_lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(MAX_IN_FLIGHT)
        self._nursery: trio.Nursery | None = None
        self._events_scope: trio.CancelScope | None = None
        self.closed = False

    async def serve(self) -> None:
        """Until the peer hangs up, its process exits, or it stays idle (unsubscribed) for
        :data:`IDLE_S`; requests already read are still carried out."""
        reader = FrameReader()
        watching = trio.CancelScope()  # ended with the reading: the requests read go on
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.bound is not None and self.bound.pidfd is not None:
                pidfd = self.bound.pidfd
                nursery.start_soon(self._until_exit, pidfd, nursery.cancel_scope, watching)
            while True:
                idle = IDLE_S if self._events_scope is None else math.inf
                with trio.move_on_after(idle) as waited:
                    try:
                        data = await self.stream.receive_some(1 << 16)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                if waited.cancelled_caught:
                    if self._limiter.borrowed_tokens or self._events_scope is not None:
                        continue  # answering a request, or subscribed since: not idle
                    log.info("closing a connection idle for %.0f s", idle)
                    break
                if not data:
                    break
                if self.bound is not None and not self.bound.alive():
                    await self.send(response(None, error=error_for(Forbidden(GONE))))
                    break
                for frame in reader.feed(data):
                    if isinstance(frame, Oversized):
                        error = error_for(
                            TooLarge(
                                f"frame of {frame.size} bytes is over the 1 MiB limit;"
                                " it was skipped"
                            )
                        )
                        await self.send(response(None, error=error))
                        continue
                    # A token per request, not per frame: equal frames may be in flight.
                    token = object()
                    try:  # at once while there is room: no round of the event loop
                        self._limiter.acquire_on_behalf_of_nowait(token)
                    except trio.WouldBlock:
                        await self._limiter.acquire_on_behalf_of(token)
                    nursery.start_soon(self._handle, frame, token)
            watching.cancel()
            if self._events_scope is not None:
                self._events_scope.cancel()
        self.closed = True

    async def _until_exit(
        self, pidfd: int, connection: trio.CancelScope, watching: trio.CancelScope
    ) -> None:
        """End the connection when the process it was accepted for exits (its pidfd turns
        readable) while it is read: nothing more is read, answered or forwarded on it."""
        with watching:
            await trio.lowlevel.wait_readable(pidfd)
            log.debug("closing a connection: %s", GONE)  # most often, the client's own end
            connection.cancel()

    def subscribe(self, events: Events, replay: list[dict[str, Any]]) -> bool:
        """Forward every event to this connection, after ``replay``; False if it already
        is subscribed."""
        if self._events_scope is not None or self._nursery is None:
            return False
        self._events_scope = trio.CancelScope()
        self._nursery.start_soon(self._forward, events.subscribe(), replay, self._events_scope)
        return True

    async def _forward(
        self,
        receive: trio.MemoryReceiveChannel[dict[str, Any]],
        replay: list[dict[str, Any]],
        scope: trio.CancelScope,
    ) -> None:
        try:
            with scope, receive:
                for params in replay:
                    message = {"jsonrpc": "2.0", "method": "reminder.due", "params": params}
                    if not await self.send(message):
                        return
                async for message in receive:
                    if not await self.send(message):
                        return
        finally:
            self._events_scope = None  # dropped or gone: subscribing again starts afresh

    async def _handle(self, frame: bytes, token: object) -> None:
        try:
            reply = await self.dispatcher.frame(frame, self.context)
            if reply is not None:
                await self.send(reply)
        finally:
            self._limiter.release_on_behalf_of(token)

    def unread(self) -> int:
        """Bytes of replies sent to the peer that it has not read yet."""
        if self._send_lock.locked():
            return 1 << 30  # a reply is being pushed into a buffer with no room: plenty
        sock = getattr(self.stream, "socket", None)
        if sock is None:
            return 0
        try:
            # SIOCOUTQ: for a Unix socket, what the peer has not consumed yet.
            raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4)
        except OSError:
            return 0
        return int(struct.unpack("i", raw)[0])

    async def send(self, message: Any) -> bool:
        """Send one JSON value as a line; False when the peer is gone."""
        data = _ENCODER.encode(message) + b"\n"
        async with held(self._send_lock):
            try:
                sent = self._send_now(data)
                if sent < len(data):
                    await self.stream.send_all(memoryview(data)[sent:])
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                self.closed = True
                return False
        return True

    def _send_now(self, data: bytes) -> int:
        """As much of ``data`` as the socket takes at once, without waiting: a reply most
        often fits in its buffer, and ``send_all`` would first pass through the scheduler
        (a round of the event loop, tens of microseconds here) for nothing. The rest, if
        any, goes through ``send_all``.

        Raises:
            OSError: the peer is gone (the socket is closed, or reset).
        """
        sock = getattr(self.stream, "socket", None)
        if sock is None or self.closed:
            return 0
        try:
            return os.write(sock.fileno(), data)  # the socket is non-blocking (trio's)
        except BlockingIOError:
            return 0
