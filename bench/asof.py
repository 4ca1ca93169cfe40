"""What reading the past costs: a recall as of an earlier ledger record vs the same recall now.

    .venv/bin/python bench/asof.py [--notes 100000] [--queries 200] [--seed 7]

Each query of the bench corpus's three sets (``recall.make_query_sets``) is recalled
through the socket three ways, taking turns query by query: now, as of the record
before the last (the same candidates, masked as of then) and as of the middle
record (half the store then). An as-of recall reads the same indexes with a
different mask (:mod:`hikmah.index.past`), never a replay; the target is a small multiple
of the present recall.

``bench/run`` measures this on each tier's daemon (:func:`measure`); run alone, this
script builds the store (the suite's corpus, in-process) and starts the daemon itself.
Results: a table on stdout and ``bench/results-asof.json``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon_starts import measure_alone
from report import label

from hikmah_client.connection import Client
from tests.harness.stats import percentile

RESULTS = Path(__file__).with_name("results-asof.json")
RATIO_TARGET = 3.0  # as-of p50 over present p50, at most
QUERIES = 100  # recalled per query set in bench/run
WARM = 20  # queries recalled before timing


@dataclass
class AsOfTiming:
    """Recall p50 and p95 in ms: now, as of the record before the last, as of the middle."""

    queries: int
    head: int  # the ledger's last record
    present_p50_ms: float
    present_p95_ms: float
    recent_p50_ms: float
    recent_p95_ms: float
    middle_p50_ms: float
    middle_p95_ms: float


def measure(socket: Path, queries: list[list[str]]) -> AsOfTiming:
    """Recall ``queries`` at ``socket`` now and as of two earlier records."""
    client = Client(socket)
    try:
        for words in queries[:WARM]:  # the first recalls load the feature columns
            client.call("memory.recall", {"query": " ".join(words)})
        head = int(client.call("daemon.status", {})["head"]["seq"])
        points = {"present": None, "recent": head - 1, "middle": head // 2}
        times: dict[str, list[float]] = {name: [] for name in points}
        names = list(points)
        for i, words in enumerate(queries):
            for name in names[i % 3 :] + names[: i % 3]:  # rotate who goes first
                params: dict[str, object] = {"query": " ".join(words)}
                if points[name] is not None:
                    params["as_of"] = points[name]
                began = time.perf_counter()
                client.call("memory.recall", params)
                times[name].append((time.perf_counter() - began) * 1000)
    finally:
        client.close()
    p = {name: (percentile(t, 50), percentile(t, 95)) for name, t in times.items()}
    return AsOfTiming(
        queries=len(queries),
        head=head,
        present_p50_ms=p["present"][0],
        present_p95_ms=p["present"][1],
        recent_p50_ms=p["recent"][0],
        recent_p95_ms=p["recent"][1],
        middle_p50_ms=p["middle"][0],
        middle_p95_ms=p["middle"][1],
    )


def main(argv: list[str] | None = None) -> int:
    notes, rows = measure_alone(argv, __doc__, 200, measure)
    print(f"recall as of an earlier record at {label(notes)} traces (ms)")
    columns = ("now p50", "p95", "recent", "p95", "middle", "p95")
    print(f"{'queries':10} " + " ".join(f"{c:>8}" for c in columns))
    for name, t in rows.items():
        print(
            f"{name:10} {t.present_p50_ms:8.2f} {t.present_p95_ms:8.2f} {t.recent_p50_ms:8.2f}"
            f" {t.recent_p95_ms:8.2f} {t.middle_p50_ms:8.2f} {t.middle_p95_ms:8.2f}"
        )
    worst = max(max(t.recent_p50_ms, t.middle_p50_ms) / t.present_p50_ms for t in rows.values())
    verdict = "met" if worst <= RATIO_TARGET else "MISSED"
    print(f"worst as-of p50 / present p50: {worst:.2f}x: {verdict} (≤ {RATIO_TARGET:g}x)")
    RESULTS.write_text(
        json.dumps({"notes": notes, "rows": {k: asdict(v) for k, v in rows.items()}}, indent=2)
        + "\n"
    )
    return 0 if worst <= RATIO_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
