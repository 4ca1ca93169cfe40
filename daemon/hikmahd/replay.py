"""Quiet Replay on a schedule: consolidation now and then, new eligible proposals announced.

The daemon never promotes on its own. Every ``[replay] interval_minutes`` it
computes the proposals (as ``replay.consolidate`` does) and publishes a
``replay.proposals`` event with the eligible ones it has not announced
before, so an editor or a notification can ask a person to look.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec
import trio

from hikmah.learning.consolidation import proposals
from hikmah.model.policy import KernelPolicy
from hikmah.store.core import Store

from .events import Events
from .scheduling import Offload

log = logging.getLogger(__name__)
IDLE_CHECK_S = 60.0  # how often a disabled schedule looks whether it was enabled


class Replay:
    def __init__(
        self,
        store: Store,
        events: Events,
        offload: Offload,
        policy: Callable[[], KernelPolicy],
    ) -> None:
        self.store = store
        self.events = events
        self.offload = offload
        self.policy = policy
        self.announced: set[str] = set()

    async def run(self) -> None:
        """Consolidate on schedule until cancelled."""
        while True:
            minutes = self.policy().replay.interval_minutes
            if minutes <= 0:
                await trio.sleep(IDLE_CHECK_S)
                continue
            await trio.sleep(minutes * 60)
            await self.announce()

    async def announce(self) -> list[str]:
        """Publish the eligible proposals not announced yet; their ids."""
        policy = self.policy()
        found = await self.offload(lambda: self.store.read(proposals, policy))
        eligible = [p for p in found if p.eligible]
        new = [p for p in eligible if p.id not in self.announced]
        # Forget ids that are gone (promoted, or their evidence changed).
        self.announced = {p.id for p in eligible}
        if new:
            log.info("%d new eligible consolidation proposal(s)", len(new))
            self.events.publish("replay.proposals", {"proposals": msgspec.to_builtins(new)})
        return [p.id for p in new]
