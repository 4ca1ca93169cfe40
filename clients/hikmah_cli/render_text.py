"""The layout every renderer of the CLI shares: lines wrapped to an 80-column terminal,
and the few words a trace is named by (its id, kind, day and writer)."""

from __future__ import annotations

import textwrap
import time
from typing import TYPE_CHECKING

from hikmah.model.display import writer

if TYPE_CHECKING:  # for mypy only: the CLI reads a reply's traces as Reply
    from hikmah.model.trace import Trace


WIDTH = 80


def wrap(text: str, indent: str = "   ", first: str | None = None) -> str:
    """``text`` on lines of at most ``WIDTH``, its whitespace folded; the first line starts
    with ``first`` (a label or a rank) when given, every other with ``indent``."""
    return textwrap.fill(
        " ".join(text.split()),
        WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
    )


def provenance(trace: Trace) -> str:
    """Who wrote a trace: its source, and the agent whose session wrote it when one did."""
    prov = trace.provenance
    return writer(prov.source, prov.locator, prov.verified)


def day(ms: int | None) -> str:
    return "-" if ms is None else time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


def trace_line(trace: Trace, status: str | None = None) -> str:
    parts = [trace.id, trace.kind, day(trace.created_at), provenance(trace)]
    if status and status != "active":
        parts.append(status)
    if trace.scope != "global":
        parts.append(trace.scope)
    return " · ".join(parts)
