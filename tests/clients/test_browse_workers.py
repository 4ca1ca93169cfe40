"""A view's work ends quietly when the view was taken down while it awaited the daemon
(the app closing: seen in test_browse_presence, one run in three under load, before
in_worker checked); a widget missing from a view still shown still raises."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from hikmah_browse.base import in_worker


class Page(Screen[None]):
    def __init__(self, answer: asyncio.Event, wanted: str) -> None:
        super().__init__()
        self.answer, self.wanted, self.shown = answer, wanted, False

    def compose(self) -> ComposeResult:
        yield Static(id="title")

    def on_mount(self) -> None:
        async def load() -> None:
            await self.answer.wait()  # the daemon's answer, late
            self.query_one(self.wanted, Static).update("loaded")
            self.shown = True

        in_worker(self, load, "load")


# Textual runs on asyncio: each test runs its own loop (the suite's is trio's).
def test_a_widget_missing_from_a_page_in_sight_still_fails() -> None:
    async def main() -> None:
        answer = asyncio.Event()
        app: App[None] = App()
        async with app.run_test() as pilot:
            await app.push_screen(Page(answer, "#nothing-by-that-name"))
            answer.set()
            await pilot.pause()

    try:
        asyncio.run(main())
    except Exception as exc:  # the worker's NoMatches, raised by run_test
        assert "nothing-by-that-name" in str(exc)
    else:
        raise AssertionError("a missing widget in a page in sight went unnoticed")


def test_a_page_being_taken_down_ends_its_work_quietly() -> None:
    # Textual marks a page closing or being removed before it removes its widgets, the
    # page still attached: an answer arriving then has nowhere to go (seen at the end
    # of the presence test, a reload's answer as the app closed).
    async def main() -> None:
        answer = asyncio.Event()
        app: App[None] = App()
        async with app.run_test() as pilot:
            page = Page(answer, "#title")
            await app.push_screen(page)
            page._pruning = True  # what App._prune sets first
            await page.query_one("#title").remove()
            answer.set()
            await pilot.pause()
            await pilot.pause()
            assert page.is_attached and not page.shown

    asyncio.run(main())


def test_a_view_of_an_app_shutting_down_ends_its_work_quietly() -> None:
    # The app marks itself stopped, then removes its screens one by one: a view of a
    # screen not yet reached is still attached and unmarked when its answer arrives
    # (seen at the end of the presence test: the search's answer as the app closed).
    class Main(Screen[None]):
        def compose(self) -> ComposeResult:
            yield Static(id="hits")

    async def main() -> None:
        answer = asyncio.Event()
        shown: list[str] = []
        app: App[None] = App()
        async with app.run_test() as pilot:
            screen = Main()
            await app.push_screen(screen)

            async def search() -> None:
                await answer.wait()
                screen.query_one("#hits", Static).update("hits")
                shown.append("hits")

            in_worker(screen, search, "search")
            await pilot.pause()
            await screen.query_one("#hits").remove()
            app._running = False  # what App._shutdown sets first
            answer.set()
            for _ in range(3):
                await asyncio.sleep(0)
            assert screen.is_attached and not shown
            app._running = True

    asyncio.run(main())
