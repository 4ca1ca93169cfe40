"""Quiet Replay on a schedule: new eligible proposals are announced once, never promoted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from hikmah.learning.consolidation import proposals
from hikmah.model.policy import KernelPolicy, ReplayPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmahd.replay import Replay
from tests.daemon.test_reminders import HOUR, running


def every(minutes: int) -> KernelPolicy:
    return KernelPolicy(replay=ReplayPolicy(interval_minutes=minutes))


async def inline(call: Any) -> Any:
    return call()


def claim(source: str) -> Remember:
    return Remember(
        draft=Draft(
            content="the prod db is postgres",
            claim_key="prod.db",
            claim_value="postgres",
            source=source,
            confidence=0.9,
        )
    )


async def test_new_eligible_proposals_are_announced_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        replay = Replay(h.daemon.store, h.daemon.events, inline, lambda: every(60))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(replay.run)
            await h.write(claim("human:ana"))
            await trio.sleep(2 * HOUR / 1000)
            assert replay.announced == set()  # one source: not eligible, nothing said
            await h.write(claim("agent:codex"))
            event = await h.events.receive()
            while event["method"] != "replay.proposals":
                event = await h.events.receive()
            (proposal,) = event["params"]["proposals"]
            assert proposal["eligible"] and proposal["key"] == "prod.db"
            with trio.move_on_after(5 * HOUR / 1000):
                while True:
                    again = await h.events.receive()
                    assert again["method"] != "replay.proposals", "announced twice"
            assert (
                h.daemon.store.read(proposals, every(60))[0].id == proposal["id"]
            )  # only proposed
            nursery.cancel_scope.cancel()


async def test_interval_zero_means_only_on_request(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with running(tmp_path) as h:
        replay = Replay(h.daemon.store, h.daemon.events, inline, lambda: every(0))
        await h.write(claim("human:ana"))
        await h.write(claim("human:bo"))
        with trio.move_on_after(10 * HOUR / 1000):
            await replay.run()
        assert replay.announced == set()
        assert len(await replay.announce()) == 1  # on request it still works
