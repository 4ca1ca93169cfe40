"""What a search asks for: the query and its filters, as ``memory.recall`` params.

Every filter is the daemon's (kind, scope, status, class of source, verified), so
a filtered search ranks every trace that passes, not only the first results.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

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
        if self.status in ("active", "fulfilled", "superseded"):
            params["statuses"] = [self.status]
        elif self.status == "all":
            params["include_superseded"] = True
        if self.source != "any":
            params["sources"] = [self.source]
        if self.verified != "any":
            params["verified"] = self.verified == "verified"
        return params

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
