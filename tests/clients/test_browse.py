"""``hikmah browse`` driven by Textual's headless pilot, against a real daemon on a real
socket: the pilot types and presses keys as a person would, and every effect is
checked on the screen and again in the daemon."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from textual.widgets import Checkbox, DataTable, Input, Static, TextArea

from hikmah_browse.app import BrowseApp
from hikmah_browse.dialogs import Message
from hikmah_browse.trace import TracePage
from tests.clients.browse_world import app_for, remember, seed, until
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

SIZE = (80, 24)
REPO = Path(__file__).resolve().parents[2]


def run(scenario: Any) -> None:
    """Textual runs on asyncio; the suite's own async tests run on trio."""
    asyncio.run(scenario)


def table(app: BrowseApp, selector: str) -> DataTable[Any]:
    return app.screen.query_one(selector, DataTable)


def text(app: BrowseApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def connected(pilot: Any, app: BrowseApp) -> None:
    await until(pilot, lambda: app.live and app.status is not None, "the app to connect")


async def focused_claims(pilot: Any, app: BrowseApp) -> DataTable[Any]:
    """The conflicts view's claims table, its two claims shown, focused."""
    await pilot.press("escape", "2")
    claims = table(app, "#claims")
    await until(pilot, lambda: claims.row_count == 2, "the claims")
    claims.focus()
    return claims


async def search(pilot: Any, app: BrowseApp, words: str) -> DataTable[Any]:
    app.screen.query_one("#query", Input).focus()
    await pilot.press(*words)
    hits = table(app, "#hits")
    view = app.screen.query_one("#search")
    # The results of this query, not of a prefix of it still arriving.
    await until(pilot, lambda: view.shown is not None and view.shown.text == words, "the query")
    await until(pilot, lambda: hits.row_count > 0, f"results for {words!r}")
    return hits


async def open_row(pilot: Any, grid: DataTable[Any], trace_id: str) -> None:
    grid.focus()
    grid.move_cursor(row=grid.get_row_index(trace_id))
    await pilot.press("enter")


def test_search_open_correct_and_the_conflict_goes(daemon: Running) -> None:
    world = seed(daemon)
    old, new = world["old"], world["new"]

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            # The conflict view lists the key with both values.
            await pilot.press("escape", "2")
            keys = table(app, "#keys")
            await until(pilot, lambda: keys.row_count == 1, "the conflict")
            claims = table(app, "#claims")
            await until(pilot, lambda: claims.row_count == 2, "its claims")
            # Type a query, as a person does, letter by letter.
            await pilot.press("1")
            hits = await search(pilot, app, "staging database")
            assert {old["id"], new["id"]} <= {str(k.value) for k in hits.rows}
            await open_row(pilot, hits, old["id"])
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            page = app.screen
            assert isinstance(page, TracePage)
            await until(pilot, lambda: page.shown is not None, "the trace")
            await until(pilot, lambda: "2 values" in text(app, "#conflict-note"), "its conflict")
            assert old["id"] in text(app, "#title")
            assert "tool:psql, unverified" in text(app, "#fields")
            assert "staging.db.version = 15" in text(app, "#fields")
            # Correct it inline: the new text and value, verified.
            await pilot.press("c")
            await until(pilot, lambda: app.screen.query(TextArea), "the dialog")
            app.screen.query_one(TextArea).load_text("The staging database runs PostgreSQL 16")
            app.screen.query_one("#claim", Input).value = "16"
            await pilot.press("ctrl+s")
            await until(
                pilot,
                lambda: isinstance(app.screen, TracePage) and app.screen.trace_id != old["id"],
                "the correction's page",
            )
            correction = app.screen
            assert isinstance(correction, TracePage)
            await until(pilot, lambda: correction.shown is not None, "the correction")
            assert f"supersedes {old['id']}" in text(app, "#fields")
            history = table(app, "#history")
            assert [str(k.value) for k in history.rows] == [old["id"], correction.trace_id]
            # The conflict view has changed: nothing is open any more.
            await pilot.press("2")
            await until(pilot, lambda: keys.row_count == 0, "the conflict to go")
            assert "no open conflicts" in text(app, "#conflicts .note")

    run(scenario())
    shown = daemon.call("memory.show", id=old["id"])
    assert shown["status"] == "superseded"
    fixed = daemon.call("memory.show", id=shown["superseded_by"])["trace"]
    assert fixed["content"] == "The staging database runs PostgreSQL 16"
    assert fixed["kind"] == "belief" and fixed["claim_value"] == "16"
    assert fixed["provenance"]["verified"] is True
    assert fixed["provenance"]["source"] == "human:ana"
    assert fixed["tags"] == ["staging"]
    assert daemon.call("memory.conflicts")["conflicts"] == []


def test_keep_a_value_resolves_the_conflict(daemon: Running) -> None:
    world = seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            claims = await focused_claims(pilot, app)
            claims.move_cursor(row=claims.get_row_index(world["new"]["id"]))
            await pilot.press("k")
            await until(
                pilot,
                lambda: (
                    "Keep staging.db.version = 16"
                    in str(app.screen.query_one(".dialog-title", Static).render())
                ),
                "the question",
            )
            await pilot.press("y")
            await until(pilot, lambda: table(app, "#keys").row_count == 0, "the conflict to go")

    run(scenario())
    old = daemon.call("memory.show", id=world["old"]["id"])
    assert old["status"] == "superseded"
    kept = daemon.call("memory.show", id=old["superseded_by"])["trace"]
    assert kept["claim_value"] == "16" and kept["provenance"]["verified"] is True
    assert daemon.call("memory.show", id=world["new"]["id"])["status"] == "active"


def test_fulfil_a_commitment(daemon: Running) -> None:
    world = seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await pilot.press("escape", "3")
            queue = table(app, "#queue")
            await until(pilot, lambda: queue.row_count == 1, "the promise queue")
            await pilot.press("d")
            await until(pilot, lambda: len(app.screen_stack) > 1, "the question")
            await pilot.press("y")
            await until(pilot, lambda: queue.row_count == 0, "the commitment to leave the queue")

    run(scenario())
    assert daemon.call("memory.show", id=world["promise"]["id"])["status"] == "fulfilled"
    assert daemon.call("promises.list")["commitments"] == []


def test_a_refusal_is_shown_in_the_daemons_words(daemon: Running) -> None:
    verified = remember(
        daemon, "Deploys need two approvals", kind="constraint", verified=True, source="human:ana"
    )

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            hits = await search(pilot, app, "approvals")
            await open_row(pilot, hits, verified["id"])
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            await pilot.press("c")
            await until(pilot, lambda: app.screen.query(Checkbox), "the dialog")
            app.screen.query_one("#verified", Checkbox).value = False  # an unverified correction
            await pilot.press("ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, Message), "the refusal")
            message = app.screen
            assert isinstance(message, Message)
            assert message.title_text == f"hikmahd refused: correct {verified['id']} (provenance)"
            assert message.text == (
                f"an unverified trace cannot supersede the verified trace {verified['id']};"
                " a person can write a verified correction"
            )

    run(scenario())
    assert daemon.call("memory.show", id=verified["id"])["status"] == "active"


def test_purge_needs_the_typed_word(daemon: Running) -> None:
    world = seed(daemon)
    note = world["note"]

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            hits = await search(pilot, app, "kettle")
            await open_row(pilot, hits, note["id"])
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            await pilot.press("p")
            await until(pilot, lambda: app.screen.query("#word"), "the purge dialog")
            app.screen.query_one("#reason", Input).value = "recorded by mistake"
            app.screen.query_one("#word", Input).value = "yes"
            app.screen.query_one("#word", Input).focus()
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert app.screen.query("#word"), "a wrong word purges nothing"
            app.screen.query_one("#word", Input).value = "purge"
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, Message), "the purge's note")
            assert "ledger until you run hikmah compact" in app.screen.text  # type: ignore[attr-defined]

    run(scenario())
    with daemon.connect() as conn:
        reply = conn.request("memory.show", id=note["id"])
    assert reply["error"]["data"]["reason"] == "not_found"


