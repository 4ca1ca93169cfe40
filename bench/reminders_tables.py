"""The tables ``bench/reminders.py`` prints: the queue's rebuild beside a plain heapq
and the daemon's start, then the reminders' lateness idle and under load."""

from __future__ import annotations

import textwrap

from lateness import LatenessRow
from queue_rebuild import RebuildRow, StartRow
from workload import fmt

TARGET_P99_MS = 50.0
MIB = 1 << 20


def wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=92, subsequent_indent="    ")


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f}"


def rebuild_table(
    rows: list[RebuildRow], starts: list[StartRow], n: int, build_s: float, rounds: int
) -> list[str]:
    lines = [
        f"Promise queue rebuild at start: {n:,} commitments, deadlines over the next year"
        f" (store built in {build_s:.1f} s; median of {rounds})",
        f"{'step':<40} {'seconds':>8} {'commit/s':>9} {'x heapq':>8}"
        f" {'MiB':>6} {'B/commit':>8} {'peak MiB':>8}",
    ]
    for row in rows:
        per = None if row.retained_bytes is None else row.retained_bytes / n
        lines.append(
            f"{row.step:<40} {row.seconds:>8.3f} {row.per_s:>9.0f} {fmt(row.x_heapq, '.1f'):>8}"
            f" {mib(row.retained_bytes):>6} {fmt(per, '.0f'):>8} {mib(row.peak_bytes):>8}"
        )
    queue, heap = rows[1], rows[-1]
    assert queue.retained_bytes is not None and heap.retained_bytes is not None
    lines.append(
        f"queue (lead 30) / heapq: time x{queue.seconds / heap.seconds:.1f},"
        f" memory x{queue.retained_bytes / heap.retained_bytes:.1f}"
    )
    empty, full = starts
    delta_s = full.loaded_s - empty.loaded_s
    delta_rss = full.rss_anon_bytes - empty.rss_anon_bytes
    lines += [
        "hikmahd start, Popen to 'promise queue loaded' (RssAnon right after)",
        f"  {empty.store:<20} {empty.loaded_s:>6.2f} s  {mib(empty.rss_anon_bytes):>6} MiB",
        f"  {full.store:<20} {full.loaded_s:>6.2f} s  {mib(full.rss_anon_bytes):>6} MiB",
        f"  difference           {delta_s:>6.2f} s  {mib(delta_rss):>6} MiB"
        f"  ({delta_rss / n:.0f} B/commitment)",
    ]
    return lines


def lateness_table(rows: list[LatenessRow], reminders: int, span_s: float) -> list[str]:
    lines = [
        f"Reminder lateness (subscriber arrival - due_at), lead_minutes = 0,"
        f" {reminders} reminders over {span_s:g} s per run",
        f"{'load':<22} {'arrived':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}"
        f" {'recall/s':>8} {'rec p50':>7} {'rec p99':>7} {'cpu%':>5}",
    ]
    for row in rows:
        lines.append(
            f"{row.load:<22} {f'{row.received}/{row.expected}':>7} {row.p50_ms:>7.1f}"
            f" {row.p99_ms:>7.1f} {row.max_ms:>7.1f} {fmt(row.recall_per_s, '.0f'):>8}"
            f" {fmt(row.recall_p50_ms, '.1f'):>7} {fmt(row.recall_p99_ms, '.1f'):>7}"
            f" {row.daemon_cpu_pct:>5.0f}"
        )
    idle, loaded = rows
    verdict = "meets" if loaded.p99_ms < TARGET_P99_MS else "MISSES"
    lines += [
        f"loaded / idle: p50 x{loaded.p50_ms / idle.p50_ms:.1f},"
        f" p99 x{loaded.p99_ms / idle.p99_ms:.1f}",
        f"KEY: p99 lateness under {loaded.clients} recalling clients = {loaded.p99_ms:.1f} ms"
        f" ({verdict} the later milestone's target: p99 < {TARGET_P99_MS:g} ms)",
        *wrapped(
            "rec p50/p99: recall round trips (ms) completed between the first and last"
            " deadline; cpu%: the daemon's CPU time over the run, of one core."
        ),
    ]
    problems = [
        f"{row.load}: {row.expected - row.received} reminders never arrived"
        for row in rows
        if row.received < row.expected
    ]
    problems += [f"{row.load}: {row.repeats} repeated deliveries" for row in rows if row.repeats]
    problems += [f"{row.load}: {row.marked_late} marked late" for row in rows if row.marked_late]
    problems += [
        f"{row.load}: {row.recall_errors} recall errors, first: {row.first_error}"
        for row in rows
        if row.recall_errors
    ]
    return lines + [f"PROBLEM: {p}" for p in problems]
