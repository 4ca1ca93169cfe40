"""The modal questions a person answers before a write: each returns what was chosen,
or ``None`` when Escape was pressed. None of them writes anything itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from hikmah.model.trace import Trace
from hikmah.model.vocabulary import KINDS

from . import editor
from .format import markup, one_line
from .query import SOURCES, STATUSES, VERIFIED, Search


@dataclass(frozen=True)
class Correction:
    content: str
    claim_value: str | None
    verified: bool


T = TypeVar("T")


class _Dialog(ModalScreen[T | None], Generic[T]):
    """A box in the middle of the screen; Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def action_cancel(self) -> None:
        self.dismiss(None)


class Message(ModalScreen[None]):
    """Something the person must read (a refusal in the daemon's words, a result)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q,space", "dismiss_message", "Close"),
    ]

    def __init__(self, title: str, text: str, *, error: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog" + (" error" if self.error else "")):
            yield Label(f"[b]{markup(self.title_text)}[/]", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(markup(self.text))
            yield Label("[dim]Enter or Escape closes[/]", classes="dialog-keys")

    def action_dismiss_message(self) -> None:
        self.dismiss(None)


class Confirm(_Dialog[bool]):
    """A yes/no question, optionally with a "verified" box (promotion)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "cancel", "No"),
    ]

    def __init__(self, title: str, text: str, *, verified_box: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.verified_box = verified_box

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"[b]{markup(self.title_text)}[/]", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(markup(self.text))
            if self.verified_box:
                yield Checkbox("verified: I checked this myself", True, id="verified")
            yield Label("[b]y[/] yes · [b]n[/] or Escape no", classes="dialog-keys")

    def action_answer(self, yes: bool) -> None:
        if self.verified_box:
            self.dismiss(self.query_one("#verified", Checkbox).value)
        else:
            self.dismiss(yes)


class Correct(_Dialog[Correction]):
    """The corrected text (inline, or in $EDITOR with ctrl+e), a new claim value, verified."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+e", "edit", "Edit in $EDITOR", priority=True),
    ]

    def __init__(self, trace: Trace, *, content: str | None = None, verify: bool = True) -> None:
        super().__init__()
        self.trace = trace
        self.start = content if content is not None else trace.content
        self.verify = verify

    def compose(self) -> ComposeResult:
        trace = self.trace
        with Vertical(classes="dialog tall"):
            yield Label(
                f"[b]Correct {trace.id}[/] ({trace.kind}): the new trace supersedes it",
                classes="dialog-title",
            )
            yield TextArea(self.start, id="content", soft_wrap=True, show_line_numbers=False)
            if trace.claim_key is not None:
                with Horizontal(classes="row"):
                    yield Label(f"{markup(trace.claim_key)} =", classes="field-label")
                    yield Input(trace.claim_value or "", id="claim", compact=True)
            yield Checkbox("verified: I checked this myself", self.verify, id="verified")
            yield Label(
                "[b]ctrl+s[/] save · [b]ctrl+e[/] edit in $EDITOR · [b]Escape[/] cancel",
                classes="dialog-keys",
            )

    def action_save(self) -> None:
        content = self.query_one("#content", TextArea).text.strip()
        if not content:
            self.notify("A correction needs some text.", severity="warning")
            return
        claim = self.query("#claim")
        value = claim.first(Input).value if claim else None
        self.dismiss(Correction(content, value, self.query_one("#verified", Checkbox).value))

    def action_edit(self) -> None:
        area = self.query_one("#content", TextArea)
        edited = editor.edit(self.app, area.text)
        if edited is not None:
            area.text = edited
        area.focus()


class Purge(_Dialog[str]):
    """Why, and the word ``purge`` typed out: a purge cannot be undone."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "submit", "Purge", priority=True)]
    WORD = "purge"

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def compose(self) -> ComposeResult:
        trace = self.trace
        with Vertical(classes="dialog error"):
            yield Label(f"[b]Purge {trace.id}[/] ({trace.kind})", classes="dialog-title")
            yield Static(
                markup(one_line(trace.content)[:200])
                + "\n\nRetention deletion: the trace leaves recall, show, export and every"
                " index, and cannot be brought back. Its text stays in the ledger until"
                " hikmah compact."
            )
            yield Input(placeholder="reason (kept in the tombstone)", id="reason", compact=True)
            yield Input(placeholder=f"type {self.WORD} to confirm", id="word", compact=True)
            yield Label("[b]Enter[/] purge · [b]Escape[/] cancel", classes="dialog-keys")

    @on(Input.Submitted)
    def action_submit(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        word = self.query_one("#word", Input).value.strip().lower()
        if not reason:
            self.notify("Say why it is purged (the reason is kept).", severity="warning")
            self.query_one("#reason", Input).focus()
        elif word != self.WORD:
            self.notify(f"Type {self.WORD} to confirm.", severity="warning")
            self.query_one("#word", Input).focus()
        else:
            self.dismiss(reason)


class Reject(_Dialog[str]):
    """Why a held trace is rejected: the reason is kept in the rejection."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def compose(self) -> ComposeResult:
        trace = self.trace
        with Vertical(classes="dialog"):
            yield Label(f"[b]Reject {trace.id}[/] ({trace.kind})", classes="dialog-title")
            yield Static(
                markup(one_line(trace.content)[:200])
                + "\n\nA rejection supersedes it, and no agent ever reads it. The rejection"
                " keeps your reason and who wrote it, never its text."
            )
            yield Input(placeholder="reason (kept in the rejection)", id="reason", compact=True)
            yield Label("[b]Enter[/] reject · [b]Escape[/] cancel", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    @on(Input.Submitted)
    def submitted(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self.notify("Say why it is rejected (the reason is kept).", severity="warning")
            return
        self.dismiss(reason)


class EditAccept(_Dialog[str]):
    """A held trace's text as the person edits it (inline, or in $EDITOR with ctrl+e),
    accepted in its place on ctrl+s."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Accept", priority=True),
        Binding("ctrl+e", "edit", "Edit in $EDITOR", priority=True),
    ]

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def compose(self) -> ComposeResult:
        trace = self.trace
        with Vertical(classes="dialog tall"):
            yield Label(
                f"[b]Edit, then accept {trace.id}[/] ({trace.kind}): a verified copy in your"
                " words supersedes it",
                classes="dialog-title",
            )
            yield TextArea(trace.content, id="content", soft_wrap=True, show_line_numbers=False)
            yield Label(
                "[b]ctrl+s[/] accept · [b]ctrl+e[/] edit in $EDITOR · [b]Escape[/] cancel",
                classes="dialog-keys",
            )

    def on_mount(self) -> None:
        self.query_one("#content", TextArea).focus()

    def action_save(self) -> None:
        content = self.query_one("#content", TextArea).text.strip()
        if not content:
            self.notify("An accepted trace needs some text.", severity="warning")
            return
        self.dismiss(content)

    def action_edit(self) -> None:
        area = self.query_one("#content", TextArea)
        edited = editor.edit(self.app, area.text)
        if edited is not None:
            area.text = edited
        area.focus()


