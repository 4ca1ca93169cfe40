"""Focus capsules: the working sets open in the daemon, and what one holds."""

from __future__ import annotations

from functools import partial

from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from . import format
from .base import View, in_worker, restore_cursor, room, selected_key


class FocusView(View):
    """Every open capsule; Enter shows the traces and notes of one.

    Listing capsules does not count as using them; showing one does (``focus.read``
    is the only way to see its traces), which keeps it open for its idle time.
    """

    title = "Focus"

    def compose(self) -> ComposeResult:
        capsules: DataTable[str] = DataTable(id="capsules", cursor_type="row")
        yield capsules
        yield Static(id="capsule-title", classes="line")
        held: DataTable[str] = DataTable(id="held", cursor_type="row")
        yield held
        yield Static(id="notes")
        yield Static(classes="note line")

    def on_mount(self) -> None:
        capsules = self.query_one("#capsules", DataTable)
        for label, width in (
            ("capsule", 30),
            ("traces", 7),
            ("pinned", 6),
            ("notes", 5),
            ("idle", 8),
        ):
            capsules.add_column(label, width=width, key=label)
        held = self.query_one("#held", DataTable)
        for label, width in (("activation", 10), ("pin", 3), ("kind", 11)):
            held.add_column(label, width=width, key=label)
        held.add_column("content", key="content")

    async def load(self) -> None:
        capsules = await self.browser.memory.capsules()
        table = self.query_one("#capsules", DataTable)
        keep = selected_key(table)
        table.clear()
        for capsule in capsules:
            table.add_row(
                format.cell(capsule.name, 30),
                f"{capsule.size}/{capsule.limit}",
                capsule.pinned,
                capsule.notes,
                f"{capsule.idle_s} s",
                key=capsule.name,
            )
        restore_cursor(table, keep)
        self.say(
            f"{len(capsules)} open · Enter shows one (which counts as using it)"
            if capsules
            else "no focus capsule is open (agents open them with recall --focus)"
        )

    @on(DataTable.RowSelected, "#capsules")
    def show_capsule(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            in_worker(self, partial(self._show, str(event.row_key.value)), "capsule")

    async def _show(self, name: str) -> None:
        capsule = await self.browser.memory.capsule(name)
        self.query_one("#capsule-title", Static).update(
            f"[b]{format.markup(capsule.name)}[/]: {len(capsule.traces)}/{capsule.limit} traces"
        )
        held = self.query_one("#held", DataTable)
        held.clear()
        width = room(self, held, 10, 3, 11)
        for entry in capsule.traces:
            held.add_row(
                f"{entry.activation:.2f}",
                "yes" if entry.pinned else "",
                entry.trace.kind,
                format.cell(entry.trace.content, width),
                key=entry.trace.id,
            )
        notes = [
            f"({note.importance:.1f}) {format.markup(format.one_line(note.text))}"
            for note in capsule.notes
        ]
        self.query_one("#notes", Static).update("\n".join(["[b]notes[/]", *notes]) if notes else "")
        held.focus()

    @on(DataTable.RowSelected, "#held")
    def open_held(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.browser.open_trace(str(event.row_key.value))
