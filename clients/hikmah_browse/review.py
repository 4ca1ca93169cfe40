"""The review inbox: what agents wrote that waits for the person before any agent reads
it (``review.list``), newest first; ``a`` accepts, ``r`` rejects, ``e`` edits then
accepts the one under the cursor. The inbox is the person's: an agent session is
refused it, and says so here."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import DataTable, Static

from hikmah.model.wire.review import ReviewItem, ReviewListResult
from hikmah_client.text import awaiting, when

from . import format
from .base import View, restore_cursor, room, selected_key

STATE = {"quarantined": "QUARANTINED", "pending": "PENDING"}


class ReviewView(View):
    """The held traces; the one under the cursor is shown whole below, with why it is
    held (for a quarantined one, each rule and what it matched)."""

    title = "Review"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "accept", "Accept"),
        Binding("r", "reject", "Reject"),
        Binding("e", "edit", "Edit, accept"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.items: dict[str, ReviewItem] = {}
        self.waiting = 0
        self._from_top = False

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="inbox", cursor_type="row")
        yield table
        yield Static(id="held-trace", classes="detail")
        yield Static(classes="note line")

    def on_mount(self) -> None:
        table = self.query_one("#inbox", DataTable)
        for label, width in (("state", 11), ("kind", 11), ("writer", 17), ("age", 4)):
            table.add_column(label, width=width, key=label)
        table.add_column("content", key="content")

    def reload_from_top(self) -> None:
        """Reload, the cursor on the first row (after an action decided the one it was on)."""
        self._from_top = True
        self.reload()

    async def load(self) -> None:
        inbox = await self.browser.memory.review()
        self._show(inbox)

    def _show(self, inbox: ReviewListResult) -> None:
        """Replace the rows in one step (no await between clearing and filling them); a
        view gone meanwhile (the app closing) is left alone."""
        try:
            table = self.query_one("#inbox", DataTable)
        except NoMatches:
            return
        top, self._from_top = self._from_top, False
        keep = None if top else selected_key(table)
        self.items = {item.trace.id: item for item in inbox.items}
        self.waiting = inbox.waiting
        table.clear()
        now = self.browser.now()
        width = room(self, table, 11, 11, 17, 4)
        for item in inbox.items:
            trace = item.trace
            prov = trace.provenance
            table.add_row(
                STATE.get(item.state, item.state.upper()),
                trace.kind,
                format.cell(item.writer or format.author(prov.source, prov.locator, False), 17),
                format.age(trace.created_at, now),
                format.cell(trace.content, width),
                key=trace.id,
            )
        if top:
            if table.row_count:
                table.move_cursor(row=0, animate=False)
        else:
            restore_cursor(table, keep)
        self.say(self._summary(inbox))
        self._detail()

    def _summary(self, inbox: ReviewListResult) -> str:
        if not inbox.items:
            return "nothing waits for review"
        more = inbox.waiting - len(inbox.items)
        extra = f" ({more} more not shown)" if more > 0 else ""
        past = " · the inbox is now's" if self.browser.memory.point is not None else ""
        return (
            f"{awaiting(inbox.waiting)}{extra} · no agent reads them until you decide"
            f" · a accept · r reject · e edit{past}"
        )

    def selected(self) -> ReviewItem | None:
        try:
            key = selected_key(self.query_one("#inbox", DataTable))
        except NoMatches:
            return None
        return None if key is None else self.items.get(key)

    @on(DataTable.RowHighlighted, "#inbox")
    def _detail(self) -> None:
        try:
            panel = self.query_one("#held-trace", Static)
        except NoMatches:
            return
        item = self.selected()
        panel.update("" if item is None else detail(item, self.browser.now()))

    @on(DataTable.RowSelected, "#inbox")
    def open_held(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.browser.open_trace(str(event.row_key.value))

    def action_accept(self) -> None:
        if (item := self.selected()) is not None:
            self.browser.act_accept(item)

    def action_reject(self) -> None:
        if (item := self.selected()) is not None:
            self.browser.act_reject(item)

    def action_edit(self) -> None:
        if (item := self.selected()) is not None:
            self.browser.act_accept(item, edit=True)


def writer(item: ReviewItem) -> str:
    """Who wrote a held trace: the agent and its session the daemon stamped, else the
    source it claims."""
    prov = item.trace.provenance
    if item.writer is None:
        return f"{format.provenance(item.trace)} (not stamped by the daemon)"
    session = f", session {item.session}" if item.session else ""
    claimed = "" if prov.source in (item.writer, "", None) else f" (claims {prov.source})"
    return f"{item.writer}{session}{claimed}"


def why_held(item: ReviewItem) -> list[str]:
    """Why it waits, as plain text: pending as an agent's standing rule, or each rule
    it matched and what it matched."""
    if item.state == "pending" or not item.reasons:
        return [f"PENDING review: an agent's {item.trace.kind}, no agent reads it yet"]
    lines = ["QUARANTINED: it reads as instructions to an agent"]
    lines += [
        f"  {reason.rule}: {reason.meaning}: {format.one_line(reason.matched)[:80]!r}"
        for reason in item.reasons
    ]
    return lines


def detail(item: ReviewItem, now: int) -> str:
    """The held trace under the cursor, whole (Rich markup, its text escaped)."""
    trace = item.trace
    head = (
        f"[b]{trace.id}[/] · {format.markup(trace.kind)} · written {when(trace.created_at)}"
        f" ({format.ago(trace.created_at, now)}) by {format.markup(writer(item))}"
    )
    why = [format.markup(line) for line in why_held(item)]
    return "\n".join([head, *why, format.markup(format.one_line(trace.content))])
