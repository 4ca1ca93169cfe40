"""Search as you type: the daemon's real recall on every pause in typing.

Each keystroke starts a search that first waits :data:`DEBOUNCE_S`; the next
keystroke cancels it (and, if it was already waiting for the daemon, its answer
is dropped), so only the newest query's results are ever shown and a fast
typist costs one recall per pause, not one per letter.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Key, Resize
from textual.widgets import DataTable, Input, Static

from hikmah.model.wire.memory import Recalled

from . import format
from .base import View, in_worker, restore_cursor, room, selected_key
from .dialogs import Filters
from .query import Search

DEBOUNCE_S = 0.04


class SearchView(View):
    """The query line, the filters, the results and, on demand, why each one scored."""

    title = "Search"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_query", "Search"),
        Binding("w", "toggle_why", "Why"),
        Binding("f", "filters", "Filters"),
        Binding("c", "correct", "Correct"),
        Binding("i", "invalidate", "Invalidate"),
    ]

    def __init__(self, query: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.search = Search(text=query)
        self.hits: dict[str, Recalled] = {}
        self.shown: Search | None = None  # the search whose results the table holds

    def compose(self) -> ComposeResult:
        yield Input(
            self.search.text,
            placeholder="search memory: words, #tag  (↓ results · f filters · ? help)",
            id="query",
            compact=True,
        )
        yield Static(id="filters", classes="line dim")
        table: DataTable[str] = DataTable(id="hits", cursor_type="row")
        yield table
        yield Static(id="why", classes="why")
        yield Static(classes="note line")

    def on_mount(self) -> None:
        table = self.query_one("#hits", DataTable)
        for label, width in (("", 3), ("score", 5), ("kind", 11)):
            table.add_column(label, width=width, key=label or "marks")
        table.add_column("source", width=12, key="source")
        table.add_column("age", width=4, key="age")
        table.add_column("content", key="content")
        self.query_one("#why").display = False
        self.query_one("#filters", Static).update(self.search.describe())

    def on_resize(self, event: Resize) -> None:
        self._show(list(self.hits.values()))

    # --- searching -----------------------------------------------------------------

    @on(Input.Changed, "#query")
    def typed(self, event: Input.Changed) -> None:
        self.search = self.search.replace(text=event.value)
        self.run_search()

    async def load(self) -> None:
        self.run_search(pause=False)

    def run_search(self, pause: bool = True) -> None:
        """Search again, replacing a search still under way (``pause``: wait for typing
        to settle first)."""
        in_worker(self, partial(self._search, pause), "search")

    async def _search(self, pause: bool) -> None:
        if pause:
            await asyncio.sleep(DEBOUNCE_S)
        try:
            hits = await self.browser.memory.recall(self.search)
        except Exception as exc:
            self.say(f"[b]{format.markup(str(exc))}[/]")
            return
        self._show(hits)

    def _show(self, hits: list[Recalled]) -> None:
        table = self.query_one("#hits", DataTable)
        # The same search shown again (new events, a resize) keeps its row; a new one
        # starts on its first result, not on a row that happens to be in both lists.
        keep = selected_key(table) if self.search == self.shown else None
        self.shown = self.search
        table.clear()
        self.hits = {hit.trace.id: hit for hit in hits}
        now = self.browser.now()
        width = room(self, table, 3, 5, 11, 12, 4)
        for hit in hits:
            trace = hit.trace
            table.add_row(
                format.markers(trace, hit.status, bool(hit.conflicts)),
                f"{hit.score:.2f}",
                trace.kind,
                format.cell(
                    format.author(trace.provenance.source, trace.provenance.locator, False), 12
                ),
                format.age(trace.created_at, now),
                format.cell(_flagged(hit), width),
                key=trace.id,
            )
        restore_cursor(table, keep)
        self._note(len(hits))
        self._why()

    def _note(self, shown: int) -> None:
        parts = [f"{shown} result{'' if shown == 1 else 's'}"]
        limit = self.browser.recall_limit
        if limit is not None:
            parts.append(f"recall returns at most {limit} (policy recall_limit)")
        self.say(" · ".join(parts))

    # --- keys ----------------------------------------------------------------------

    def on_key(self, event: Key) -> None:
        query = self.query_one("#query", Input)
        table = self.query_one("#hits", DataTable)
        if query.has_focus and event.key in ("down", "enter", "escape"):
            table.focus()
            event.stop()
        elif table.has_focus and event.key == "up" and table.cursor_row == 0:
            query.focus()
            event.stop()

    @on(DataTable.RowSelected, "#hits")
    def open_trace(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.browser.open_trace(str(event.row_key.value))

    @on(DataTable.RowHighlighted, "#hits")
    def highlighted(self) -> None:
        self._why()

    def selected(self) -> Recalled | None:
        key = selected_key(self.query_one("#hits", DataTable))
        return None if key is None else self.hits.get(key)

    def _why(self) -> None:
        panel = self.query_one("#why", Static)
        hit = self.selected()
        if panel.display and hit is not None:
            panel.update(format.why_text(hit))
        elif panel.display:
            panel.update("nothing selected")

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_toggle_why(self) -> None:
        panel = self.query_one("#why", Static)
        panel.display = not panel.display
        self._why()

    def action_filters(self) -> None:
        def chosen(search: Search | None) -> None:
            if search is not None:
                self.search = search
                self.query_one("#filters", Static).update(search.describe())
                self.run_search(pause=False)

        self.app.push_screen(Filters(self.search), chosen)

    def action_correct(self) -> None:
        hit = self.selected()
        if hit is not None:
            self.browser.act_correct(hit.trace)

    def action_invalidate(self) -> None:
        self.browser.act_invalidate(self.search.words_and_tags()[0])


def _flagged(hit: Recalled) -> str:
    """A result's text, after its review flag when it waits for the person's review."""
    flag = format.held(hit.held)
    return f"{flag}: {hit.trace.content}" if flag else hit.trace.content
