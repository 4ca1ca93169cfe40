"""Withholding the credentials in a text, for previews in ledger reports."""

from __future__ import annotations

import unicodedata

from hikmah.model.secrets.detector import findings
from hikmah.model.secrets.normalise import normalise

_WITHHELD = "[withheld]"
# The text around a withheld value can read as a new credential once the marker is in
# (in s://PASSWORD=[withheld];:s@D the marker sits in a URL's user part), so redaction
# runs again on its own output; a text still flagged after these passes goes whole.
_REDACT_PASSES = 3
PREVIEW_CHARS = 80
# Control, format (bidi overrides among them) and line-break characters could
# rearrange or split a preview on a terminal; a preview shows them as spaces.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def redact(text: str) -> str:
    """Withhold every credential in a text, for previews in ledger reports.

    Args:
        text: Any text.

    Returns:
        The text with each credential span replaced by ``[withheld]``. An
        assignment keeps its name (``password=[withheld]``) and a URL its
        user and host. The detector finds nothing in the result, so redacting
        it again changes nothing.
    """
    for _ in range(_REDACT_PASSES):
        spans = _secret_spans(text)
        if not spans:
            return text
        text = _withhold(text, spans)
    return _WITHHELD if _secret_spans(text) else text


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    """A text as a report may show it: redacted, on one line, at most ``chars`` long."""
    # Redact before cutting, so a credential split by the cut is still recognised.
    flat = "".join(" " if unicodedata.category(ch) in _UNPRINTABLE else ch for ch in redact(text))
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """The spans :func:`redact` withholds, sorted; empty when
    :func:`.detector.find_secret` finds nothing."""
    spans = [span for _label, span in findings(text)]
    normalised = normalise(text)
    if normalised is not None:
        spans.extend(normalised.original(span) for _label, span in findings(normalised.text))
    return sorted(spans)


def _withhold(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (sorted) replaced by ``[withheld]``."""
    pieces: list[str] = []
    cursor = 0
    for first, last in spans:
        start, end = _outside_marker(text, first, 0), _outside_marker(text, last, 1)
        if end <= cursor:
            continue
        if start >= cursor:
            pieces.append(text[cursor:start])
            pieces.append(_WITHHELD)
        # An overlapping span extends the withheld region without a second
        # marker.
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _outside_marker(text: str, position: int, side: int) -> int:
    """``position``, moved to the start (``side`` 0) or the end (1) of a marker it falls
    inside: a span found in a later pass takes the whole marker, never leaving ``[with``
    or ``]`` behind."""
    width = len(_WITHHELD)
    start = text.find(_WITHHELD, max(0, position - width + 1), position + width - 1)
    if start == -1 or start >= position:
        return position
    return start + side * width
