"""The browser: its views, its connection to the daemon, live events, and a person's
actions (each asks first, then writes through :class:`~hikmah_browse.api.Memory`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, DataTable, Footer, Static

from hikmah.model.display import counted
from hikmah.model.trace import Trace
from hikmah.model.wire.ledger import VerifyResult
from hikmah.model.wire.review import ReviewDecisionResult, ReviewItem
from hikmah.model.wire.service import DaemonStatusResult, Waiting
from hikmah_client.text import awaiting, when

from . import dialogs, editor, format
from .api import Memory, NotProven, ReadOnly
from .base import View, in_worker
from .conflicts import ConflictsView
from .focus import FocusView
from .format import Clock, one_line, wall_ms
from .help import Help
from .ledger import LedgerView
from .masthead import Masthead
from .promises import PromisesView
from .proposals import ProposalsView
from .review import ReviewView, why_held
from .rpc import Dialer, RemoteError, Unavailable
from .search import SearchView
from .trace import TracePage
from .wire import Proposal, ReminderDue, decode

VIEWS = ("search", "conflicts", "commitments", "focus", "proposals", "ledger", "review")
LIVE_DELAY_S = 0.25  # events are gathered this long, then each view reloads once
RECONNECT_S = 2.0


class BrowseApp(App[int]):
    """``hikmah browse``: a keyboard-first inspector of one person's memory."""

    CSS_PATH = "browse.tcss"
    TITLE = "hikmah browse"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(str(n), f"show('{name}')", name.capitalize(), show=False)
            for n, name in enumerate(VIEWS, 1)
        ),
        Binding("t", "travel", "As of…"),
        Binding("question_mark,f1", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    masthead = reactive("connecting…", layout=False)

    def __init__(
        self, dialer: Dialer, *, query: str = "", clock: Clock = wall_ms, source: str | None = None
    ) -> None:
        super().__init__()
        self.dialer = dialer
        self.clock = clock
        self.query_text = query
        self.memory = Memory(None, source, ask=self._ask_passphrase)
        self.status: DaemonStatusResult | None = None
        self.recall_limit: int | None = None
        self.live = False
        self._ledger: VerifyResult | None = None
        self.ledger_checked_at: int | None = None
        self._changed: set[str] = set()
        self._reminders: list[ReminderDue] = []
        self._flush_pending = False
        self.waiting = 0  # held traces that wait for the person's review

    def compose(self) -> ComposeResult:
        yield Masthead()
        yield Static(id="tabs", classes="tabs")
        with ContentSwitcher(initial="search", id="views"):
            yield SearchView(self.query_text, id="search")
            yield ConflictsView(id="conflicts")
            yield PromisesView(id="commitments")
            yield FocusView(id="focus")
            yield ProposalsView(id="proposals")
            yield LedgerView(id="ledger")
            yield ReviewView(id="review")
        yield Footer(compact=True)

    # --- the connection ----------------------------------------------------------------

    def on_mount(self) -> None:
        self._tabs()
        self.connect()

    @work(exclusive=True, group="connect")
    async def connect(self) -> None:
        """Connect (again), subscribe to events, learn who we are, show the current view."""
        while True:
            try:
                connection = await self.dialer.dial(self._notified, self._lost)
                break
            except Unavailable as exc:
                self.masthead = f"[b]offline[/]: {format.markup(str(exc))} · retrying"
                await asyncio.sleep(RECONNECT_S)
        self.memory.connection = connection
        try:
            await self.memory.subscribe()
            self.live = True
            self.recall_limit = await self.memory.recall_limit()
            await self.refresh_status()
        except Unavailable as exc:
            # Gone or silent while setting up (a loss reconnects through ``_lost``).
            self.masthead = f"[b]offline[/]: {format.markup(str(exc))}"
            return
        except RemoteError as exc:
            self.masthead = f"[b]{format.markup(str(exc))}[/]"
            return
        for view in self._views():
            view.stale = True
        self._current().reload()
        self.query_one("#query").focus()

    async def on_unmount(self) -> None:
        if self.memory.connection is not None:
            await self.memory.connection.aclose()

    def _lost(self) -> None:
        self.live = False
        self.masthead = "[b]offline[/]: the daemon closed the connection · reconnecting"
        self.connect()

    async def refresh_status(self) -> None:
        """``daemon.status`` read again: the masthead's counts, the head, the review inbox."""
        self.status = await self.memory.status()
        self.waiting = self.status.review.waiting
        self.masthead = self._masthead_text()

    def now(self) -> int:
        """The time the views are of: the moment travelled to, or the clock's."""
        point = self.memory.point
        return self.clock() if point is None else point.at

    def _masthead_text(self) -> str:
        status, memory = self.status, self.memory
        if status is None:
            return "connecting…"
        who = (
            f"[reverse b] READ-ONLY [/] agent session {format.markup(memory.principal.host)}"
            if memory.principal is not None
            else format.markup(memory.source)
        )
        counts = status.counts
        parts = [
            "[b]hikmah[/]",
            "● live" if self.live else "○ not live",
            *([f"[b]{awaiting(self.waiting)}[/]"] if self.waiting else []),
            who,
            f"{counts.get('active', 0):,} active",
            f"{status.reminders.overdue} overdue",
            f"head {status.head.seq}" if status.head else "empty ledger",
        ]
        point = memory.point
        if point is not None:  # the past first; the counts are the present's, so not shown
            now = f"now: head {status.head.seq}" if status.head else "now: empty"
            parts = [
                parts[0],
                f"[reverse b] AS OF record {point.seq} · {when(point.at)} [/]",
                who,
                now,
            ]
        return " · ".join(parts)

    async def ledger_report(self, *, fresh: bool = False) -> VerifyResult | None:
        """The last ``ledger.verify`` report, checked now if ``fresh`` or never checked."""
        if fresh or self._ledger is None:
            self._ledger = await self.memory.verify()
            self.ledger_checked_at = self.clock()
        return self._ledger

    # --- live events ---------------------------------------------------------------------

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "memory.changed":
            self._changed.add(str(params.get("id")))
        elif method == "reminder.due":
            with contextlib.suppress(ValueError):
                self._reminders.append(decode(params, ReminderDue))
        elif method == "replay.proposals":
            count = len(params.get("proposals", []))
            self.notify(f"{count} new consolidation proposal(s): see 5 Proposals")
            with contextlib.suppress(NoMatches):  # the app is closing
                self.query_one("#proposals", View).stale = True
        elif method == "review.waiting":
            with contextlib.suppress(ValueError):
                self.waiting = decode(params, Waiting).waiting
                if self.status is not None:
                    self.masthead = self._masthead_text()
        else:
            return
        if not self._flush_pending:
            self._flush_pending = True
            self.set_timer(LIVE_DELAY_S, self._apply_events)

    def _remind(self, reminders: list[ReminderDue]) -> None:
        """One toast for one reminder, one for a burst (those replayed on subscribing)."""
        if len(reminders) == 1:
            due = reminders[0]
            label = "OVERDUE" if due.stage == "overdue" else "due soon"
            self.notify(
                format.markup(one_line(due.trace.content)), title=f"Reminder: {label}", timeout=10
            )
        elif reminders:
            overdue = sum(due.stage == "overdue" for due in reminders)
            self.notify(
                f"{counted(len(reminders), 'reminder')} ({overdue} overdue): see 3 Commitments",
                title="Reminders",
                timeout=10,
            )

    def _apply_events(self) -> None:
        """Reload what the gathered events may have changed, each view once."""
        self._flush_pending = False
        try:
            views, current = list(self._views()), self._current()
        except NoMatches:
            return  # the app is closing: its views are gone (the events came meanwhile)
        changed, self._changed = self._changed, set()
        reminders, self._reminders = self._reminders, []
        self._remind(reminders)
        for view in views:
            view.stale = True
        current.reload()
        screen = self.screen
        if isinstance(screen, TracePage) and changed & screen.related:
            screen.action_reload()
        in_worker(self, self.refresh_status, "status")

    # --- navigation ----------------------------------------------------------------------

    def _views(self) -> Iterable[View]:
        return self.query_one("#views", ContentSwitcher).query(View)

    def _current(self) -> View:
        switcher = self.query_one("#views", ContentSwitcher)
        return switcher.query_one(f"#{switcher.current}", View)

    def _tabs(self) -> None:
        current = self.query_one("#views", ContentSwitcher).current
        labels = []
        for number, name in enumerate(VIEWS, 1):
            text = f" {number} {name.capitalize()} "
            link = f"[@click=app.show('{name}')]{text}[/]"
            labels.append(f"[reverse b]{text}[/]" if name == current else link)
        hint = "  ? help"  # when it fits: the footer shows "? Help" too
        width = sum(len(f" {n} {name} ") for n, name in enumerate(VIEWS, 1)) + len(hint)
        fits = self.size.width >= width
        self.query_one("#tabs", Static).update(
            "".join(labels) + (f"[dim]{hint}[/]" if fits else "")
        )

    def action_show(self, name: str) -> None:
        while isinstance(self.screen, TracePage):
            self.pop_screen()
        switcher = self.query_one("#views", ContentSwitcher)
        switcher.current = name
        self._tabs()
        view = self._current()
        if view.stale and self.memory.connected:
            view.reload()
        # Focus inside the view in sight: focus left in a hidden view would take keys
        # (a hidden conflicts table would take "k" typed into the search).
        tables = view.query(DataTable)
        if tables and (name != "search" or tables.first().row_count):
            tables.first().focus()
        elif name == "search":
            view.query_one("#query").focus()  # nothing to act on yet: type a search
        else:
            view.focus()

    def action_help(self) -> None:
        self.push_screen(Help())

    def action_travel(self) -> None:
        self._travel()

    @work(group="travel", exclusive=True)
    async def _travel(self) -> None:
        """Look at memory as of a moment the person names, or now again."""
        answer = await self.push_screen_wait(dialogs.Travel(self.memory.as_of))
        if answer is None:
            return
        try:
            point = await self.memory.travel(answer)
        except (RemoteError, Unavailable) as exc:
            await self.push_screen_wait(dialogs.Message("Not a moment", str(exc), error=True))
            return
        self.masthead = self._masthead_text()
        self.notify("Now" if point is None else f"As of record {point.seq}, {when(point.at)}")
        for view in self._views():
            view.stale = True
        self._current().reload()
        if isinstance(self.screen, TracePage):
            self.screen.action_reload()

    def open_trace(self, trace_id: str) -> None:
        self.push_screen(TracePage(trace_id))

    # --- a person's actions ----------------------------------------------------------------

    def _writes(self) -> bool:
        """Whether writes may be offered; if not, says why."""
        reason = self.memory.read_only
        if not self.memory.connected:
            reason = "not connected to the daemon"
        if reason is not None:
            self.push_screen(dialogs.Message("Read-only", reason, error=True))
            return False
        return True

    async def _ask_passphrase(self, prompt: str, description: str, refused: str | None) -> str:
        """The passphrase, in a dialog (writes run in workers, which may wait for one)."""
        answer = await self.push_screen_wait(dialogs.Passphrase(prompt, description, refused))
        return answer or ""

    async def _attempt(self, what: str, write: Callable[[], Awaitable[Any]]) -> Any:
        """Run one write; a refusal is shown in the daemon's own words."""
        try:
            return await write()
        except RemoteError as exc:
            reason = f" ({exc.reason})" if exc.reason else ""
            await self.push_screen_wait(
                dialogs.Message(f"hikmahd refused: {what}{reason}", str(exc), error=True)
            )
        except (ReadOnly, NotProven, Unavailable) as exc:
            await self.push_screen_wait(
                dialogs.Message(f"Not written: {what}", str(exc), error=True)
            )
        return None

    def act_correct(self, trace: Trace, *, in_editor: bool = False) -> None:
        if self._writes():
            self._correct(trace, in_editor)

    @work(group="write")
    async def _correct(self, trace: Trace, in_editor: bool) -> None:
        memory = self.memory
        content = editor.edit(self, trace.content) if in_editor else None
        if in_editor:
            await self._resubscribe()
            if content is None:
                return
        answer = await self.push_screen_wait(dialogs.Correct(trace, content=content))
        if answer is None:
            return
        written = await self._attempt(
            f"correct {trace.id}",
            lambda: memory.correct(
                trace, answer.content, answer.claim_value, verified=answer.verified
            ),
        )
        if written is not None:
            self._written(f"Corrected: {written.trace.id} supersedes {trace.id}", written.conflicts)
            self.open_trace(written.trace.id)

    async def _resubscribe(self) -> None:
        """After the editor held the terminal (and the loop), events may have been
        dropped by the daemon: subscribe again (a live subscription is kept)."""
        with contextlib.suppress(RemoteError, Unavailable):
            await self.memory.subscribe()

    def _written(self, message: str, conflicts: list[str]) -> None:
        extra = f"; it conflicts with {', '.join(conflicts)}" if conflicts else ""
        self.notify(
            format.markup(message + extra), severity="warning" if conflicts else "information"
        )

    def act_confirm(self, trace: Trace) -> None:
        if self._writes():
            self._confirm(trace)

    @work(group="write")
    async def _confirm(self, trace: Trace) -> None:
        memory = self.memory
        question = dialogs.Confirm(
            f"Confirm {trace.id} as verified?",
            f"{one_line(trace.content)}\n\nA trace is never edited: a verified copy written"
            f" by {memory.source} supersedes it.",
        )
        if not await self.push_screen_wait(question):
            return
        written = await self._attempt(f"confirm {trace.id}", lambda: memory.confirm(trace))
        if written is not None:
            self._written(f"Confirmed: {written.trace.id} (verified) supersedes {trace.id}", [])
            self.open_trace(written.trace.id)

    def act_fulfil(self, trace: Trace) -> None:
        if self._writes():
            self._fulfil(trace)

    @work(group="write")
    async def _fulfil(self, trace: Trace) -> None:
        memory = self.memory
        question = dialogs.Confirm(f"Mark {trace.id} done?", one_line(trace.content))
        if not await self.push_screen_wait(question):
            return
        if await self._attempt(f"fulfil {trace.id}", lambda: memory.fulfill(trace.id)) is not None:
            self.notify(f"Fulfilled {trace.id}")

    def act_purge(self, trace: Trace) -> None:
        if self._writes():
            self._purge(trace)

    @work(group="write")
    async def _purge(self, trace: Trace) -> None:
        memory = self.memory
        reason = await self.push_screen_wait(dialogs.Purge(trace))
        if reason is None:
            return
        purged = await self._attempt(f"purge {trace.id}", lambda: memory.purge(trace.id, reason))
        if purged is not None:
            while isinstance(self.screen, TracePage):
                self.pop_screen()
            await self.push_screen_wait(dialogs.Message(f"Purged {trace.id}", purged.note))

    def act_invalidate(self, pattern: str) -> None:
        if self._writes():
            self._invalidate(pattern)

    @work(group="write")
    async def _invalidate(self, pattern: str) -> None:
        memory = self.memory
        asked = await self.push_screen_wait(dialogs.Invalidate(pattern))
        if asked is None:
            return

        def run(dry_run: bool) -> Callable[[], Awaitable[Any]]:
            return lambda: memory.invalidate(
                asked.pattern, asked.reason, tags=asked.tags, stale=asked.stale, dry_run=dry_run
            )

        preview = await self._attempt("invalidate (preview)", run(True))
        if preview is None:
            return
        if not preview.matched:
            await self.push_screen_wait(dialogs.Message("Invalidate", "Nothing matches."))
            return
        lines = [f"{t.id} {t.kind}: {one_line(t.content)[:60]}" for t in preview.matched]
        lines += [f"refused {r.id}: {r.reason}" for r in preview.refused]
        question = dialogs.Confirm(
            f"Supersede these {len(preview.matched)} traces?", "\n".join(lines)
        )
        if not await self.push_screen_wait(question):
            return
        done = await self._attempt("invalidate", run(False))
        if done is not None:
            written = "\n".join(f"{w.id} superseded by {w.correction}" for w in done.written)
            refused = "\n".join(f"refused {r.id}: {r.reason}" for r in done.refused)
            text = "\n".join(part for part in (written, refused) if part)
            await self.push_screen_wait(dialogs.Message("Invalidated", text or "Nothing written."))

    def act_promote(self, proposal: Proposal, claim: str) -> None:
        if self._writes():
            self._promote(proposal, claim)

    @work(group="write")
    async def _promote(self, proposal: Proposal, claim: str) -> None:
        memory = self.memory
        question = dialogs.Confirm(
            f"Promote {proposal.id}?",
            f"{claim}\n\nWrites this belief; its provenance lists the"
            f" {len(proposal.evidence)} traces it rests on.",
            verified_box=True,
        )
        verified = await self.push_screen_wait(question)
        if verified is None:
            return
        written = await self._attempt(
            f"promote {proposal.id}", lambda: memory.promote(proposal.id, verified=verified)
        )
        if written is not None:
            self._written(f"Promoted {proposal.id}: {written.trace.id}", written.conflicts)

    def act_keep(self, kept: Trace, value: str, losers: list[Trace]) -> None:
        if self._writes():
            self._keep(kept, value, losers)

    @work(group="write")
    async def _keep(self, kept: Trace, value: str, losers: list[Trace]) -> None:
        """Resolve a conflict: each trace claiming another value is superseded by a
        verified correction claiming the kept one, in the kept trace's words."""
        memory = self.memory
        lines = [
            f"{t.id}: {format.one_line(t.claim_value or '')}"
            f" ({format.author(t.provenance.source, t.provenance.locator, t.provenance.verified)})"
            for t in losers
        ]
        question = dialogs.Confirm(
            f"Keep {kept.claim_key} = {value}?",
            "Each of these is superseded by a verified correction claiming"
            f" {value}:\n" + "\n".join(lines),
        )
        if not await self.push_screen_wait(question):
            return
        done = 0
        for loser in losers:

            async def supersede(loser: Trace = loser) -> Any:
                return await memory.correct(loser, kept.content, value, verified=True)

            if await self._attempt(f"correct {loser.id}", supersede) is None:
                break
            done += 1
        self.notify(f"Kept {kept.claim_key} = {value}: {done} of {len(losers)} superseded")

    def act_accept(self, item: ReviewItem, *, edit: bool = False) -> None:
        if self._writes():
            self._accept(item, edit)

    @work(group="write")
    async def _accept(self, item: ReviewItem, edit: bool) -> None:
        """Accept a held trace, as written (asked first) or as the person edits it."""
        memory, trace = self.memory, item.trace
        content: str | None = None
        if edit:
            content = await self.push_screen_wait(dialogs.EditAccept(trace))
            if content is None:
                return
            if content == trace.content.strip():
                content = None  # unchanged: accepted as written
        else:
            held = "\n".join(why_held(item))
            question = dialogs.Confirm(
                f"Accept {trace.id}?",
                f"{one_line(trace.content)}\n\n{held}\n\nA verified copy"
                f" written by {memory.source} supersedes it; agents read it from then on.",
            )
            if not await self.push_screen_wait(question):
                return
        decided = await self._attempt(
            f"accept {trace.id}", lambda: memory.accept(trace.id, content)
        )
        if decided is not None:
            await self._reviewed("Accepted", decided)

    def act_reject(self, item: ReviewItem) -> None:
        if self._writes():
            self._reject(item)

    @work(group="write")
    async def _reject(self, item: ReviewItem) -> None:
        memory, trace = self.memory, item.trace
        reason = await self.push_screen_wait(dialogs.Reject(trace))
        if reason is None:
            return
        decided = await self._attempt(f"reject {trace.id}", lambda: memory.reject(trace.id, reason))
        if decided is not None:
            await self._reviewed("Rejected", decided)

    async def _reviewed(self, verb: str, result: ReviewDecisionResult) -> None:
        """Say what was decided (or refused, in the daemon's words), and list the inbox
        again from its first row."""
        for done in result.decided:
            self.notify(format.markup(f"{verb} {done.id}: superseded by {done.by}"))
        if result.refused:
            text = "\n".join(f"{r.id}: {r.reason}" for r in result.refused)
            await self.push_screen_wait(dialogs.Message(f"Not {verb.lower()}", text, error=True))
        with contextlib.suppress(NoMatches):  # the app is closing
            self.query_one("#review", ReviewView).reload_from_top()


def run(dialer: Dialer, query: str = "") -> int:
    """Run the browser full screen until the person quits; its exit code (1 if it
    failed, with the traceback on stderr)."""
    app = BrowseApp(dialer, query=query)
    app.run()
    return app.return_code or 0