def test_confirm_as_verified_and_invalidate_with_its_preview(daemon: Running) -> None:
    world = seed(daemon)

    async def scenario() -> None:
        app = app_for(daemon)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            hits = await search(pilot, app, "kettle")
            await open_row(pilot, hits, world["note"]["id"])
            await until(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
            await pilot.press("v")
            await until(pilot, lambda: len(app.screen_stack) > 2, "the question")
            await pilot.press("y")
            await until(
                pilot,
                lambda: isinstance(app.screen, TracePage) and "verified ✓" in text(app, "#title"),
                "the verified copy",
            )
            await pilot.press("1")
            await pilot.press("i")
            await until(pilot, lambda: app.screen.query("#pattern"), "the invalidate dialog")
            app.screen.query_one("#pattern", Input).value = "TLS certificate"
            app.screen.query_one("#reason", Input).value = "the certificate moved to ACME"
            app.screen.query_one("#reason", Input).focus()
            await pilot.press("enter")
            await until(pilot, lambda: "Supersede these 1 traces?" in _title(app), "the preview")
            assert world["promise"]["id"] in app.screen.text  # type: ignore[attr-defined]
            await pilot.press("y")
            await until(pilot, lambda: _title(app) == "Invalidated", "the result")

    run(scenario())
    assert daemon.call("memory.show", id=world["note"]["id"])["status"] == "superseded"
    assert daemon.call("memory.show", id=world["promise"]["id"])["status"] == "superseded"


def _title(app: BrowseApp) -> str:
    found = app.screen.query(".dialog-title")
    return str(found.first(Static).render()) if found else ""


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


# --- the CLI's side ---------------------------------------------------------------------


def _cli(
    *args: str, python: list[str] | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(python or [sys.executable]), "-m", "hikmah_cli", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_without_the_extra_browse_says_how_to_install_it(short_tmp: Path) -> None:
    # -S: no site-packages, so no textual (nor anything else): the CLI is stdlib only.
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'clients'}"}
    done = _cli("--socket", str(short_tmp / "s"), "browse", python=[sys.executable, "-S"], env=env)
    assert done.returncode == 1
    assert "pip install 'hikmah[browse]'" in done.stderr
    assert done.stdout == ""


def test_browse_needs_a_terminal(daemon: Running) -> None:
    done = _cli("--socket", str(daemon.socket), "--no-autostart", "browse")
    assert done.returncode == 2
    assert "needs a terminal" in done.stderr


@pytest.mark.parametrize(
    ("args", "python", "code"),
    [
        (["--help"], [sys.executable], 0),
        (["--socket", "none.sock", "--bogus"], [sys.executable], 2),
        (["--socket", "none.sock", "--no-autostart", "a query"], [sys.executable], 2),
        (["--socket", "none.sock"], [sys.executable, "-S"], 1),  # no textual
    ],
)
def test_python_m_hikmah_browse_is_hikmah_browse(
    short_tmp: Path, args: list[str], python: list[str], code: int
) -> None:
    # The browser starts itself, without the CLI, yet as `hikmah browse` does.
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'clients'}"}

    def run(*entry: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*python, "-m", *entry, *args], capture_output=True, text=True, timeout=60,
            cwd=short_tmp, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    cli, browse = run("hikmah_cli", "browse"), run("hikmah_browse")
    assert (browse.returncode, browse.stdout, browse.stderr) == (code, cli.stdout, cli.stderr)
    assert cli.returncode == code


def test_other_commands_never_load_the_browser(daemon: Running) -> None:
    done = _cli(
        "--socket", str(daemon.socket), "status", python=[sys.executable, "-X", "importtime"]
    )
    assert done.returncode == 0, done.stderr
    modules = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "hikmah_client.connection" in modules  # the measurement sees the CLI's own imports
    loaded = {
        m for m in modules if m.split(".")[0] in ("textual", "rich", "hikmah_browse", "msgspec")
    }
    assert loaded == set()


def test_the_browser_never_imports_the_kernels_store() -> None:
    # A thin client: the kernel's wire types only (trace, ledger, proposal), never LMDB.
    code = "import sys, hikmah_browse.app; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.split())
    assert "hikmah_browse.app" in modules and "hikmah.model.trace" in modules
    assert not modules & {
        "lmdb",
        "hikmah.store.core",
        "hikmah.index.snapshot",
        "hikmah.index.layout",
        "numpy",
    }


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
