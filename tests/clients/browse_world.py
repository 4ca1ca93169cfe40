"""What the browser's tests share: a small store with a conflict, a commitment and
history, written through a real daemon, and a bounded wait for the screen."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from hikmah_browse.app import BrowseApp
from hikmah_browse.rpc import Dialer
from tests.harness.daemon import Running

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


# --- a store the snapshots show, the same on every run ----------------------------------

FROZEN_MS = 1_772_443_800_000  # 2026-03-02 09:30 UTC: the snapshots' "now"
HOUR_MS, DAY_MS = 3_600_000, 86_400_000


def fixed_id(created_at: int, number: int) -> str:
    return f"tr_{created_at:012x}{number:010x}"


def snapshot_lines() -> list[dict[str, Any]]:
    """Export lines (fixed ids and times) of a small team memory: a corrected claim, an
    open conflict, commitments due and overdue, a fulfilled one, an agent's note."""
    rows: list[tuple[int, dict[str, Any]]] = [
        (40, {"kind": "belief", "content": "The staging database runs PostgreSQL 14",
              "claim_key": "staging.db.version", "claim_value": "14",
              "provenance": {"source": "tool:psql"}, "tags": ["staging", "db"]}),
        (12, {"kind": "correction", "content": "The staging database runs PostgreSQL 15 since the"
              " spring upgrade", "claim_key": "staging.db.version", "claim_value": "15",
              "provenance": {"source": "human:ana", "verified": True, "authority": 0.9},
              "tags": ["staging", "db"], "supersedes": 0}),
        (3, {"kind": "observation", "content": "Staging database reports PostgreSQL 16 after"
             " last night's maintenance", "claim_key": "staging.db.version", "claim_value": "16",
             "provenance": {"source": "agent:claude",
                            "locator": "agent-session:claude-code:7f3a; ci.yml:17"}}),
        (30, {"kind": "preference", "content": "Ana prefers squash merges on the api repo",
              "provenance": {"source": "human:ana", "verified": True}, "scope": "project:/src/api"}),
        (25, {"kind": "constraint", "content": "Never deploy the billing service on Fridays",
              "provenance": {"source": "human:omar", "verified": True}, "tags": ["deploy"]}),
        (20, {"kind": "procedure", "content": "Deploy staging with make deploy ENV=staging, then"
              " run the smoke tests", "provenance": {"source": "doc:runbook"}, "tags": ["deploy"]}),
        (9, {"kind": "commitment", "content": "Rotate the staging deploy token",
             "deadline": FROZEN_MS - 2 * DAY_MS, "provenance": {"source": "human:ana"}}),
        (2, {"kind": "commitment", "content": "Send the staging upgrade notes to the team",
             "deadline": FROZEN_MS + 5 * HOUR_MS, "provenance": {"source": "human:ana"}}),
        (1, {"kind": "commitment", "content": "Renew the staging TLS certificate",
             "deadline": FROZEN_MS + 3 * DAY_MS, "provenance": {"source": "human:omar"}}),
        (15, {"kind": "commitment", "content": "Book the venue for the offsite",
              "deadline": FROZEN_MS - 10 * DAY_MS, "provenance": {"source": "human:ana"}}),
        (8, {"kind": "outcome", "content": "Booked the venue: the old mill, 14 March",
             "fulfills": 9, "provenance": {"source": "human:ana"}}),
        (6, {"kind": "belief", "content": "The build cache lives on the shared NFS disk",
             "claim_key": "build.cache", "claim_value": "nfs", "confidence": 0.9,
             "provenance": {"source": "human:ana"}}),
        (5, {"kind": "belief", "content": "CI keeps its build cache on NFS",
             "claim_key": "build.cache", "claim_value": "nfs", "confidence": 0.9,
             "provenance": {"source": "tool:ci"}}),
        (4, {"kind": "observation", "content": "The login page times out after 30 s behind"
             " the VPN", "provenance": {"source": "human:omar"}, "tags": ["bug"]}),
    ]  # fmt: skip
    lines = []
    for number, (days_ago, trace) in enumerate(rows):
        created = FROZEN_MS - days_ago * DAY_MS - number * 60_000
        line = {"id": fixed_id(created, number), "created_at": created, **trace}
        for link in ("supersedes", "fulfills"):
            if link in line:
                line[link] = lines[line[link]]["id"]
        lines.append(line)
    return lines


def load_snapshot_store(daemon: Running) -> list[dict[str, Any]]:
    """Import the snapshot lines and open a focus capsule (through the daemon)."""
    lines = snapshot_lines()
    numbered = [{"line": i + 1, "trace": t} for i, t in enumerate(lines)]
    done = daemon.call("memory.import", lines=numbered)
    assert done["refused"] == [] and done["written"] == len(lines), done
    daemon.call("focus.absorb", name="bug:login-timeout", query="login page VPN")
    daemon.call("focus.note", name="bug:login-timeout", text="Only with the VPN on; try MTU 1380",
                importance=0.8)  # fmt: skip
    return lines
