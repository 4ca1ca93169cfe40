"""A new search in ``hikmah browse`` starts on its first result. An overdue commitment
comes back for every query, so a cursor kept on it from the search before opened it
instead of what was just searched for."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from textual.widgets import DataTable, Input

from hikmah_browse.trace import TracePage
from tests.clients.browse_world import app_for, remember, until
from tests.harness.daemon import Running


@pytest.fixture
def daemon(words_daemon: Running) -> Running:
    return words_daemon  # recall by the words alone: nothing to wait for


def test_a_new_search_starts_on_its_first_result(daemon: Running) -> None:
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    overdue = remember(daemon, "pay the invoice for the cloud bill", kind="commitment",
                       deadline=two_days_ago)  # fmt: skip
    friday = remember(daemon, "Never deploy on a friday afternoon", kind="constraint")

    async def scenario() -> str:
        app = app_for(daemon)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.live, "the app")
            hits = app.screen.query_one("#hits", DataTable)
            query = app.screen.query_one("#query", Input)

            def first() -> str | None:
                if hits.row_count == 0:
                    return None
                return str(hits.coordinate_to_cell_key(hits.cursor_coordinate).row_key.value)

            view = app.screen.query_one("#search")

            def showing(words: str) -> bool:
                return view.shown is not None and view.shown.text == words

            query.value = "invoice cloud bill"
            await until(pilot, lambda: showing("invoice cloud bill"), "the first search")
            assert first() == overdue["id"]
            query.value = "friday deploy"
            await until(pilot, lambda: showing("friday deploy"), "the second search")
            assert hits.row_count >= 2  # the overdue commitment comes back here too
            assert first() == friday["id"]
            hits.focus()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, TracePage), "a trace's page")
            assert isinstance(app.screen, TracePage)
            return app.screen.trace_id

    assert asyncio.run(scenario()) == friday["id"]