class Passphrase(_Dialog[str]):
    """The passphrase that proves a person is at this terminal: never shown, never kept
    (the caller sends it to the daemon and forgets it)."""

    def __init__(self, prompt: str, description: str, refused: str | None) -> None:
        super().__init__()
        self.prompt = prompt
        self.description = description
        self.refused = refused

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("[b]Person presence[/]", classes="dialog-title")
            if self.refused is not None:
                yield Static(f"[b]Sorry, try again.[/] {markup(self.refused)}", id="refused")
            yield Static(markup(self.description))
            with Horizontal(classes="row"):
                yield Label(markup(self.prompt), id="prompt", classes="field-label")
                yield Input(password=True, id="passphrase", compact=True)
            yield Label("[b]Enter[/] prove · [b]Escape[/] cancel", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#passphrase", Input).focus()

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.dismiss(self.query_one("#passphrase", Input).value)


class Travel(_Dialog[str]):
    """Where to look: a moment of the past, or now (empty)."""

    def __init__(self, current: int | str | None) -> None:
        super().__init__()
        self.current = "" if current is None else str(current)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("[b]Look at memory as it stood at…[/]", classes="dialog-title")
            yield Static(
                "A date (2026-11-30), a time in UTC (2026-11-30T14:00, or 14:00 today),"
                " -3d or -12h before now, or a ledger record's number. Empty: now.\n\n"
                "Every view then shows that moment: traces written later are absent,"
                " later corrections undone, and nothing can be written."
            )
            yield Input(value=self.current, placeholder="now", id="when", compact=True)
            yield Label("[b]Enter[/] go · [b]Escape[/] cancel", classes="dialog-keys")

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.dismiss(self.query_one("#when", Input).value)


@dataclass(frozen=True)
class InvalidateRequest:
    pattern: str
    tags: list[str]
    reason: str
    stale: bool


class Invalidate(_Dialog[InvalidateRequest]):
    """What to supersede in bulk; the matches are previewed before anything is written."""

    def __init__(self, pattern: str) -> None:
        super().__init__()
        self.pattern = pattern

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                "[b]Invalidate[/]: supersede every active trace containing a text",
                classes="dialog-title",
            )
            yield Input(self.pattern, placeholder="text the traces contain", id="pattern")
            yield Input(placeholder="tags they carry (space separated, optional)", id="tags")
            yield Input(placeholder="reason (kept in each correction)", id="reason")
            yield Checkbox("stale: keep them recallable, marked stale", False, id="stale")
            yield Label("[b]Enter[/] preview · [b]Escape[/] cancel", classes="dialog-keys")

    @on(Input.Submitted)
    def submit(self) -> None:
        pattern = self.query_one("#pattern", Input).value.strip()
        tags = self.query_one("#tags", Input).value.split()
        reason = self.query_one("#reason", Input).value.strip()
        if not (pattern or tags) or not reason:
            self.notify("Give a text (or tags) and a reason.", severity="warning")
            return
        stale = self.query_one("#stale", Checkbox).value
        self.dismiss(InvalidateRequest(pattern, tags, reason, stale))


