"""What the browser's tests share: a small store with a conflict, a commitment and
history, written through a real daemon, and a bounded wait for the screen."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from hikmah_browse.app import BrowseApp
from hikmah_browse.rpc import Dialer
from tests.daemon.conftest import Running

WAIT_S = 15.0


async def until(pilot: Pilot[Any], condition: Callable[[], object], what: str) -> None:
    """Let the app run until ``condition()`` holds; fail after :data:`WAIT_S`."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def app_for(daemon: Running, **kwargs: Any) -> BrowseApp:
    return BrowseApp(Dialer(daemon.socket), source="human:ana", **kwargs)


def remember(daemon: Running, content: str, **params: Any) -> dict[str, Any]:
    trace: dict[str, Any] = daemon.call("memory.remember", content=content, **params)["trace"]
    return trace


def seed(daemon: Running) -> dict[str, dict[str, Any]]:
    """A conflict (staging.db.version 15 by a tool, 16 by a person), a commitment due in
    two hours, and an unrelated note."""
    return {
        "old": remember(
            daemon,
            "The staging database runs PostgreSQL 15",
            kind="belief",
            source="tool:psql",
            claim_key="staging.db.version",
            claim_value="15",
            tags=["staging"],
        ),
        "new": remember(
            daemon,
            "Staging database upgraded to PostgreSQL 16 last week",
            kind="observation",
            source="human:ana",
            claim_key="staging.db.version",
            claim_value="16",
        ),
        "promise": remember(
            daemon,
            "Renew the staging TLS certificate",
            kind="commitment",
            deadline="+2h",
            source="human:ana",
        ),
        "note": remember(daemon, "The kettle in the office is descaled monthly"),
    }
