"""Short texts the screens show: times, provenance, markers, a score's breakdown.

Meaning never rests on colour alone (``NO_COLOR`` turns it off): a verified trace
has ``✓``, a conflict ``!``, an overdue commitment the word ``OVERDUE``, a trace held
for the person's review ``PENDING review`` or ``QUARANTINED``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.markup import escape
from rich.text import Text

from hikmah.model.display import stamped_agent, visible, writer
from hikmah.model.recall import Why
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Hold
from hikmah.model.wire.memory import Recalled
from hikmah_client.text import clip, relative

Clock = Callable[[], int]  # epoch ms
STATUS_MARK = {"active": " ", "superseded": "s", "fulfilled": "f", "purged": "x"}


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def ago(ms: int, now_ms: int) -> str:
    """``3d ago``, ``in 2h``; ``now`` within a minute."""
    return relative(ms, now_ms)


def age(ms: int, now_ms: int) -> str:
    """A compact age for a table cell: ``5m``, ``3h``, ``12d``, ``2y``."""
    seconds = max(now_ms - ms, 0) / 1000
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit}"
    return "now"


def markers(trace: Trace, status: str, conflicted: bool) -> str:
    """Three columns: verified, conflict, status (``s`` superseded, ``f`` fulfilled)."""
    verified = "✓" if trace.provenance.verified else " "
    return verified + ("!" if conflicted else " ") + STATUS_MARK.get(status, "?")


def held(state: Hold | None) -> str:
    """The flag of a trace held for the person's review ("" when it is not held)."""
    if state is None:
        return ""
    return "QUARANTINED" if state == "quarantined" else "PENDING review"


def provenance(trace: Trace) -> str:
    """``human:ana, verified``; ``human:ana (claimed), written by agent:codex, session
    5f1c…, unverified`` for an agent session's write (:func:`hikmah.model.display.writer`)."""
    prov = trace.provenance
    return writer(prov.source, prov.locator, prov.verified)


def author(source: str, locator: str | None, verified: bool) -> str:
    """Who wrote a trace, for a narrow column: the agent whose session wrote it, else
    its source; ``✓`` when a person verified it."""
    return (stamped_agent(locator) or visible(source)) + (" ✓" if verified else "")


def one_line(text: str) -> str:
    """Stored text on one line, its control and format characters shown as escapes."""
    return visible(" ".join(text.split()))


def markup(text: str) -> str:
    """Stored or remote text inside Rich markup: shown as escapes, never read as markup."""
    return escape(visible(text))


def cell(text: str, width: int) -> Text:
    """Stored text as a table cell: one line, clipped, never read as markup."""
    return Text(clip(one_line(text), width), end="", no_wrap=True)


def why_text(hit: Recalled) -> str:
    """Every term of one result's score, for the why panel (Rich markup)."""
    why: Why = hit.why
    matched = ", ".join(why.matched_terms) or "none"
    folded = f" · {hit.duplicates} near-duplicates folded in" if hit.duplicates else ""
    return "\n".join(
        [
            f"[b]why[/] {hit.trace.id}: score [b]{hit.score:.3f}[/]"
            f" · cue {hit.cue:.3f} · meta {hit.meta:.3f}{folded}",
            f" cue   matched {markup(matched)} · coverage {why.coverage:.2f}"
            f" · jaccard {why.jaccard:.2f}",
            f"       lexical {why.lexical:.2f} · tags {why.tag_coverage:.2f}"
            f" · redundancy {why.redundancy:.2f}",
            f" meta  recency {why.recency:.2f} · salience {why.salience:.2f}"
            f" · confidence {why.confidence:.2f} · provenance {why.provenance:.2f}",
            f"       urgency {why.urgency:.2f} · feedback {why.feedback:.2f}"
            f" · pinned {'yes' if why.pinned else 'no'} · overdue {'yes' if why.overdue else 'no'}",
        ]
    )
