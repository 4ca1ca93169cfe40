"""Open conflicts, grouped by claim key: the keys above, the claims of one key below."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from hikmah.model.wire.memory import ConflictGroup, ShowResult
from hikmah_client.text import when

from . import format
from .base import View, in_worker, restore_cursor, room, selected_key


class ConflictsView(View):
    """Every claim key with several values among active traces."""

    title = "Conflicts"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "keep", "Keep this value"),
        Binding("c", "correct", "Correct"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.groups: dict[str, ConflictGroup] = {}
        self.claims: dict[str, tuple[str, ShowResult]] = {}  # trace id -> (value, trace)

    def compose(self) -> ComposeResult:
        keys: DataTable[str] = DataTable(id="keys", cursor_type="row")
        yield keys
        yield Static(id="key-title", classes="line")
        claims: DataTable[str] = DataTable(id="claims", cursor_type="row")
        yield claims
        yield Static(classes="note line")

    def on_mount(self) -> None:
        keys = self.query_one("#keys", DataTable)
        keys.add_column("claim key", width=40, key="key")
        keys.add_column("values", width=6, key="values")
        keys.add_column("traces", width=6, key="traces")
        claims = self.query_one("#claims", DataTable)
        claims.add_column("value", width=14, key="value")
        claims.add_column("source", width=16, key="source")
        claims.add_column("written", width=17, key="when")
        claims.add_column("content", key="content")

    async def load(self) -> None:
        groups = await self.browser.memory.conflicts()
        self.groups = {group.key: group for group in groups}
        table = self.query_one("#keys", DataTable)
        keep = selected_key(table)
        table.clear()
        for group in groups:
            traces = sum(len(value.ids) for value in group.values)
            table.add_row(format.cell(group.key, 40), len(group.values), traces, key=group.key)
        restore_cursor(table, keep)
        self.say(
            f"{len(groups)} open conflict{'' if len(groups) == 1 else 's'}"
            " · k on a claim keeps its value and supersedes the others"
            if groups
            else "no open conflicts"
        )
        await self._show_claims(selected_key(table))

    def action_reload(self) -> None:
        self.reload()

    @on(DataTable.RowHighlighted, "#keys")
    def key_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        in_worker(self, partial(self._show_claims, key), "claims")

    async def _show_claims(self, key: str | None) -> None:
        table = self.query_one("#claims", DataTable)
        title = self.query_one("#key-title", Static)
        group = self.groups.get(key) if key is not None else None
        if group is None:
            table.clear()
            title.update("")
            return
        ids = [(value.value, trace_id) for value in group.values for trace_id in value.ids]
        shown = await asyncio.gather(
            *(self.browser.memory.show(i) for _, i in ids), return_exceptions=True
        )
        self.claims = {
            i: (value, s)
            for (value, i), s in zip(ids, shown, strict=True)
            if isinstance(s, ShowResult)
        }
        title.update(f"[b]{format.markup(group.key)}[/]: {len(group.values)} values")
        keep = selected_key(table)
        table.clear()
        for trace_id, (value, entry) in self.claims.items():
            trace = entry.trace
            prov = trace.provenance
            table.add_row(
                format.cell(value, 14),
                format.cell(format.author(prov.source, prov.locator, prov.verified), 16),
                when(trace.created_at),
                format.cell(trace.content, room(self, table, 14, 16, 17)),
                key=trace_id,
            )
        restore_cursor(table, keep)

    @on(DataTable.RowSelected, "#claims")
    def open_claim(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.browser.open_trace(str(event.row_key.value))

    @on(DataTable.RowSelected, "#keys")
    def into_claims(self) -> None:
        self.query_one("#claims", DataTable).focus()

    def _claim(self) -> tuple[str, ShowResult] | None:
        key = selected_key(self.query_one("#claims", DataTable))
        return None if key is None else self.claims.get(key)

    def action_keep(self) -> None:
        claim = self._claim()
        if claim is None:
            self.say("pick a claim first (Enter on a key, then the claim that holds)")
            return
        value, kept = claim
        losers = [entry.trace for v, entry in self.claims.values() if v != value]
        self.browser.act_keep(kept.trace, value, losers)

    def action_correct(self) -> None:
        claim = self._claim()
        if claim is not None:
            self.browser.act_correct(claim[1].trace)
