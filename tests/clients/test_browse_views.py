"""``hikmah browse`` showing memory, driven by Textual's headless pilot against a real
daemon on a real socket: explanations and filters, live events, the ledger, focus and
proposals, an agent session, a daemon restart, time travel, and where keys go."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from textual.widgets import Checkbox, Input, Static

from hikmah_browse.dialogs import Message
from hikmah_browse.trace import TracePage
from tests.clients.browse_pilot import SIZE, connected, focused_claims, run, search, table, text
from tests.clients.browse_world import app_for, remember, seed, until
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

REPO = Path(__file__).resolve().parents[2]


def test_why_and_filters(daemon: Running) -> None:
    world = seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            hits = await search(pilot, app, "staging")
            assert hits.row_count == 3
            await pilot.press("down", "w")
            why = text(app, "#why")
            assert "coverage 1.00" in why and "matched stag" in why
            await pilot.press("f")
            await until(pilot, lambda: app.screen.query("#source"), "the filters")
            app.screen.query_one("#source").value = "tool"  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            await until(pilot, lambda: hits.row_count == 1, "the filtered results")
            assert str(next(iter(hits.rows)).value) == world["old"]["id"]
            assert "by tool" in text(app, "#filters")

    run(scenario())


def test_new_traces_arrive_live(daemon: Running) -> None:
    seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            hits = await search(pilot, app, "kettle")
            assert hits.row_count == 1
            active = app.status.counts["active"] if app.status else 0
            written = await asyncio.to_thread(remember, daemon, "The kettle needs a new filter")
            await until(
                pilot, lambda: written["id"] in {str(k.value) for k in hits.rows}, "the new trace"
            )
            await until(pilot, lambda: f"{active + 1:,} active" in app.masthead, "the new count")

    run(scenario())


def test_the_ledger_counts_records_written_since_its_check_against_the_head_now(
    daemon: Running,
) -> None:
    for i in range(3):
        remember(daemon, f"note {i} before the check")

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await pilot.press("escape", "6")
            await until(pilot, lambda: "verifies ✓" in text(app, "#report"), "the check")
            report = text(app, "#report")
            assert "3 records read" in report and "Verified through record 3," in report
            assert "Acknowledged head 3: the same record." in report
            # Two writes after the check: the view, reloaded by their events, says the head
            # moved on by them, not a second number beside the verified one.
            for i in range(2):
                remember(daemon, f"note {i} after the check")
            await until(pilot, lambda: "head now 5" in text(app, "#report"), "the head now")
            report = " ".join(text(app, "#report").split())
            assert "Verified through record 3," in report
            assert "2 records written since the check, not verified yet (r verifies them)" in (
                report
            )
            await pilot.press("r")
            await until(pilot, lambda: "record 5," in text(app, "#report"), "the check again")
            report = text(app, "#report")
            assert "5 records read" in report and "Acknowledged head 5: the same record." in report
            await app.workers.wait_for_complete()

    run(scenario())


def test_help_ledger_focus_and_proposals(daemon: Running) -> None:
    for source in ("human:ana", "tool:probe"):
        remember(daemon, "The build cache lives on disk", kind="belief", source=source,
                 claim_key="build.cache", claim_value="disk", confidence=0.9)  # fmt: skip
    daemon.call("focus.note", name="task:release", text="Tag only after the canary is green")

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await pilot.press("escape", "question_mark")
            await until(pilot, lambda: len(app.screen_stack) > 1, "the help")
            assert "confirm as verified" in str(app.screen.query_one(Static).render())
            await pilot.press("escape", "6")
            await until(pilot, lambda: "verifies ✓" in text(app, "#report"), "the ledger report")
            assert "No unacknowledged record" in text(app, "#tail-title")
            await pilot.press("4")
            capsules = table(app, "#capsules")
            await until(pilot, lambda: capsules.row_count == 1, "the capsule")
            await pilot.press("enter")
            await until(pilot, lambda: "canary" in text(app, "#notes"), "its notes")
            await pilot.press("5")
            proposals = table(app, "#proposal-list")
            await until(pilot, lambda: proposals.row_count == 1, "the proposal")
            await pilot.press("p")
            await until(pilot, lambda: app.screen.query(Checkbox), "the question")
            await pilot.press("y")
            await until(pilot, lambda: len(app.screen_stack) == 1, "the answer")
            await app.workers.wait_for_complete()

    run(scenario())
    beliefs = daemon.call("memory.recall", query="build cache", kinds=["belief"])["results"]
    promoted = [r["trace"] for r in beliefs if r["trace"]["provenance"]["evidence"]]
    assert promoted and promoted[0]["provenance"]["verified"] is True


AGENT_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from hikmah_browse.app import BrowseApp
    from hikmah_browse.dialogs import Message
    from hikmah_browse.rpc import Dialer
    from tests.clients.browse_world import until

    async def main():
        app = BrowseApp(Dialer(Path(sys.argv[1])), source="human:ana")
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.status is not None, "the status")
            await pilot.press("escape", "3")
            queue = app.screen.query_one("#queue")
            await until(pilot, lambda: queue.row_count == 1, "the queue")
            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, Message), "the refusal")
            print(json.dumps({"masthead": app.masthead, "title": app.screen.title_text,
                              "text": app.screen.text}))

    asyncio.run(main())
    """
)


