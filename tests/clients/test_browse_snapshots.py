"""Snapshots of the browser's main screens at 80×24 (pytest-textual-snapshot), against a
real daemon whose wall clock is stopped (tests/clients/frozen_hikmahd.py) on a store of
fixed ids and times, so that every run draws the same screens. The SVGs under
``__snapshots__/`` are the screenshots in docs/browse.md.

Update them after a deliberate change with ``pytest tests/clients/test_browse_snapshots.py
--snapshot-update`` and look at each one before committing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")
pytest.importorskip("pytest_textual_snapshot", reason="needs pytest-textual-snapshot")

from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from hikmah_browse.app import LIVE_DELAY_S, BrowseApp
from hikmah_browse.rpc import Dialer
from hikmah_browse.trace import TracePage
from tests.clients.browse_world import FROZEN_MS, load_snapshot_store, until
from tests.harness.daemon import Running

SIZE = (80, 24)
Compare = Callable[..., bool]


@pytest.fixture(scope="module")
def frozen() -> Iterator[tuple[Running, list[dict[str, Any]]]]:
    root = Path(tempfile.mkdtemp(prefix="hks", dir="/tmp"))
    running = Running(root, module=("tests.clients.frozen_hikmahd", str(FROZEN_MS)))
    # The screens pin recall's order and scores: the reference's, explicitly (no
    # semantic channel, uniform coverage and Jaccard), as the shots in browse.md were.
    running.policy.write_text('[recall]\nweighting = "reference"\n\n[semantic]\nenabled = false\n')
    try:
        running.start()
        yield running, load_snapshot_store(running)
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


def browser(frozen: tuple[Running, list[dict[str, Any]]], query: str = "") -> BrowseApp:
    daemon, _ = frozen
    return BrowseApp(
        Dialer(daemon.socket), query=query, clock=lambda: FROZEN_MS, source="human:ana"
    )


async def settled(pilot: Pilot[Any], ready: Callable[[], object], what: str) -> None:
    """Connected, ``ready()``, every worker done, and the toasts of the reminders the
    daemon replays on subscribing cleared (they come and go with time)."""
    app = pilot.app
    assert isinstance(app, BrowseApp)
    await until(pilot, lambda: app.live and app.status is not None, "the connection")
    await until(pilot, ready, what)
    await pilot.pause(LIVE_DELAY_S + 0.1)
    await app.workers.wait_for_complete()
    await until(pilot, ready, what)
    app.clear_notifications()
    await pilot.pause()


def rows(pilot: Pilot[Any], selector: str) -> int:
    return pilot.app.screen.query_one(selector, DataTable).row_count


def snap(compare: Compare, app: BrowseApp, before: Callable[[Pilot[Any]], Awaitable[None]]) -> None:
    assert compare(app, terminal_size=SIZE, run_before=before)


def test_search(snap_compare: Compare, frozen: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: rows(pilot, "#hits") == 6, "the results")
        await pilot.press("down", "w")

    snap(snap_compare, browser(frozen, "staging"), before)


def test_search_without_colour(
    snap_compare: Compare, frozen: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")

    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: rows(pilot, "#hits") == 6, "the results")
        await pilot.press("down")

    snap(snap_compare, browser(frozen, "staging"), before)


@pytest.mark.parametrize("end", [False, True], ids=["top", "end"])
def test_trace_page(snap_compare: Compare, frozen: Any, end: bool) -> None:
    _, lines = frozen
    corrected = lines[1]["id"]

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, BrowseApp)
        await settled(pilot, lambda: rows(pilot, "#hits") > 0, "the results")
        app.open_trace(corrected)

        def shown() -> bool:
            screen = app.screen
            return isinstance(screen, TracePage) and screen.rivals != {}

        await settled(pilot, shown, "the trace page")
        if end:
            app.screen.query_one("#page").scroll_end(animate=False)
            await pilot.pause()

    snap(snap_compare, browser(frozen, "staging"), before)


def test_as_of(snap_compare: Compare, frozen: Any) -> None:
    """The first claim's page as of the record that wrote it (not corrected yet), at its
    end: its claim's one value then, and its own ledger record."""
    _, lines = frozen
    first = lines[0]["id"]

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, BrowseApp)
        await settled(pilot, lambda: app.status is not None, "the status")
        app.open_trace(first)
        await settled(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
        await pilot.press("t")
        await until(pilot, lambda: app.screen.query("#when"), "the time-travel dialog")
        await pilot.press("1", "enter")

        def then() -> bool:
            screen = app.screen
            title = str(screen.query_one("#title", Static).render())
            return isinstance(screen, TracePage) and "· active ·" in title

        await settled(pilot, then, "the page as of record 1")
        app.screen.query_one("#page").scroll_end(animate=False)
        await pilot.pause()

    snap(snap_compare, browser(frozen), before)


def test_correct_dialog(snap_compare: Compare, frozen: Any) -> None:
    _, lines = frozen

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, BrowseApp)
        await settled(pilot, lambda: app.status is not None, "the status")
        app.open_trace(lines[2]["id"])
        await settled(pilot, lambda: isinstance(app.screen, TracePage), "the trace page")
        await pilot.press("c")
        await until(pilot, lambda: app.screen.query("#verified"), "the dialog")

    snap(snap_compare, browser(frozen), before)


@pytest.mark.parametrize(
    ("key", "table", "count"),
    [
        ("2", "#claims", 2),  # the selected key's claims, loaded after the keys
        ("3", "#queue", 3),
        ("5", "#proposal-list", 1),
    ],
    ids=["conflicts", "commitments", "proposals"],
)
def test_views(snap_compare: Compare, frozen: Any, key: str, table: str, count: int) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: pilot.app.status is not None, "the status")  # type: ignore[attr-defined]
        await pilot.press("escape", key)
        await settled(pilot, lambda: rows(pilot, table) >= count, "the view")

    snap(snap_compare, browser(frozen), before)


def test_focus(snap_compare: Compare, frozen: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: pilot.app.status is not None, "the status")  # type: ignore[attr-defined]
        await pilot.press("escape", "4")
        await settled(pilot, lambda: rows(pilot, "#capsules") == 1, "the capsules")
        await pilot.press("enter")
        await settled(pilot, lambda: rows(pilot, "#held") > 0, "the capsule")

    snap(snap_compare, browser(frozen), before)


def test_ledger(snap_compare: Compare, frozen: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: pilot.app.status is not None, "the status")  # type: ignore[attr-defined]
        await pilot.press("escape", "6")
        report = pilot.app.screen.query_one("#report", Static)
        await settled(pilot, lambda: "verifies" in str(report.render()), "the report")

    snap(snap_compare, browser(frozen), before)


def test_help(snap_compare: Compare, frozen: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await settled(pilot, lambda: pilot.app.status is not None, "the status")  # type: ignore[attr-defined]
        await pilot.press("escape", "question_mark")
        await pilot.pause()

    snap(snap_compare, browser(frozen), before)
