"""A trace's page: every field, its provenance, its correction chain, the open
conflicts on its claim and every value the claim was given, its own ledger record,
and whether the ledger's chain verifies."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from hikmah.model.display import visible
from hikmah.model.trace import normalize_claim_key
from hikmah.model.wire.ledger import VerifyResult
from hikmah.model.wire.memory import ShowResult, StoredTrace
from hikmah_client.text import when

from . import format
from .base import browser_of, in_worker, room, selected_key
from .masthead import Masthead
from .rpc import RemoteError, Unavailable
from .wire import Trace

if TYPE_CHECKING:
    from .app import BrowseApp


class TracePage(Screen[None]):
    """One trace. Enter on a row of its history or of a rival claim opens that trace."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("c", "correct", "Correct"),
        Binding("e", "edit", "Correct in $EDITOR"),
        Binding("v", "confirm", "Confirm verified"),
        Binding("d", "fulfil", "Fulfil"),
        Binding("p", "purge", "Purge"),
        Binding("r", "reload", "Reload"),
        Binding("L", "verify", "Verify chain"),
    ]

    def __init__(self, trace_id: str) -> None:
        super().__init__()
        self.trace_id = trace_id
        self.shown: ShowResult | None = None
        self.related: set[str] = {trace_id}
        self.rivals: dict[str, StoredTrace] = {}

    @property
    def browser(self) -> BrowseApp:
        return browser_of(self)

    def compose(self) -> ComposeResult:
        yield Masthead()
        with VerticalScroll(id="page"):
            yield Static(id="title", classes="title")
            yield Static(id="content", classes="content")
            yield Static(id="fields")
            yield Static("[b]Corrections[/] (oldest first; → this trace)", classes="section")
            history: DataTable[object] = DataTable(id="history", cursor_type="row")
            yield history
            yield Static("[b]Conflicts on its claim[/]", classes="section")
            yield Static(id="conflict-note")
            rivals: DataTable[object] = DataTable(id="rivals", cursor_type="row")
            yield rivals
            yield Static(
                "[b]Its claim's values over time[/] (oldest first)",
                classes="section",
                id="claim-title",
            )
            yield Static(id="claim-note")
            values: DataTable[object] = DataTable(id="values", cursor_type="row")
            yield values
            yield Static("[b]Ledger[/]", classes="section")
            yield Static(id="ledger")
        yield Static(classes="note line")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        for table_id in ("#history", "#rivals"):
            table = self.query_one(table_id, DataTable)
            table.add_column("", width=1, key="mark")
            table.add_column("value" if table_id == "#rivals" else "status", width=12, key="a")
            table.add_column("source", width=16, key="source")
            table.add_column("when", width=17, key="when")
            table.add_column("content", key="content")
        values = self.query_one("#values", DataTable)
        for label, width in (("", 1), ("value", 12), ("set by", 16), ("from", 17), ("until", 17)):
            values.add_column(label, width=width, key=label or "mark")
        in_worker(self, self._load, "trace")

    def action_reload(self) -> None:
        # A page just pushed has no widgets to fill until it is mounted, and its mount
        # loads it: a change the daemon announces meanwhile is in that load.
        if self.is_mounted:
            in_worker(self, self._load, "trace")

    def say(self, markup: str) -> None:
        self.query_one(".note", Static).update(markup)

    async def _load(self) -> None:
        memory = self.browser.memory
        try:
            shown = await memory.show(self.trace_id)
        except (RemoteError, Unavailable) as exc:
            self.query_one("#title", Static).update(f"[b]{format.markup(self.trace_id)}[/]")
            self.say(f"[b]{format.markup(str(exc))}[/]")
            return
        self.shown = shown
        self.related = {self.trace_id, *(entry.trace.id for entry in shown.history)}
        self._show_trace(shown)
        await self._show_conflicts(shown.trace)
        await self._show_values(shown.trace)
        self._show_ledger(await self.browser.ledger_report())
        self.say("")

    def _show_trace(self, shown: ShowResult) -> None:
        trace, now = shown.trace, self.browser.now()
        verified = "verified ✓" if trace.provenance.verified else "unverified"
        status = shown.status + (f" by {shown.superseded_by}" if shown.superseded_by else "")
        flag = format.held(shown.held)
        held = f" · [reverse b] {flag} [/]" if flag else ""
        self.query_one("#title", Static).update(
            f"[b]{trace.id}[/] · {trace.kind} · {status} · {verified}{held}"
        )
        purged = shown.purged
        self.query_one("#content", Static).update(
            format.markup(visible(trace.content))
            if purged is None
            else f"[b]purged {when(purged.at)}[/] (record {purged.seq}): its text is gone"
        )
        prov = trace.provenance
        rows = [
            ("scope", f"{trace.scope} · tags {', '.join(trace.tags) or 'none'}"),
            ("created", f"{when(trace.created_at)} ({format.ago(trace.created_at, now)})"),
        ]
        if trace.deadline is not None:
            rows.append(("deadline", f"{when(trace.deadline)} ({format.ago(trace.deadline, now)})"))
        if trace.claim_key is not None:
            rows.append(("claim", f"{trace.claim_key} = {trace.claim_value}"))
        links = [
            f"{name} {target}"
            for name, target in (("supersedes", trace.supersedes), ("fulfills", trace.fulfills))
            if target
        ]
        if links:
            rows.append(("links", " · ".join(links)))
        if trace.kind == "prediction":
            forecast = f"{trace.family}: p={trace.probability} ({trace.prediction_type})"
            rows.append(("forecast", forecast))
        rows += [
            (
                "weights",
                f"salience {trace.salience:.2f} · confidence {trace.confidence:.2f}"
                f" · privacy {trace.privacy}",
            ),
            ("source", f"{format.provenance(trace)} · authority {prov.authority:.2f}"),
            ("locator", f"{prov.locator or 'none'} · observed {when(prov.observed_at)}"),
        ]
        if prov.evidence:
            rows.append(("evidence", ", ".join(prov.evidence)))
        if flag:
            rows.append(("review", f"{flag}: no agent reads it until you decide (7 Review)"))
        self.query_one("#fields", Static).update(_pairs(rows))
        table = self.query_one("#history", DataTable)
        table.clear()
        for entry in shown.history:
            status = "purged" if entry.purged is not None else entry.status
            self._row(table, entry.trace, "→" if entry.trace.id == trace.id else " ", status)

    def _row(self, table: DataTable[object], trace: Trace, mark: str, first: str) -> None:
        width = room(self, table, 1, 12, 16, 17, inset=2)  # the page's padding
        prov = trace.provenance
        table.add_row(
            mark,
            format.cell(first, 12),
            format.cell(format.author(prov.source, prov.locator, prov.verified), 16),
            when(trace.created_at),
            format.cell(trace.content, width),
            key=trace.id,
        )

    async def _show_conflicts(self, trace: Trace) -> None:
        note = self.query_one("#conflict-note", Static)
        table = self.query_one("#rivals", DataTable)
        table.clear()
        table.display = False
        if trace.claim_key is None:
            note.update("no claim: it cannot conflict")
            return
        key = normalize_claim_key(trace.claim_key)
        group = next(iter(await self.browser.memory.conflicts(trace.claim_key)), None)
        if group is None:
            note.update(f"none open on {format.markup(key)}")
            return
        note.update(f"[b]![/] {format.markup(key)}: {len(group.values)} values among active traces")
        ids = [trace_id for value in group.values for trace_id in value.ids]
        shown = await asyncio.gather(
            *(self.browser.memory.show(i) for i in ids), return_exceptions=True
        )
        others = {i: s for i, s in zip(ids, shown, strict=True) if isinstance(s, ShowResult)}
        self.rivals = dict(others)
        self.related |= set(others)
        for value in group.values:
            for trace_id in value.ids:
                entry = others.get(trace_id)
                if entry is not None:
                    mark = "→" if trace_id == trace.id else " "
                    self._row(table, entry.trace, mark, value.value)
        table.display = True

    async def _show_values(self, trace: Trace) -> None:
        """Every value its claim key was given: who set each, from when, until when."""
        note = self.query_one("#claim-note", Static)
        table = self.query_one("#values", DataTable)
        table.clear()
        table.display = False
        for part in (note, self.query_one("#claim-title", Static)):
            part.display = trace.claim_key is not None
        if trace.claim_key is None:
            return
        values = await self.browser.memory.history(trace.claim_key)
        note.update(
            f"{len(values)} value(s) of {format.markup(normalize_claim_key(trace.claim_key))}"
        )
        for value in values:
            still = "now" if self.browser.memory.point is None else "then still"
            until = still if value.ended is None else when(value.ended.at)
            by = format.author(value.source, value.locator, value.verified)
            mark = "→" if value.id == trace.id else " "
            self.related.add(value.id)
            table.add_row(
                mark,
                format.cell(value.value, 12),
                format.cell(by, 16),
                when(value.written.at),
                until,
                key=value.id,
            )
        table.display = bool(values)

    def _show_ledger(self, report: VerifyResult | None) -> None:
        status = self.browser.status
        head = status.head if status else None
        lines = []
        record = self.shown.record if self.shown is not None else None
        if record is not None:
            digest = "not in the ledger" if record.hash is None else f"{record.hash[:32]}…"
            lines.append(f"written by record {record.seq} · {when(record.at)} · {digest}")
        if report is None:
            lines.append("chain not checked yet: L checks it")
        else:
            verdict = (
                "verifies ✓" if report.ok else f"DOES NOT VERIFY ({len(report.errors)} errors)"
            )
            lines.append(f"chain {verdict}: {report.records:,} records")
        if head is not None:
            lines.append(f"acknowledged head {head.seq}:{head.hash[:16]}…")
        self.query_one("#ledger", Static).update("\n".join(lines))

    @on(DataTable.RowSelected)
    def open_row(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None and key != self.trace_id:
            self.browser.open_trace(str(key))

    def _target(self) -> Trace | None:
        """The trace an action is for: a rival claim under the cursor, else this one."""
        rivals = self.query_one("#rivals", DataTable)
        if rivals.has_focus:
            key = selected_key(rivals)
            if key is not None and key in self.rivals:
                return self.rivals[key].trace
        return None if self.shown is None else self.shown.trace

    def action_correct(self) -> None:
        if (trace := self._target()) is not None:
            self.browser.act_correct(trace)

    def action_edit(self) -> None:
        if (trace := self._target()) is not None:
            self.browser.act_correct(trace, in_editor=True)

    def action_confirm(self) -> None:
        if (trace := self._target()) is not None:
            self.browser.act_confirm(trace)

    def action_fulfil(self) -> None:
        if (trace := self._target()) is not None:
            self.browser.act_fulfil(trace)

    def action_purge(self) -> None:
        if (trace := self._target()) is not None:
            self.browser.act_purge(trace)

    def action_verify(self) -> None:
        async def verify() -> None:
            self.say("checking the ledger's chain…")
            self._show_ledger(await self.browser.ledger_report(fresh=True))
            self.say("")

        in_worker(self, verify, "verify")


def _pairs(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"[b]{name:<9}[/] {format.markup(visible(value))}" for name, value in rows)
