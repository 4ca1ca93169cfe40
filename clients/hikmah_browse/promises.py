"""The promise queue: open commitments with a deadline, soonest first."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from hikmah.model.display import counted
from hikmah.model.wire.memory import Commitment
from hikmah_client.text import clip, when

from . import format
from .base import View, restore_cursor, room, selected_key

# What the view can show: (label, within_hours, overdue only).
WINDOWS = {
    "o": ("overdue", None, True),
    "s": ("due within 24 h", 24.0, False),
    "w": ("due within 7 days", 24.0 * 7, False),
    "a": ("the whole queue", None, False),
}


class PromisesView(View):
    """Commitments due soon or overdue; ``d`` marks one done."""

    title = "Commitments"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "fulfil", "Fulfil"),
        Binding("c", "correct", "Correct"),
        Binding("o", "window('o')", "Overdue"),
        Binding("s", "window('s')", "24 h"),
        Binding("w", "window('w')", "7 days"),
        Binding("a", "window('a')", "All"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.window = "w"
        self.items: dict[str, Commitment] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="window", classes="line")
        table: DataTable[str] = DataTable(id="queue", cursor_type="row")
        yield table
        yield Static(classes="note line")

    def on_mount(self) -> None:
        table = self.query_one("#queue", DataTable)
        table.add_column("due", width=17, key="due")
        table.add_column("", width=12, key="in")
        table.add_column("commitment", key="content")

    async def load(self) -> None:
        label, hours, overdue = WINDOWS[self.window]
        items = await self.browser.memory.commitments(within_hours=hours, overdue=overdue)
        self.items = {item.trace.id: item for item in items}
        self.query_one("#window", Static).update(
            f"[b]{label}[/] · o overdue · s 24 h · w 7 days · a all"
        )
        table = self.query_one("#queue", DataTable)
        keep = selected_key(table)
        table.clear()
        now = self.browser.now()
        width = room(self, table, 17, 12)
        for item in items:
            deadline = item.trace.deadline or 0
            ago = format.ago(deadline, now)
            lateness = f"OVERDUE {format.age(deadline, now)}" if item.overdue else ago
            table.add_row(
                when(deadline),
                clip(lateness, 12),
                format.cell(item.trace.content, width),
                key=item.trace.id,
            )
        restore_cursor(table, keep)
        overdue_count = sum(item.overdue for item in items)
        self.say(
            f"{counted(len(items), 'commitment')}, {overdue_count} overdue"
            " · d fulfils · Enter opens"
        )

    def action_window(self, window: str) -> None:
        self.window = window
        self.reload()

    def _selected(self) -> Commitment | None:
        key = selected_key(self.query_one("#queue", DataTable))
        return None if key is None else self.items.get(key)

    @on(DataTable.RowSelected, "#queue")
    def open_commitment(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.browser.open_trace(str(event.row_key.value))

    def action_fulfil(self) -> None:
        if (item := self._selected()) is not None:
            self.browser.act_fulfil(item.trace)

    def action_correct(self) -> None:
        if (item := self._selected()) is not None:
            self.browser.act_correct(item.trace)
