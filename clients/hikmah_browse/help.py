"""The help screen: every key, by where it works."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """\
[b]Everywhere[/]
  1-7        Search · Conflicts · Commitments · Focus · Proposals · Ledger
             · Review
  ? or F1    this help              q  quit (ctrl+c too)
  t          as of…: look at memory as it stood then (a date, -3d, a record)
  Tab        next field or table    Enter  open what is under the cursor
  The mouse works too: click a tab, a row, a button. NO_COLOR is honoured.

[b]Search[/] (1)
  type       search as you type (words; #tag is a tag cue)
  ↓ Enter    from the query to the results      ↑ on the first row: back
  w          why: every term of the score       f  filters (kind, scope,
  c          correct the result                    status, source, verified)
  i          invalidate: supersede every trace containing a text (previewed)

[b]A trace[/] (Enter on any row)
  c          correct: a new trace supersedes it (verified, in your name)
  e          correct in $EDITOR                 v  confirm as verified
  d          fulfil (a commitment)              p  purge (type "purge")
  L          check the ledger's chain           r  reload    Escape  back
  On a row of its conflicts, c corrects that trace instead.

[b]Conflicts[/] (2)  k keeps the claim under the cursor (the others are superseded)
[b]Commitments[/] (3)  o overdue · s 24 h · w 7 days · a all · d fulfil
[b]Proposals[/] (5)  p promote (verified if you tick it)
[b]Ledger[/] (6)  r verify the chain again
[b]Review[/] (7)  what agents wrote that waits for you (no agent reads it yet):
  a accept (a verified copy)   r reject (say why)   e edit, then accept

Writes are a person's: in an agent session the browser only reads, and says so
at the top; as of the past it only reads too. Whatever hikmahd refuses is shown
in its own words.
"""


class Help(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "app.pop_screen", "Close")
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog tall"):
            yield Static(KEYS)
