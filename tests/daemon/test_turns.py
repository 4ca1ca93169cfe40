"""Recall turns: one at a time, readers before connections whose replies pile up."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio
import trio.testing

from hikmah.index import queries
from hikmah.index.snapshot import Snapshot
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery, RecallResult
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember, Written
from hikmah.store.core import Store
from hikmahd.connection import IDLE_S, Connection
from hikmahd.context import Context
from hikmahd.peers import BoundProcess, Peer
from hikmahd.rpc import Dispatcher
from hikmahd.scheduling import Asker, IdleThread, OwnThread, QueryThread, Recalls, Turns, held


async def take(turns: Turns, name: str, unread: int, log: list[str]) -> None:
    async with turns.turn(lambda: unread):
        log.append(name)
        await trio.sleep(1)


async def test_a_reader_goes_before_a_connection_with_unread_replies(
    autojump_clock: trio.testing.MockClock,
) -> None:
    turns, log = Turns(), []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, turns, "first", 0, log)
        await trio.sleep(0.1)
        for name, unread in (("silent-1", 9000), ("silent-2", 1), ("reader-1", 0)):
            nursery.start_soon(take, turns, name, unread, log)
            await trio.sleep(0.1)
        nursery.start_soon(take, turns, "reader-2", 0, log)
    assert log == ["first", "reader-1", "reader-2", "silent-1", "silent-2"]


async def test_a_reader_whose_replies_pile_up_while_it_waits_goes_behind_the_readers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    turns, log = Turns(), []
    unread = {"turned": 0}

    async def turned() -> None:
        async with turns.turn(lambda: unread["turned"]):
            log.append("turned")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, turns, "first", 0, log)
        await trio.sleep(0.1)
        nursery.start_soon(take, turns, "silent", 9000, log)
        await trio.sleep(0.1)
        nursery.start_soon(turned)  # a reader when it arrives
        await trio.sleep(0.1)
        nursery.start_soon(take, turns, "reader", 0, log)
        await trio.sleep(0.1)
        unread["turned"] = 4000  # then its replies pile up
    assert log == ["first", "reader", "silent", "turned"]


async def test_handing_a_turn_on_asks_only_the_waiter_it_picks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A thousand silent connections waiting: each is asked once, when it arrives, so
    # the turn a reader waits for costs no thousand questions (a flood made every
    # hand-on ask all of them, and a good client waited for that).
    turns, log = Turns(), list[str]()
    asked = {"silent": 0, "reader": 0}

    def silent() -> int:
        asked["silent"] += 1
        return 9000

    def reader() -> int:
        asked["reader"] += 1
        return 0

    async def wait(name: str, unread: Callable[[], int]) -> None:
        async with turns.turn(unread):
            log.append(name)
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, turns, "first", 0, log)
        await trio.sleep(0.1)
        for _ in range(1000):
            nursery.start_soon(wait, "silent", silent)
        await trio.sleep(0.1)
        nursery.start_soon(wait, "reader", reader)
    assert log[:2] == ["first", "reader"] and len(log) == 1002
    assert asked == {"silent": 1000, "reader": 2}


async def test_a_cancelled_waiter_neither_keeps_nor_loses_the_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    turns, log = Turns(), []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, turns, "first", 0, log)
        await trio.sleep(0.1)
        with trio.move_on_after(0.2):
            await take(turns, "gave-up", 0, log)
        nursery.start_soon(take, turns, "next", 0, log)
    assert log == ["first", "next"]
    async with turns.turn():  # free again: no wait
        pass


async def test_a_laggards_recall_runs_off_the_loop(tmp_path: Path) -> None:
    # A reader's short recall runs inline; one whose replies pile up unread goes to a
    # worker thread, so that a flood of them leaves the loop free for everyone else.
    offloaded: list[str] = []

    def asker(unread: int) -> Asker:
        class One:
            def unread(self) -> int:
                return unread

        return One()

    with Store(tmp_path / "data") as store:

        async def offload(call: Callable[[], Any]) -> Any:
            offloaded.append("thread")
            return call()

        recalls = Recalls(store, KernelPolicy, lambda: 1_000_000, offload, QueryThread())
        query = RecallQuery(query="anything")
        await recalls.recall(query, asker(0))  # the first is assumed long: measured
        offloaded.clear()
        await recalls.recall(query, asker(0))
        assert offloaded == []
        await recalls.recall(query, asker(9000))
        assert offloaded == ["thread"]


async def test_what_is_read_besides_a_recalls_results_is_of_their_snapshot(
    tmp_path: Path,
) -> None:
    # memory.recall reads where each result was written, and whether it is held, after
    # the recall: in the snapshot the results came from, not one a write made since.
    now = 1_790_000_000_000
    with Store(tmp_path / "data") as store:

        def write(draft: Draft) -> Written:
            (written,) = store.apply([Remember(draft=draft)], now_ms=now, policy=KernelPolicy())
            assert isinstance(written, Written)
            return written

        original = write(Draft(content="The staging database runs Postgres 15")).trace
        assert original is not None
        correction = Draft(content="It runs Postgres 16", supersedes=original.id)

        def then(present: Snapshot, results: list[RecallResult]) -> list[str]:
            writer = threading.Thread(target=write, args=(correction,))  # meanwhile
            writer.start()
            writer.join()
            return [queries.get(present, result.trace.id).status for result in results]

        async def inline(call: Callable[[], Any]) -> Any:
            return call()

        recalls = Recalls(store, KernelPolicy, lambda: now, inline, QueryThread())
        query = RecallQuery(query="staging database")
        assert await recalls.recall_then(query, then) == ["active"]
        assert store.read(queries.get, original.id).status == "superseded"


async def test_unread_counts_what_the_peer_has_not_read() -> None:
    left, right = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    peer = Peer(pid=0, uid=0, gid=0, session=None)
    connection = Connection(stream, Context(services=None, peer=peer), Dispatcher())  # type: ignore[arg-type]
    assert connection.unread() == 0
    await connection.send({"reply": "x" * 5000})
    assert connection.unread() >= 5000
    right.recv(1 << 16)
    assert connection.unread() == 0
    right.close()
    await stream.aclose()


async def test_a_reply_larger_than_the_socket_takes_arrives_whole_and_in_order() -> None:
    """What the socket takes at once is written without a round of the event loop; the
    rest follows through trio while the peer reads, and a reply sent meanwhile waits."""
    left, right = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    peer = Peer(pid=0, uid=0, gid=0, session=None)
    connection = Connection(stream, Context(services=None, peer=peer), Dispatcher())  # type: ignore[arg-type]
    big = {"reply": "x" * (4 << 20)}
    received = bytearray()

    def read_all() -> None:
        while received.count(b"\n") < 2:
            received.extend(right.recv(1 << 16))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(connection.send, big)
        await trio.sleep(0.05)  # the first reply fills the socket and waits
        nursery.start_soon(connection.send, {"reply": "after"})
        await trio.to_thread.run_sync(read_all)
    first, second, _ = bytes(received).split(b"\n")
    assert json.loads(first) == big and json.loads(second) == {"reply": "after"}
    right.close()
    assert not await connection.send({"reply": "gone"})  # the peer is gone: False
    await stream.aclose()


async def test_a_free_lock_is_held_without_a_round_of_the_event_loop() -> None:
    """held() takes a free lock at once (no other task runs in between) and waits for a
    taken one like ``async with lock``."""
    lock, ran = trio.Lock(), []

    async def other() -> None:
        ran.append("other")

    async with trio.open_nursery() as nursery:
        # trio shuffles each batch of runnable tasks: a yield lets the other one run
        # before the body about half the time, so twenty rounds tell.
        for _ in range(20):
            nursery.start_soon(other)
            async with held(lock):
                assert ran == [] and lock.locked()  # the other task has not run yet
            assert not lock.locked()
            await trio.testing.wait_all_tasks_blocked()
            assert ran == ["other"]
            ran.clear()

        order: list[str] = []

        async def second() -> None:
            async with held(lock):
                order.append("second")

        async with held(lock):
            nursery.start_soon(second)
            await trio.sleep(0.01)  # second waits: the lock is taken
            order.append("first")
    assert order == ["first", "second"]


def test_the_query_thread_embeds_on_a_thread_of_its_own() -> None:
    seen: list[str] = []

    class Index:
        def embed_query(self, text: str) -> np.ndarray:
            seen.append(threading.current_thread().name)
            return np.full(4, len(text), dtype=np.float32)

    thread = QueryThread()
    try:
        wait = thread(Index(), "deploy friday")  # type: ignore[arg-type]
        assert seen and seen[0].startswith("hikmahd-query")  # started before it returned
        vector = wait()
        assert vector is not None and vector.tolist() == [13.0] * 4
    finally:
        thread.close()


async def test_background_work_runs_on_an_idle_priority_thread_of_its_own() -> None:
    idle = IdleThread("hikmahd-test")
    try:

        def where() -> tuple[str, int]:
            return threading.current_thread().name, os.sched_getscheduler(0)

        name, policy = await idle(where)
        assert name.startswith("hikmahd-test")
        assert policy == os.SCHED_IDLE
        assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the daemon's own is untouched
        assert await idle(where) == (name, policy)  # the same thread, every time
    finally:
        idle.close()


async def test_an_own_thread_runs_calls_in_turn_and_answers_each() -> None:
    own = OwnThread("hikmahd-test-own")
    assert not own._thread.is_alive()  # none is started until the first call
    try:
        assert await own(lambda: threading.current_thread().name) == "hikmahd-test-own"

        def fails() -> None:
            raise ValueError("from the thread")

        with pytest.raises(ValueError, match="from the thread"):
            await own(fails)
        order: list[int] = []
        async with trio.open_nursery() as nursery:
            for number in range(5):
                nursery.start_soon(own, lambda n=number: order.append(n))
        assert sorted(order) == list(range(5))
    finally:
        own.close()
    own._thread.join(timeout=5)
    assert not own._thread.is_alive()  # closed, it ends


async def test_a_cancelled_task_sends_no_call_to_an_own_thread() -> None:
    """A loop of calls ends when its task is cancelled (the follower's, at shutdown),
    although a call once sent is not interrupted."""
    own = OwnThread("hikmahd-test-own")
    calls = 0

    def work() -> None:
        nonlocal calls
        calls += 1

    async def forever() -> None:
        while True:
            await own(work)

    try:
        with trio.move_on_after(0.2):
            await forever()
        done = calls
        assert done > 0
        await trio.sleep(0.05)
        assert calls == done  # nothing more was sent after the cancel
    finally:
        own.close()


async def test_an_idle_connection_is_closed(autojump_clock: trio.testing.MockClock) -> None:
    left, right = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    peer = Peer(pid=0, uid=0, gid=0, session=None)
    connection = Connection(stream, Context(services=None, peer=peer), Dispatcher())  # type: ignore[arg-type]
    began = trio.current_time()
    with right:
        await connection.serve()  # nothing is ever sent
    assert connection.closed and trio.current_time() - began >= IDLE_S
    await stream.aclose()


async def test_a_connection_ends_when_its_process_exits(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    bound = BoundProcess(child.pid, os.pidfd_open(child.pid), None)
    left, right = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    peer = Peer(pid=child.pid, uid=0, gid=0, session=None)
    connection = Connection(stream, Context(services=None, peer=peer), Dispatcher(), bound)  # type: ignore[arg-type]
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connection.serve)
            await trio.sleep(0.05)
            assert not connection.closed and bound.alive()
            assert child.stdin is not None
            child.stdin.close()  # the child exits
            with trio.fail_after(10):
                while not connection.closed:
                    await trio.sleep(0.01)
        assert not bound.alive()
    finally:
        child.wait()
        bound.close()
        right.close()
        await stream.aclose()
