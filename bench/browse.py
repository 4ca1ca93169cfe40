"""What a keystroke costs in ``hikmah browse``: its search's recall through the socket.

    .venv/bin/python bench/browse.py [--notes 100000] [--queries 40] [--seed 7] [--keep DIR]

The browser searches as the person types: every keystroke (after a short pause in
typing) sends ``memory.recall`` with the text typed so far. This types each query of
the bench corpus (``recall.make_query_sets``: 1 common word, 1 common + 2 mid, 2
common + 6 mid) a character at a time and times each prefix's recall with the
browser's own asyncio client (``hikmah_browse.rpc``, the params its search sends),
one in flight, from the send to the whole reply decoded; the baseline is the same
prefixes through the CLI's blocking stdlib client (``hikmah_client.connection``), taking
turns prefix by prefix. The target: p95 well under 50 ms at 100k traces.

``bench/run`` measures this on each tier's daemon (:func:`measure`); run alone, this
script builds the store (the suite's corpus, in-process) and starts the daemon itself.
Results: a table on stdout and ``bench/results-browse.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon_starts import measure_alone
from report import label

from hikmah.model.wire.memory import RecallResult
from hikmah_browse.query import Search
from hikmah_browse.rpc import Connection
from hikmah_browse.wire import decode
from hikmah_client.connection import Client
from tests.harness.stats import percentile

RESULTS = Path(__file__).with_name("results-browse.json")
TARGET_MS = 50.0
QUERIES = 40  # typed per query set in bench/run


@dataclass
class KeystrokeTiming:
    """Each prefix's recall, by client, in ms."""

    keystrokes: int
    results_p50: float  # results shown per keystroke
    browser_p50_ms: float
    browser_p95_ms: float
    browser_max_ms: float
    blocking_p50_ms: float
    blocking_p95_ms: float


def prefixes(queries: list[list[str]]) -> list[str]:
    """What the search box holds after each keystroke, query after query."""
    typed = []
    for words in queries:
        text = " ".join(words)
        typed += [text[:end] for end in range(1, len(text) + 1)]
    return typed


async def _timed(
    socket: Path, texts: list[str], blocking: Client
) -> tuple[list[float], list[float], list[int]]:
    """Each text's recall through the browser's client and the blocking one, in turns."""
    connection = await Connection.open(socket, autostart=False, daemon_args=[])
    mine: list[float] = []
    theirs: list[float] = []
    shown: list[int] = []

    async def browser(params: dict[str, Any]) -> None:
        began = time.perf_counter()
        found = decode(await connection.call("memory.recall", params), RecallResult)
        mine.append((time.perf_counter() - began) * 1000)
        shown.append(len(found.results))

    def stdlib(params: dict[str, Any]) -> None:
        began = time.perf_counter()
        blocking.call("memory.recall", params)
        theirs.append((time.perf_counter() - began) * 1000)

    try:
        for i, text in enumerate(texts):
            params = Search(text=text).params()
            if i % 2 == 0:  # who goes first alternates, as in the suite's recall timing
                await browser(params)
                stdlib(params)
            else:
                stdlib(params)
                await browser(params)
    finally:
        await connection.aclose()
    return mine, theirs, shown


def measure(socket: Path, queries: list[list[str]]) -> KeystrokeTiming:
    """Type ``queries`` into the daemon at ``socket``, a keystroke at a time."""
    texts = prefixes(queries)
    blocking = Client(socket)
    try:
        mine, theirs, shown = asyncio.run(_timed(socket, texts, blocking))
    finally:
        blocking.close()
    return KeystrokeTiming(
        keystrokes=len(texts),
        results_p50=percentile([float(n) for n in shown], 50),
        browser_p50_ms=percentile(mine, 50),
        browser_p95_ms=percentile(mine, 95),
        browser_max_ms=max(mine),
        blocking_p50_ms=percentile(theirs, 50),
        blocking_p95_ms=percentile(theirs, 95),
    )


def main(argv: list[str] | None = None) -> int:
    notes, rows = measure_alone(argv, __doc__, 40, measure)
    print(f"hikmah browse: each keystroke's recall at {label(notes)} traces (ms)")
    head = f"{'queries':10} {'keys':>6} {'p50':>7} {'p95':>7} {'max':>7}"
    print(f"{head}  {'stdlib p50':>10} {'p95':>7}")
    for name, t in rows.items():
        print(
            f"{name:10} {t.keystrokes:>6} {t.browser_p50_ms:7.2f} {t.browser_p95_ms:7.2f}"
            f" {t.browser_max_ms:7.2f}  {t.blocking_p50_ms:10.2f} {t.blocking_p95_ms:7.2f}"
        )
    worst = max(t.browser_p95_ms for t in rows.values())
    print(
        f"worst p95 {worst:.2f} ms: {'met' if worst < TARGET_MS else 'MISSED'} (< {TARGET_MS:g} ms)"
    )
    RESULTS.write_text(
        json.dumps({"notes": notes, "rows": {k: asdict(v) for k, v in rows.items()}}, indent=2)
        + "\n"
    )
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
