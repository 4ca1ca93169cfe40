"""How the screen (:mod:`hikmah.model.screen`) reads a text and searches it.

A text is read three ways at once (:class:`Text`): as written, in NFKC form (so
fullwidth letters hide nothing) and that lowercased, up to :data:`SCREENED_CHARS`.
A rule's alternatives are regular expressions each anchored by a few substrings
(:class:`Search`): a substring test costs far less than a pass of the regex engine,
so a long text is searched only for the alternatives whose anchors it holds, in one
pass.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Final, NamedTuple

SCREENED_CHARS: Final = 1 << 20  # covers the largest trace the policy allows


class Text(NamedTuple):
    """A text as the rules read it: as written, in NFKC form, and that lowercased."""

    raw: str
    folded: str
    lowered: str

    @classmethod
    def of(cls, text: str) -> Text:
        raw = text[:SCREENED_CHARS]
        folded = unicodedata.normalize("NFKC", raw)
        return cls(raw, folded, folded.lower())


# What a rule found in a text (None: nothing).
Finder = Callable[[Text], str | None]


class Search:
    """A finder for alternatives, each ``(anchors, pattern)``: every match of the
    (lowercase) pattern holds one of the ``|``-separated anchors. A pass of the regex
    engine over a long text costs far more than a substring test, so only the
    alternatives whose anchors the text holds are searched, in one pass."""

    def __init__(self, *alternatives: tuple[str, str]) -> None:
        self.anchors = [tuple(anchors.split("|")) for anchors, _pattern in alternatives]
        self.patterns = [pattern for _anchors, pattern in alternatives]
        self._combined = functools.lru_cache(maxsize=64)(self._compile)

    def __call__(self, text: Text) -> str | None:
        lowered = text.lowered
        chosen = tuple(
            i for i, anchors in enumerate(self.anchors) if any(a in lowered for a in anchors)
        )
        if not chosen:
            return None
        match = self._combined(chosen).search(lowered)
        return None if match is None else match.group()

    def unanchored(self, text: Text) -> list[str]:
        """The patterns that match ``text`` though it holds none of their anchors: a
        mistake in the anchors (what the tests look for)."""
        return [
            pattern
            for anchors, pattern in zip(self.anchors, self.patterns, strict=True)
            if re.search(pattern, text.lowered) and not any(a in text.lowered for a in anchors)
        ]

    def _compile(self, chosen: tuple[int, ...]) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{self.patterns[i]})" for i in chosen))


def words(*alternatives: str) -> str:
    """A pattern matching any of ``alternatives`` (a non-capturing group)."""
    return "(?:" + "|".join(alternatives) + ")"
