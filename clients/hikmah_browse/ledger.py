"""Ledger health: whether the hash chain verifies, the head, and any tail of records
written behind the daemon's back (which stops every write until a person decides).

A check is of a moment: the records written after it are counted against the
acknowledged head read now, not shown as a second head beside the verified one."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from hikmah.model.display import counted
from hikmah.model.head import Head
from hikmah.model.wire.ledger import VerifyResult
from hikmah_client.text import when

from . import format
from .base import View, in_worker, room


class LedgerView(View):
    """``ledger.verify``'s report. Checking walks the whole chain (about half a second per
    100k records, during which the daemon answers no one), so it runs when asked for."""

    title = "Ledger"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "verify", "Verify again")]
    can_focus = True  # its keys work with no tail to focus

    def compose(self) -> ComposeResult:
        yield Static(id="report")
        yield Static(id="tail-title", classes="section")
        tail: DataTable[object] = DataTable(id="tail", cursor_type="row")
        yield tail
        yield Static(classes="note line")

    def on_mount(self) -> None:
        tail = self.query_one("#tail", DataTable)
        for label, width in (("seq", 8), ("event", 9), ("trace", 25)):
            tail.add_column(label, width=width, key=label)
        tail.add_column("what", key="what")

    async def load(self) -> None:
        await self._show(fresh=False)

    def action_verify(self) -> None:
        in_worker(self, partial(self._show, fresh=True), "verify")

    async def _show(self, *, fresh: bool) -> None:
        self.say("checking the chain…")
        report = await self.browser.ledger_report(fresh=fresh)
        await self.browser.refresh_status()  # the head now, after the check
        status = self.browser.status
        assert report is not None
        verdict = "[b]verifies ✓[/]" if report.ok else "[b]DOES NOT VERIFY[/]"
        lines = [f"The chain {verdict}: {counted(report.records, 'record')} read."]
        if report.head is not None:
            lines += [f"Verified through record {report.head.seq}, hash", f"  {report.head.hash}"]
        lines += _head_now(report, status.head if status is not None else None)
        lines += [f"[b]error[/] {format.markup(error)}" for error in report.errors]
        lines += [f"warning {format.markup(warning)}" for warning in report.warnings]
        if report.unacknowledged:
            lines.append(
                "Writes are refused until a person inspects the records below and runs"
                " hikmah verify-ledger --accept-tail (or --reset-head)."
            )
        self.query_one("#report", Static).update("\n".join(lines))
        tail = self.query_one("#tail", DataTable)
        tail.clear()
        tail.display = bool(report.unacknowledged)
        if not tail.display and (tail.has_focus or self.browser.focused is None):
            self.focus()  # the focus a hidden tail would lose, and with it r
        self.query_one("#tail-title", Static).update(
            "[b]Unacknowledged records[/] (past the head)"
            if report.unacknowledged
            else "No unacknowledged record: every record was written by this store."
        )
        for record in report.unacknowledged:
            source = record.source and format.author(record.source, record.locator, False)
            what = " ".join(
                part for part in (record.kind, source, record.claim, record.preview) if part
            )
            tail.add_row(
                record.seq,
                record.event,
                record.trace_id or "",
                format.cell(what, room(self, tail, 8, 9, 25)),
                key=str(record.seq),
            )
        checked = self.browser.ledger_checked_at
        at = when(checked) if checked is not None else "never"
        self.say(f"checked {at} · r checks again (the daemon pauses meanwhile)")


def _head_now(report: VerifyResult, now: Head | None) -> list[str]:
    """The acknowledged head read now, said against the check: a chain that verified ended
    at the acknowledged head then, so a later head is records written since."""
    if now is None:
        return ["Acknowledged head: none (an empty ledger, or its head is unreadable)."]
    if now == report.head:
        return [f"Acknowledged head {now.seq}: the same record."]
    checked_through = 0 if report.head is None else report.head.seq
    if report.ok and now.seq > checked_through:
        written = counted(now.seq - checked_through, "record")
        return [
            f"Acknowledged head now {now.seq}: {written} written since the check,"
            " not verified yet (r verifies them)."
        ]
    return [f"Acknowledged head {now.seq}, hash", f"  {now.hash}"]
