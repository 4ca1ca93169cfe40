"""A tier's figures in the suite's table: recall against FTS5 and with the semantic
channel off, the daemon's start, memory and first answers, browse keystrokes, recall
as of the past and the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asof
import browse
from report import Figure, Target, label
from scale import Empty, TierResult
from suite_plan import Plan
from suite_targets import (
    BIG_P50_MS,
    BIG_P95_MS,
    BIG_TIER,
    CLI_TARGET,
    CONNECT_TARGET_MS,
    FIRST_ANSWER_TARGET_S,
    RATIO_TARGET,
    RATIO_TIER,
    READY_TARGET_S,
)

from tests.harness.stats import percentile

KIB, MIB = 1024, 1 << 20


def recall_figures(tier: TierResult, plan: Plan) -> list[Figure]:
    figures = []
    for t in tier.recall:
        for q, value, base in (
            ("p50", t.hikmah_p50_ms, t.fts5_p50_ms),
            ("p95", t.hikmah_p95_ms, t.fts5_p95_ms),
        ):
            target = None
            if tier.size == RATIO_TIER:
                target = Target("ratio", "<=", RATIO_TARGET)
            elif tier.size == BIG_TIER:
                target = Target("value", "<", BIG_P50_MS if q == "p50" else BIG_P95_MS, "ms")
            name = f"{label(tier.size)} recall {t.query_set} {q}, socket vs FTS5 bm25 top 10"
            figures.append(Figure(name, value, "ms", base, target, judged=not plan.quick))
    return figures


def tier_figures(tier: TierResult, empty: Empty, plan: Plan) -> list[Figure]:
    n, name = tier.kept, label(tier.size)
    ready = percentile(tier.ready_s, 50)
    loaded = percentile(tier.loaded_s, 50)
    figures = recall_figures(tier, plan)
    for on, off in zip(tier.recall, tier.recall_off, strict=True):
        for q, value, base in (
            ("p50", on.hikmah_p50_ms, off.hikmah_p50_ms),
            ("p95", on.hikmah_p95_ms, off.hikmah_p95_ms),
        ):
            figures.append(
                Figure(
                    f"{name} recall {on.query_set} {q}, socket, semantic channel on vs off",
                    value,
                    "ms",
                    base,
                    note=f"off: {base / (on.fts5_p50_ms if q == 'p50' else on.fts5_p95_ms):.2f}×"
                    " FTS5",
                )
            )
    figures += [
        Figure(
            f"{name} start to READY (socket accepts) vs empty store",
            ready,
            "s",
            empty.ready_s,
            Target("value", "<", READY_TARGET_S, "s"),
            judged=not plan.quick,
        ),
        Figure(f"{name} start to promise queue loaded vs empty store", loaded, "s", empty.loaded_s),
        *waiting_figures(tier, plan),
        Figure(
            f"{name} start to semantic channel ready (in the background) vs empty store",
            percentile(tier.semantic_s, 50),
            "s",
            empty.semantic_s,
            note=f"{tier.vectors.get('vectors', 0):,} vectors, {tier.vectors.get('graph', 0):,}"
            " in the graph",
        ),
    ]
    # VmRSS counts the LMDB pages the daemon has mapped (RssFile: page cache, shared and
    # reclaimable; the kernel maps 64 KiB around each fault); RssAnon is its own heap.
    for field_name, what, when, mine, base in (
        ("VmRSS", "VmRSS", "after start", tier.memory_loaded_kib, empty.memory_loaded_kib),
        ("VmRSS", "VmRSS", "after warm recall", tier.memory_warm_kib, empty.memory_warm_kib),
        ("RssAnon", "heap (RssAnon)", "after warm recall", tier.memory_warm_kib,
         empty.memory_warm_kib),
    ):  # fmt: skip
        per_trace = (mine[field_name] - base[field_name]) * KIB / n
        figures.append(
            Figure(
                f"{name} daemon {what} {when} vs empty store",
                mine[field_name] * KIB / MIB,
                "MiB",
                base[field_name] * KIB / MIB,
                note=f"{per_trace:,.0f} B/trace",
            )
        )
    if tier.browse:
        typed = tier.browse
        name_ks = f"{name} browse: each keystroke's recall ({typed['keystrokes']:,} typed)"
        figures += [
            Figure(
                f"{name_ks} p95, browser's asyncio client vs CLI's stdlib client",
                typed["browser_p95_ms"],
                "ms",
                typed["blocking_p95_ms"],
                Target("value", "<", browse.TARGET_MS, "ms"),
                judged=not plan.quick,
            ),
            Figure(
                f"{name_ks} p50, browser's asyncio client vs CLI's stdlib client",
                typed["browser_p50_ms"],
                "ms",
                typed["blocking_p50_ms"],
                note=f"max {typed['browser_max_ms']:.1f} ms",
            ),
        ]
    if tier.as_of:
        past = tier.as_of
        points = (("recent", "the record before the last"), ("middle", "the middle record"))
        for point, what in points:
            figures.append(
                Figure(
                    f"{name} recall as of {what} p50 vs the same recall now"
                    f" ({past['queries']:,} queries)",
                    past[f"{point}_p50_ms"],
                    "ms",
                    past["present_p50_ms"],
                    Target("ratio", "<=", asof.RATIO_TARGET),
                    judged=not plan.quick,
                    note=f"p95 {past[f'{point}_p95_ms']:.2f} vs {past['present_p95_ms']:.2f} ms",
                )
            )
    cli = tier.cli
    if cli:
        figures.append(
            Figure(
                f"{name} CLI `hikmah recall` wall median vs venv python -c pass",
                cli["hikmah_recall_ms"],
                "ms",
                cli["venv_python_ms"],
                Target("ratio", "<=", CLI_TARGET),
                judged=not plan.quick,
            )
        )
        if "path_python3_ms" in cli:
            figures.append(
                Figure(
                    f"{name} CLI `hikmah recall` wall median vs python3 on PATH -c pass",
                    cli["hikmah_recall_ms"],
                    "ms",
                    cli["path_python3_ms"],
                )
            )
    return figures


def waiting_figures(tier: TierResult, plan: Plan) -> list[Figure]:
    """The first answers after a start (the slowest of the starts), and a new
    connection's cost, each beside the same call on the settled daemon."""
    name = label(tier.size)
    figures = []
    if tier.first and tier.settled is not None:
        for what, first, settled in (
            ("daemon.status", max(f.status_s for f in tier.first), tier.settled.status_s),
            ("memory.recall", max(f.recall_s for f in tier.first), tier.settled.recall_s),
        ):
            figures.append(
                Figure(
                    f"{name} first {what} after a start, from the socket accepting,"
                    " vs the same call settled",
                    first,
                    "s",
                    settled,
                    Target("value", "<=", FIRST_ANSWER_TARGET_S, "s"),
                    judged=not plan.quick,
                )
            )
    if tier.connect is not None:
        figures.append(
            Figure(
                f"{name} daemon.status on a new connection vs on a kept one",
                tier.connect.new_ms,
                "ms",
                tier.connect.kept_ms,
                Target("excess", "<=", CONNECT_TARGET_MS, "ms"),
                judged=not plan.quick,
            )
        )
    return figures
