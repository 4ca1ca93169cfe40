"""The writer's group commit on trio's MockClock: which writes a batch waits for.

The store work runs inline (no worker threads) and then takes ``WORK_S`` of
virtual time, as a commit or a sync in a worker thread takes real time: the
callers answered meanwhile come back while it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmah.store.core import Store
from hikmahd.writer import RECENT_S, Writer

ROUND_TRIP_S = 0.0002  # a client's answer read and its next request sent
WORK_S = 0.0003  # a batch's commit, and its sync


async def worked(call: Any) -> Any:
    done = call()
    await trio.sleep(WORK_S)
    return done


class Recorded:
    """A writer over a real store that notes the size of every batch it applies."""

    def __init__(self, directory: Path) -> None:
        self.store = Store(directory, durable=False)
        self.sizes: list[int] = []
        apply = self.store.apply

        def counted(operations: Any, **kwargs: Any) -> Any:
            self.sizes.append(len(operations))
            return apply(operations, **kwargs)

        self.store.apply = counted  # type: ignore[method-assign]
        self.writer = Writer(self.store, KernelPolicy, offload=worked)


async def caller(writer: Writer, name: str, writes: int, start_s: float) -> None:
    """One connection (a nursery of its own, as the daemon gives each) writing in a loop."""

    async def loop() -> None:
        await trio.sleep(start_s)
        for n in range(writes):
            await writer.write(
                Remember(draft=Draft(content=f"{name} note {n} {trio.current_time()}"))
            )
            await trio.sleep(ROUND_TRIP_S)

    async with trio.open_nursery() as connection:
        connection.start_soon(loop)


async def test_a_lone_writer_never_waits(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recorded = Recorded(tmp_path / "data")
    async with trio.open_nursery() as nursery:
        await nursery.start(recorded.writer.run)
        began = trio.current_time()
        for n in range(5):
            await recorded.writer.write(Remember(draft=Draft(content=f"alone {n}")))
        # No gathering, and one trip to the thread a write: its commit and sync together.
        assert trio.current_time() - began == pytest.approx(5 * WORK_S)
        await recorded.writer.close()
    assert recorded.sizes == [1] * 5


async def test_callers_back_after_a_pause_are_batched_together_again(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Four callers that come back one by one after a pause: the batch expects a write
    from each caller seen lately, not as many as the last batches held (which, after a
    pause, kept them to batches of one)."""
    recorded = Recorded(tmp_path / "data")
    async with trio.open_nursery() as nursery:
        await nursery.start(recorded.writer.run)
        for _round in range(2):
            recorded.sizes.clear()
            async with trio.open_nursery() as callers:
                for i in range(4):
                    callers.start_soon(caller, recorded.writer, f"c{i}", 6, i * ROUND_TRIP_S)
            # Once each caller has written, a batch holds one write from each of them (the
            # batch before expected as many as recent batches held: 1, 1, 1, 2, 2, 2, ...).
            assert recorded.sizes[3:7] == [4, 4, 4, 4], recorded.sizes
            await trio.sleep(10 * RECENT_S)  # a pause: no caller is recent any more
        await recorded.writer.close()
