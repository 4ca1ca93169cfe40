"""What a search asks for: the query and its filters, as recall params and local filters.

``memory.recall`` filters by kind and scope, and shows superseded traces with
``include_superseded``. It has no filter for a single status, for the kind of
source or for verified: those are applied here, to the results the daemon
returned (at most its ``recall_limit``), and the search says so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hikmah.trace import Trace

from .wire import Hit

STATUSES = ("current", "active", "fulfilled", "superseded", "all")
SOURCES = ("any", "person", "agent", "tool", "other")
VERIFIED = ("any", "verified", "unverified")
# Most results one search asks for; the daemon gives at most its policy's recall_limit.
SEARCH_LIMIT = 200
_STATUS_DOES = {
    "current": "active+fulfilled",
    "active": "active",
    "fulfilled": "fulfilled",
    "superseded": "superseded",
    "all": "all, history too",
}


def source_class(trace: Trace) -> str:
    """``person``, ``agent``, ``tool`` or ``other``: who wrote a trace, by its provenance.

    A trace written from a detected agent session is an agent's whatever source it
    names, since the daemon stamped its locator.
    """
    source = trace.provenance.source.strip().lower()
    locator = trace.provenance.locator or ""
    if source.startswith("agent:") or locator.startswith("agent-session:"):
        return "agent"
    if source.startswith("human:"):
        return "person"
    if source.startswith("tool:"):
        return "tool"
    return "other"


@dataclass(frozen=True)
class Search:
    """A query with its filters. ``#word`` in the text is a tag cue."""

    text: str = ""
    kind: str | None = None
    scope: str | None = None
    status: str = "current"
    source: str = "any"
    verified: str = "any"

    def replace(self, **changes: Any) -> Search:
        return dataclasses.replace(self, **changes)

    def words_and_tags(self) -> tuple[str, list[str]]:
        words, tags = [], []
        for word in self.text.split():
            if word.startswith("#") and len(word) > 1:
                tags.append(word[1:])
            else:
                words.append(word)
        return " ".join(words), tags

    def params(self) -> dict[str, Any]:
        """The ``memory.recall`` params."""
        query, tags = self.words_and_tags()
        params: dict[str, Any] = {"query": query, "tags": tags, "limit": SEARCH_LIMIT}
        if self.kind is not None:
            params["kinds"] = [self.kind]
        if self.scope:
            params["scope"] = self.scope
        if self.status in ("superseded", "all"):
            params["include_superseded"] = True
        return params

    def keeps(self, hit: Hit) -> bool:
        """Whether a recalled result passes the filters the daemon does not apply."""
        if self.status in ("active", "fulfilled", "superseded") and hit.status != self.status:
            return False
        if self.source != "any" and source_class(hit.trace) != self.source:
            return False
        verified = hit.trace.provenance.verified
        return self.verified == "any" or verified == (self.verified == "verified")

    @property
    def filtered_here(self) -> bool:
        """Whether some results may be held back by a filter applied here."""
        return (
            self.status in ("active", "fulfilled", "superseded")
            or self.source != "any"
            or self.verified != "any"
        )

    def describe(self) -> str:
        """The filters in one short line."""
        parts = [
            self.kind or "any kind",
            f"scope {self.scope}" if self.scope else "any scope",
            _STATUS_DOES[self.status],
            "any source" if self.source == "any" else f"by {self.source}",
            "verified or not" if self.verified == "any" else self.verified,
        ]
        return " · ".join(parts)
