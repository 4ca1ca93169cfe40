"""The promise queue in the daemon, on trio's MockClock over in-memory streams.

Virtual time: every wait jumps straight to the next timer, so hours of
reminders run in milliseconds. The wall clock the daemon reads is derived
from trio's clock, so the two agree.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio.testing

from hikmah.index import queries
from hikmah.model.trace import Draft
from hikmah.rules.operations import Fulfill, Purge, Remember, Written
from hikmah.store.core import Store
from hikmahd.connection import IDLE_S, Connection
from hikmahd.context import Context
from hikmahd.daemon import Config, Daemon
from hikmahd.peers import Peer

BASE = 1_790_000_000_000
MIN = 60_000
HOUR = 60 * MIN


def virtual_now() -> int:
    return BASE + int(trio.current_time() * 1000)


async def inline(call: Any) -> Any:
    """Store work without threads: the virtual clock would jump while one runs."""
    return call()


@dataclass
class RecordingNotifier:
    """Stands in for D-Bus here; the real bus is tested end to end in test_notifications."""

    shown: list[tuple[str, bool]] = field(default_factory=list)

    async def notify(self, summary: str, body: str, *, critical: bool) -> bool:
        self.shown.append((summary, critical))
        return True


@dataclass
class Harness:
    daemon: Daemon
    notifier: RecordingNotifier
    events: trio.MemoryReceiveChannel[dict[str, Any]]

    async def write(self, operation: Any) -> Written:
        outcome = await self.daemon.writer.submit(operation)
        assert isinstance(outcome, Written), outcome
        return outcome

    async def commitment(self, text: str, due_in_ms: int) -> str:
        written = await self.write(
            Remember(
                draft=Draft(content=text, kind="commitment", deadline=virtual_now() + due_in_ms)
            )
        )
        return written.id

    async def recorded(self) -> None:
        """Wait until every delivered reminder is recorded durably."""
        while self.daemon.reminders.recording:
            await trio.sleep(0.001)

    async def next_reminder(self) -> dict[str, Any]:
        while True:
            event = await self.events.receive()
            if event["method"] == "reminder.due":
                params: dict[str, Any] = event["params"]
                return params


@asynccontextmanager
async def running(tmp_path: Path, lead_minutes: int = 30) -> AsyncIterator[Harness]:
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[reminders]\nlead_minutes = {lead_minutes}\n")
    config = Config(
        socket_path=tmp_path / "unused.sock", data_dir=tmp_path / "data", policy_path=policy
    )
    notifier = RecordingNotifier()
    with Store(config.data_dir) as store:
        daemon = Daemon(config, store, now_ms=virtual_now, notifier=notifier, offload=inline)  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.writer.run)
            events = daemon.events.subscribe()
            await nursery.start(daemon.reminders.run)
            yield Harness(daemon, notifier, events)
            nursery.cancel_scope.cancel()


async def test_lead_then_overdue_at_their_times(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        trace_id = await h.commitment("rotate the staging cert", 2 * HOUR)
        lead = await h.next_reminder()
        assert (lead["stage"], lead["late"], lead["trace"]["id"]) == ("lead", False, trace_id)
        assert virtual_now() - BASE == 90 * MIN
        overdue = await h.next_reminder()
        assert overdue["stage"] == "overdue" and virtual_now() - BASE == 2 * HOUR
        assert overdue["due_at"] == BASE + 2 * HOUR
        await trio.testing.wait_all_tasks_blocked()  # notifications run in tasks of their own
        assert h.notifier.shown == [
            ("Due soon: rotate the staging cert", False),
            ("Overdue: rotate the staging cert", True),
        ]


async def test_delivered_once_across_a_restart(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        await h.commitment("file the report", 2 * HOUR)
        assert (await h.next_reminder())["stage"] == "lead"
        await h.recorded()
    async with running(tmp_path) as h:
        assert (await h.next_reminder())["stage"] == "overdue"
        with trio.move_on_after(10 * HOUR / 1000):
            extra = await h.next_reminder()
            raise AssertionError(f"delivered twice: {extra}")
        assert h.daemon.reminders.delivered == 1


async def test_a_reminder_due_while_down_fires_at_start_marked_late(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        await h.commitment("pay the invoice", 3 * HOUR)
        await h.recorded()
    await trio.sleep(5 * HOUR / 1000)  # the daemon is down meanwhile
    async with running(tmp_path) as h:
        due = await h.next_reminder()
        assert (due["stage"], due["late"]) == ("overdue", True)
        assert virtual_now() - BASE == 5 * HOUR


async def test_fulfil_supersede_purge_and_outcome_take_it_off(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        fulfilled = await h.commitment("a", HOUR)
        superseded = await h.commitment("b", HOUR)
        purged = await h.commitment("c", HOUR)
        reported = await h.commitment("d", HOUR)
        kept = await h.commitment("e", HOUR)
        await h.write(Fulfill(id=fulfilled))
        await h.write(
            Remember(draft=Draft(content="b, moved", kind="commitment", supersedes=superseded))
        )
        await h.write(Purge(id=purged, reason="not needed"))
        await h.write(Remember(draft=Draft(content="d is done", kind="outcome", fulfills=reported)))
        reminded = {(await h.next_reminder())["trace"]["id"] for _ in range(2)}
        assert reminded == {kept}
        assert len(h.daemon.reminders.queue) == 1


async def test_many_due_at_the_same_instant(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path, lead_minutes=0) as h:
        deadline = virtual_now() + HOUR
        await h.daemon.writer.submit(
            Remember(draft=Draft(content="x0", kind="commitment", deadline=deadline))
        )
        ids = set()
        for i in range(200):
            written = await h.write(
                Remember(draft=Draft(content=f"batch {i}", kind="commitment", deadline=deadline))
            )
            ids.add(written.id)
        seen = {(await h.next_reminder())["trace"]["id"] for _ in range(201)}
        assert ids <= seen
        assert virtual_now() - BASE == HOUR
        await h.recorded()
        assert all(
            entry.delivered == ("overdue",) for entry in h.daemon.store.read(queries.scheduled)
        )


async def test_deadlines_years_away_wait_quietly(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        await h.commitment("renew the domain", 3 * 365 * 24 * HOUR)
        with trio.move_on_after(30 * 24 * 3600):
            await h.next_reminder()
            raise AssertionError("reminded years early")
        assert len(h.daemon.reminders.queue) == 1


async def test_events_reach_a_subscribed_connection_over_a_stream(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        client, server = trio.testing.memory_stream_pair()
        peer = Peer(pid=1, uid=0, gid=0, session=None)
        connection = Connection(server, Context(h.daemon.services, peer), h.daemon.dispatcher)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connection.serve)
            lines = Lines(client)
            await client.send_all(b'{"jsonrpc":"2.0","method":"events.subscribe","id":1}\n')
            assert (await lines.next())["result"]["subscribed"] is True
            trace_id = await h.commitment("call the bank", HOUR)
            changed = await lines.next()
            assert changed == {
                "jsonrpc": "2.0",
                "method": "memory.changed",
                "params": {"id": trace_id, "status": "active"},
            }
            due = await lines.next()
            assert due["method"] == "reminder.due" and due["params"]["stage"] == "lead"
            assert trio.current_time() > IDLE_S  # a subscriber waits silently, never idle
            await client.aclose()


class Lines:
    """JSON lines read from the client end of an in-memory stream."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.buffer = b""

    async def next(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.stream.receive_some(1 << 16)
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message


async def test_a_subscriber_that_stops_reading_is_dropped(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        stuck = h.daemon.events.subscribe()
        reader = h.daemon.events.subscribe()
        got: list[dict[str, Any]] = []

        async def read() -> None:
            async for event in reader:
                got.append(event)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            for i in range(2100):
                await h.write(Remember(draft=Draft(content=f"note {i}")))
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        assert len(got) == 2100  # the reader missed nothing
        queued = 0
        while True:
            try:
                stuck.receive_nowait()
                queued += 1
            except trio.EndOfChannel:
                break  # dropped: its channel was closed
        assert queued == 2048


async def test_a_client_subscribing_after_a_late_reminder_still_gets_it(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        await h.commitment("renew the passport", HOUR)
        await h.recorded()
    await trio.sleep(3 * HOUR / 1000)
    async with running(tmp_path) as h:
        await h.next_reminder()  # fired at start, before any client could subscribe
        client, server = trio.testing.memory_stream_pair()
        connection = Connection(
            server,
            Context(h.daemon.services, Peer(pid=1, uid=0, gid=0, session=None)),
            h.daemon.dispatcher,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connection.serve)
            lines = Lines(client)
            await client.send_all(b'{"jsonrpc":"2.0","method":"events.subscribe","id":1}\n')
            first, second = await lines.next(), await lines.next()
            replayed = first if first.get("method") == "reminder.due" else second
            assert replayed["params"]["late"] is True and replayed["params"]["replayed"] is True
            await client.aclose()


async def test_delivery_records_go_with_the_commitment(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        trace_id = await h.commitment("ship", 2 * HOUR)
        await h.next_reminder()
        await h.recorded()
        await h.write(Fulfill(id=trace_id))
        with h.daemon.store.snapshot() as snapshot:
            assert list(snapshot.txn.cursor(db=h.daemon.store.dbs.reminders)) == []
