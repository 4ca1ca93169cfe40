"""Consolidation proposals: durable beliefs the daemon would write, each waiting for a
person to promote it (``replay.consolidate`` never writes)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from hikmah.model.display import counted

from . import format
from .base import View, restore_cursor, room, selected_key
from .wire import Proposal


class ProposalsView(View):
    """Eligible proposals first; ``p`` promotes the one under the cursor."""

    title = "Proposals"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "promote", "Promote"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.proposals: dict[str, Proposal] = {}

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="proposal-list", cursor_type="row")
        yield table
        yield Static(id="proposal", classes="detail")
        yield Static(classes="note line")

    def on_mount(self) -> None:
        table = self.query_one("#proposal-list", DataTable)
        for label, width in (
            ("", 1),
            ("conf", 4),
            ("traces", 6),
            ("sources", 7),
            ("from", 10),
        ):
            table.add_column(label, width=width, key=label or "mark")
        table.add_column("claim", key="claim")

    async def load(self) -> None:
        proposals = await self.browser.memory.proposals()
        self.proposals = {p.id: p for p in proposals}
        table = self.query_one("#proposal-list", DataTable)
        keep = selected_key(table)
        table.clear()
        for proposal in proposals:
            table.add_row(
                "✓" if proposal.eligible else " ",
                f"{proposal.confidence:.2f}",
                proposal.support,
                proposal.independent_sources,
                proposal.origin,
                format.cell(_claim(proposal), room(self, table, 1, 4, 6, 7, 10)),
                key=proposal.id,
            )
        restore_cursor(table, keep)
        eligible = sum(p.eligible for p in proposals)
        self.say(
            f"{counted(len(proposals), 'proposal')}, {eligible} eligible (✓)"
            " · p promotes · r reloads"
        )
        self._detail()

    def action_reload(self) -> None:
        self.reload()

    def _selected(self) -> Proposal | None:
        key = selected_key(self.query_one("#proposal-list", DataTable))
        return None if key is None else self.proposals.get(key)

    @on(DataTable.RowHighlighted, "#proposal-list")
    def _detail(self) -> None:
        proposal = self._selected()
        if proposal is None:
            self.query_one("#proposal", Static).update("")
            return
        lines = [f"[b]{proposal.id}[/] {format.markup(_claim(proposal))}"]
        lines.append(format.markup(format.one_line(proposal.content)))
        if proposal.quote:
            lines.append(f"said: {format.markup(proposal.quote)}")
        if proposal.conflicting_values:
            lines.append("conflicts with " + format.markup(", ".join(proposal.conflicting_values)))
        lines.append("evidence " + ", ".join(proposal.evidence))
        self.query_one("#proposal", Static).update("\n".join(lines))

    def action_promote(self) -> None:
        if (proposal := self._selected()) is not None:
            self.browser.act_promote(proposal, _claim(proposal))


def _claim(proposal: Proposal) -> str:
    return f"{proposal.key} = {proposal.value}"
