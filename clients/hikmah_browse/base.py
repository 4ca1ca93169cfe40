"""What every view shares: a way to reach the app, a load that never hangs the screen,
and a status line that says what went wrong in the daemon's words."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist
from textual.worker import WorkType

from . import format
from .rpc import RemoteError, Unavailable

if TYPE_CHECKING:
    from .app import BrowseApp


def browser_of(node: DOMNode) -> BrowseApp:
    """The browser app a widget or screen belongs to."""
    return cast("BrowseApp", node.app)


class Part(Widget):
    """A widget of the browser, with typed access to the app."""

    @property
    def browser(self) -> BrowseApp:
        return browser_of(self)


class View(Part, Vertical):
    """One of the main views. ``load`` fetches and shows its data; ``reload`` runs it
    in a worker of its own (a newer reload cancels an older one), and marks the view
    fresh. A view out of sight is only marked ``stale`` and reloaded when shown."""

    title = ""
    stale = True

    async def load(self) -> None:
        raise NotImplementedError

    def reload(self) -> None:
        self.stale = False
        in_worker(self, self._load, f"load-{self.id}")

    async def _load(self) -> None:
        try:
            await self.load()
        except (RemoteError, Unavailable) as exc:
            self.say(f"[b]{format.markup(str(exc))}[/]")

    def say(self, markup: str) -> None:
        """Put ``markup`` in the view's status line."""
        self.query_one(".note", Static).update(markup)


def in_worker(node: DOMNode, work: Callable[[], Coroutine[Any, Any, None]], group: str) -> None:
    """Run ``work`` as ``node``'s worker of ``group``, cancelling an older one of it.
    Given as a function, not a coroutine: a worker cancelled before it started would
    leave a coroutine never awaited.

    A view taken down while its work awaited the daemon (the app closing, a page
    replaced) has no widgets left to show the answer in: the work ends there. A
    widget missing from a view still shown is a bug, and raises."""

    async def shown() -> None:
        try:
            await work()
        except NoMatches:
            if not taken_down(node):
                raise

    typed: WorkType[None] = shown
    node.run_worker(typed, exclusive=True, group=group)


def taken_down(node: DOMNode) -> bool:
    """Whether ``node`` is gone or going: detached, closing or being removed, which
    Textual marks before it removes the node's children (the node still attached), or
    in an app that is shutting down (which then removes every screen)."""
    gone = not node.is_attached or node._closing or node._closed or node._pruning
    return gone or not node.app.is_running


def room(widget: Widget, table: DataTable[Any], *widths: int, inset: int = 0) -> int:
    """The width left in ``widget`` for ``table``'s last column, after columns of
    ``widths`` (each cell has a space either side), a scroll bar and ``inset`` (a
    padding); the column is given exactly that. Left to size itself, a column only
    grows, by the cells Textual measures when idle, rows cleared or not: its header
    would depend on what the table showed before, and when."""
    width = max(widget.size.width - sum(widths) - 2 * (len(widths) + 1) - 2 - inset, 12)
    column = table.ordered_columns[-1]
    column.auto_width, column.width = False, width
    return width


def selected_key(table: DataTable[object]) -> str | None:
    """The key of the row under the table's cursor, if any."""
    if table.row_count == 0:
        return None
    try:
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
    except CellDoesNotExist:  # the cursor is past the rows (the table was just emptied)
        return None
    return None if key.value is None else str(key.value)


def restore_cursor(table: DataTable[object], key: str | None) -> None:
    """Put the cursor back on the row ``key`` after the rows were replaced."""
    if key is None:
        return
    with contextlib.suppress(RowDoesNotExist):  # a row gone: the cursor stays where it is
        table.move_cursor(row=table.get_row_index(key), animate=False)
