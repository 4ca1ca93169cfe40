"""Short texts the screens show: times, provenance, markers, a score's breakdown.

Meaning never rests on colour alone (``NO_COLOR`` turns it off): a verified trace
has ``✓``, a conflict ``!``, an overdue commitment the word ``OVERDUE``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.markup import escape

from hikmah.trace import Trace, source_class
from hikmah_cli.render import relative

from .wire import Hit, Why

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


def provenance(trace: Trace) -> str:
    """``human:ana, verified`` / ``tool:psql, unverified``."""
    verified = "verified" if trace.provenance.verified else "unverified"
    return f"{trace.provenance.source} ({source_class(trace)}), {verified}"


def one_line(text: str) -> str:
    return " ".join(text.split())


def why_text(hit: Hit) -> str:
    """Every term of one result's score, for the why panel (Rich markup)."""
    why: Why = hit.why
    matched = ", ".join(why.matched_terms) or "none"
    folded = f" · {hit.duplicates} near-duplicates folded in" if hit.duplicates else ""
    return "\n".join(
        [
            f"[b]why[/] {hit.trace.id}: score [b]{hit.score:.3f}[/]"
            f" · cue {hit.cue:.3f} · meta {hit.meta:.3f}{folded}",
            f" cue   matched {escape(matched)} · coverage {why.coverage:.2f}"
            f" · jaccard {why.jaccard:.2f}",
            f"       lexical {why.lexical:.2f} · tags {why.tag_coverage:.2f}"
            f" · redundancy {why.redundancy:.2f}",
            f" meta  recency {why.recency:.2f} · salience {why.salience:.2f}"
            f" · confidence {why.confidence:.2f} · provenance {why.provenance:.2f}",
            f"       urgency {why.urgency:.2f} · feedback {why.feedback:.2f}"
            f" · pinned {'yes' if why.pinned else 'no'} · overdue {'yes' if why.overdue else 'no'}",
        ]
    )
