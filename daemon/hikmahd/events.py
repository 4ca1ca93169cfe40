"""Live events: JSON-RPC notifications pushed to every subscribed connection.

Each subscriber has a bounded queue. Publishing never waits: a subscriber
whose queue is full (it stopped reading) is dropped, so one stuck client
never slows the others or the daemon.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import trio

from hikmah.model.vocabulary import Status
from hikmah.rules.operations import Applied, Outcome, Written

log = logging.getLogger(__name__)

# Room for a whole group commit's worth of memory.changed events.
QUEUE = 2048


def changes(written: Written) -> list[tuple[str, Status]]:
    """(trace id, new status) of every trace one write changed."""
    trace = written.trace
    if trace is None:
        return [(written.id, written.status)]  # a fulfil or a purge
    found: list[tuple[str, Status]] = [(trace.id, "active")]
    if trace.supersedes is not None:
        found.append((trace.supersedes, "superseded"))
    if trace.fulfills is not None:
        found.append((trace.fulfills, "fulfilled"))
    return found


class Events:
    def __init__(self) -> None:
        self._subscribers: set[trio.MemorySendChannel[dict[str, Any]]] = set()

    def __len__(self) -> int:
        self._subscribers = {s for s in self._subscribers if s.statistics().open_receive_channels}
        return len(self._subscribers)

    def subscribe(self) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        """A new subscription; closing the returned channel ends it."""
        send, receive = trio.open_memory_channel[dict[str, Any]](QUEUE)
        self._subscribers.add(send)
        return receive

    def changed(self, outcomes: Sequence[Outcome | Applied]) -> None:
        """Publish ``memory.changed`` for every trace a durable batch changed."""
        if not self._subscribers:
            return  # an import's page is hundreds of traces, most often heard by no one
        for outcome in outcomes:
            if isinstance(outcome, Written):
                for trace_id, status in changes(outcome):
                    self.publish("memory.changed", {"id": trace_id, "status": status})

    def publish(self, method: str, params: dict[str, Any]) -> None:
        """Queue one notification for every subscriber, dropping the stuck ones."""
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        for subscriber in list(self._subscribers):
            try:
                subscriber.send_nowait(message)
            except trio.WouldBlock:
                log.warning("dropped an event subscriber that stopped reading")
                self._subscribers.discard(subscriber)
                subscriber.close()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.discard(subscriber)
