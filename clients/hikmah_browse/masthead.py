"""The line at the top of every screen: who the daemon thinks you are, what the store
holds, and whether live events are arriving."""

from __future__ import annotations

from textual.widgets import Static


class Masthead(Static):
    """Shows the app's ``masthead`` text, kept current by the app."""

    def on_mount(self) -> None:
        self.watch(self.app, "masthead", self._show)

    def _show(self, text: str) -> None:
        self.update(text)