def test_an_agent_session_only_reads_and_says_so(daemon: Running) -> None:
    world = seed(daemon)
    done = subprocess.run(
        [sys.executable, "-c", AGENT_SCRIPT, str(daemon.socket)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=clean_env(CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="demo-1"),
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "READ-ONLY" in seen["masthead"] and "claude-code" in seen["masthead"]
    assert seen["title"] == "Read-only"
    assert "agent session (claude-code, CLAUDECODE" in seen["text"]
    assert daemon.call("memory.show", id=world["promise"]["id"])["status"] == "active"


def test_the_browser_reconnects_after_the_daemon_restarts(daemon: Running) -> None:
    seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await asyncio.to_thread(daemon.kill)
            await until(pilot, lambda: not app.live, "the loss to show")
            assert "offline" in app.masthead
            await asyncio.to_thread(daemon.start)
            await until(pilot, lambda: app.live and "● live" in app.masthead, "the reconnection")
            hits = await search(pilot, app, "kettle")
            assert hits.row_count == 1

    run(scenario())


def test_time_travel_shows_the_past_and_writes_nothing(daemon: Running) -> None:
    world = seed(daemon)
    old = world["old"]
    before = daemon.call("daemon.status")["head"]["seq"]
    fixed = remember(
        daemon, "The staging database runs PostgreSQL 16", kind="belief", source="human:ana",
        verified=True, claim_key="staging.db.version", claim_value="16", supersedes=old["id"],
    )  # fmt: skip

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            app.open_trace(old["id"])
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            page = app.screen
            assert isinstance(page, TracePage)
            await until(pilot, lambda: page.shown is not None, "the trace")
            await until(pilot, lambda: "superseded" in text(app, "#title"), "its status now")
            values = table(app, "#values")
            await until(pilot, lambda: values.row_count == 3, "its claim's three values")
            # Its own record, the first: the ledger panel loads after the values.
            await until(pilot, lambda: "record 1 " in text(app, "#ledger"), "its record")
            # Travel to the record before the correction.
            await pilot.press("t")
            await until(pilot, lambda: app.screen.query("#when"), "the time-travel dialog")
            app.screen.query_one("#when", Input).value = str(before)
            await pilot.press("enter")
            await until(pilot, lambda: "AS OF record" in app.masthead, "the masthead")
            await until(pilot, lambda: "active" in text(app, "#title"), "its status then")
            await until(pilot, lambda: "2 values" in text(app, "#conflict-note"), "the conflict")
            await until(pilot, lambda: values.row_count == 2, "two values then")
            assert fixed["id"] not in {str(k.value) for k in values.rows}
            # Nothing is written in the past.
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, Message), "the refusal")
            assert "as of" in str(app.screen.query_one(".dialog-body Static", Static).render())
            await pilot.press("escape")
            # Back to now.
            await pilot.press("t")
            await until(pilot, lambda: app.screen.query("#when"), "the dialog again")
            app.screen.query_one("#when", Input).value = ""
            await pilot.press("enter")
            await until(pilot, lambda: "superseded" in text(app, "#title"), "now again")
            assert "AS OF" not in app.masthead

    run(scenario())
    assert daemon.call("memory.show", id=old["id"])["status"] == "superseded"


def test_keys_go_to_the_view_in_sight(daemon: Running) -> None:
    """Back from a trace opened in the conflicts view, 1 shows the search: a key pressed
    there reaches the search, not the hidden conflicts table (where k keeps a value)."""
    seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await focused_claims(pilot, app)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            await pilot.press("escape", "1")
            await until(pilot, lambda: table(app, "#hits").row_count > 0, "the listing")
            await pilot.press("k")
            await pilot.pause(0.3)
            assert not app.screen.query(".dialog") and app.focused is table(app, "#hits")

    run(scenario())


def test_a_change_announced_while_a_trace_page_is_being_pushed_is_in_its_load(
    daemon: Running,
) -> None:
    # A correction opens its page, and the daemon's memory.changed for it can come before
    # the page is mounted: a reload then must wait for the mount, not query a page that
    # has no widgets yet (once in ten runs under load, a NoMatches for #title).
    world = seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            for _ in range(20):
                app.open_trace(world["note"]["id"])
                page = app.screen
                assert isinstance(page, TracePage) and not page.is_mounted
                page.action_reload()
                await until(pilot, lambda: page.shown is not None, "the trace")  # noqa: B023
                assert world["note"]["content"] in str(page.query_one("#content").render())
                await pilot.press("escape")
                await until(pilot, lambda: not isinstance(app.screen, TracePage), "back")

    run(scenario())
