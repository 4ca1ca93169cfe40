"""``hikmah browse`` writing, driven by Textual's headless pilot against a real daemon on
a real socket: the pilot types and presses keys as a person would, and every effect is
checked on the screen and again in the daemon."""

from __future__ import annotations

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from textual.widgets import Checkbox, Input, Static, TextArea

from hikmah_browse.app import BrowseApp
from hikmah_browse.dialogs import Message
from hikmah_browse.trace import TracePage
from tests.clients.browse_pilot import (
    SIZE,
    connected,
    focused_claims,
    open_row,
    run,
    search,
    table,
    text,
)
from tests.clients.browse_world import app_for, remember, seed, until
from tests.harness.daemon import Running


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
