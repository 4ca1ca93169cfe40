"""Times, counts and lengths as every client shows them to a person: the CLI's
terminal output and ``hikmah browse`` say them alike."""

from __future__ import annotations

import time


def when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ms / 1000)) + "Z"


def relative(ms: int, now_ms: float | None = None) -> str:
    """``in 3h``, ``2d ago``: how far a moment is from now (``now_ms``, else the clock)."""
    delta = ms - (time.time() * 1000 if now_ms is None else now_ms)
    ahead = delta >= 0
    seconds = abs(delta) / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            amount = f"{seconds / size:.0f}{unit}"
            break
    else:
        amount = "now"
        return amount
    return f"in {amount}" if ahead else f"{amount} ago"


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def awaiting(count: int) -> str:
    """``3 memories await review``."""
    return f"{count} {'memory awaits' if count == 1 else 'memories await'} review"
