"""The promise queue rebuilt from the store, as ``bench/reminders.py`` measures it: each
step of a rebuild timed in-process (with what it keeps in memory) against a plain
``heapq``, and hikmahd started on an empty store and on the commitments' store."""

from __future__ import annotations

import contextlib
import functools
import gc
import heapq
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from servers import hikmahd_daemon
from workload import zipf_words

from hikmah.index import queries
from hikmah.index.queries import Scheduled
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmah.store.core import Store
from hikmah.working.promises import PromiseQueue

SEED = 7
BATCH = 1000
DAY_MS = 86_400_000
DEFAULT_LEAD_MS = 30 * 60_000


def commitment_batch(first: int, count: int, rng: random.Random, now_ms: int) -> list[Remember]:
    """``count`` commitments due between one hour and a year from ``now_ms``."""
    return [
        Remember(
            draft=Draft(
                content=f"commitment {first + i}: " + " ".join(zipf_words(rng, 8)),
                kind="commitment",
                deadline=now_ms + rng.randint(DAY_MS // 24, 365 * DAY_MS),
            ),
            created_at=now_ms,
        )
        for i in range(count)
    ]


def build_store(data_dir: Path, count: int, now_ms: int) -> float:
    """Write ``count`` commitments in batches; the seconds it took."""
    rng = random.Random(SEED)
    policy = KernelPolicy()
    began = time.perf_counter()
    with Store(data_dir, durable=False) as store:
        for first in range(0, count, BATCH):
            batch = commitment_batch(first, min(BATCH, count - first), rng, now_ms)
            refused = [
                o
                for o in store.apply(batch, now_ms=now_ms, policy=policy)
                if isinstance(o, Exception)
            ]
            if refused:
                raise RuntimeError(f"{len(refused)} commitments refused, first: {refused[0]}")
    return time.perf_counter() - began


def load_queue(entries: list[Scheduled], lead_ms: int) -> PromiseQueue:
    """The promise queue as ``Reminders.run`` fills it at start."""
    queue = PromiseQueue(lead_ms)
    for entry in entries:
        queue.schedule(entry.trace_id, entry.deadline, entry.created_at, entry.delivered)
    return queue


def load_heap(entries: list[Scheduled]) -> list[tuple[int, str]]:
    """The baseline: a plain binary heap of (deadline, id)."""
    heap = [(entry.deadline, entry.trace_id) for entry in entries]
    heapq.heapify(heap)
    return heap


Builder = Callable[[list[Scheduled]], object]


@dataclass
class RebuildRow:
    step: str
    seconds: float
    per_s: float
    retained_bytes: int | None = None
    peak_bytes: int | None = None
    x_heapq: float | None = None


def median_seconds(action: Callable[[], object], rounds: int) -> float:
    """Median wall time of ``action`` (each result dropped before the next round)."""
    times = []
    for _ in range(rounds):
        gc.collect()
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def traced_memory(store: Store, build: Builder) -> tuple[int, int]:
    """(bytes still allocated once the scheduled list is dropped, peak bytes) for
    ``scheduled()`` followed by ``build``, as tracemalloc sees them."""
    gc.collect()
    tracemalloc.start()
    try:
        entries = store.read(queries.scheduled)
        built = build(entries)
        del entries
        gc.collect()
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del built
    return retained, peak


def rebuild_rows(store: Store, rounds: int) -> list[RebuildRow]:
    """The steps of a rebuild, each timed on its own, and the heapq baseline."""
    entries = store.read(queries.scheduled)
    n = len(entries)
    builders: list[tuple[str, Builder]] = [
        ("PromiseQueue.schedule, lead 30 min", lambda e: load_queue(e, DEFAULT_LEAD_MS)),
        ("PromiseQueue.schedule, lead 0", lambda e: load_queue(e, 0)),
        ("baseline: heapq of (deadline, id)", load_heap),
    ]
    scan_s = median_seconds(lambda: store.read(queries.scheduled), rounds)
    scan_bytes, scan_peak = traced_memory(store, lambda e: e)
    rows = [
        RebuildRow(
            "store.read(queries.scheduled) (LMDB scan)", scan_s, n / scan_s, scan_bytes, scan_peak
        )
    ]
    for step, build in builders:
        seconds = median_seconds(functools.partial(build, entries), rounds)
        retained, peak = traced_memory(store, build)
        rows.append(RebuildRow(step, seconds, n / seconds, retained, peak))
    rebuild_s = scan_s + rows[1].seconds
    rows.insert(
        2,
        RebuildRow(
            "rebuild = scheduled() + queue, lead 30",
            rebuild_s,
            n / rebuild_s,
            rows[1].retained_bytes,
            rows[1].peak_bytes,
        ),
    )
    heap = rows[-1]
    for row in rows:
        row.x_heapq = row.seconds / heap.seconds
    return rows


@dataclass
class StartRow:
    store: str
    loaded_s: float
    rss_anon_bytes: int


def start_rows(root: Path, queue_dir: Path, stack: contextlib.ExitStack) -> list[StartRow]:
    """hikmahd started on an empty store, then on the commitments' store."""
    rows = []
    for name, directory in (("empty store", root / "e"), ("commitments' store", queue_dir)):
        daemon = hikmahd_daemon(root, directory)
        stack.callback(daemon.stop)
        daemon.start()
        rows.append(StartRow(name, daemon.loaded_s, daemon.rss_anon()))
        daemon.stop()
    return rows
