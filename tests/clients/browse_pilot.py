"""Driving ``hikmah browse`` in Textual's headless pilot as a person would: the screen
size, the views' widgets by selector, typing a query and opening a row."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.widgets import DataTable, Input, Static

from hikmah_browse.app import BrowseApp
from tests.clients.browse_world import until

SIZE = (80, 24)


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