class Filters(_Dialog[Search]):
    """The search's filters: kind, scope, status, source, verified."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "apply", "Apply", priority=True)]

    def __init__(self, search: Search) -> None:
        super().__init__()
        self.search = search

    def compose(self) -> ComposeResult:
        search = self.search
        kinds = [("any kind", "")] + [(kind, kind) for kind in KINDS]
        with Vertical(classes="dialog"):
            yield Label("[b]Filters[/]", classes="dialog-title")
            yield _row("kind", Select(kinds, value=search.kind or "", id="kind", compact=True,
                                      allow_blank=False))  # fmt: skip
            yield _row("status", _choice("status", STATUSES, search.status))
            yield _row("source", _choice("source", SOURCES, search.source))
            yield _row("verified", _choice("verified", VERIFIED, search.verified))
            yield _row("scope", Input(search.scope or "", placeholder="any (e.g. project:/src/app)",
                                      id="scope", compact=True))  # fmt: skip
            yield Label("[b]ctrl+s[/] or Enter apply · [b]Escape[/] cancel", classes="dialog-keys")

    @on(Input.Submitted)
    def action_apply(self) -> None:
        kind = str(self.query_one("#kind", Select).value) or None
        self.dismiss(
            self.search.replace(
                kind=kind,
                status=str(self.query_one("#status", Select).value),
                source=str(self.query_one("#source", Select).value),
                verified=str(self.query_one("#verified", Select).value),
                scope=self.query_one("#scope", Input).value.strip() or None,
            )
        )


def _choice(name: str, options: tuple[str, ...], value: str) -> Select[str]:
    return Select([(o, o) for o in options], value=value, id=name, compact=True, allow_blank=False)


def _row(label: str, widget: Select[str] | Input) -> Horizontal:
    return Horizontal(Label(label, classes="field-label"), widget, classes="row")
