"""The benchmark suite: every figure beside its baseline, measured in one run.

    bench/run [--quick] [--1m] [--queries N] [--seed 7] [--keep]

One table (figure | Hikmah | baseline | ratio | target | met?, 100 columns: a long
figure name wraps, a note goes under it) on stdout, the details
in ``bench/results.json`` and the recall curve in ``bench/recall-scaling.png`` (when
matplotlib is installed: ``pip install -e '.[bench]'``). Ratios are Hikmah over the
baseline measured in the same run; the machines are shared and noisy, so compare
ratios, not absolute times across runs.

Tiers: 10k and 100k traces, about 4 minutes (``--1m`` adds 1M: about 13 minutes,
half of it writing the million notes), plus recall-only points at 30k (and 300k) for
the plot. ``--quick`` is the CI smoke mode: every figure of a full run, on a 500-trace
store (the vault's two stores 200 each, another device's 200 records, 50 items per
import source, one pair of daemons for all the sources) with a few repetitions of
each, targets not judged, results to ``bench/results-quick.json``; about 40 s on two
idle CPUs (:class:`Plan`).

How each figure is made (details in the docstrings of the scripts it reuses):

- The corpus: realistic developer notes from ``workload.iter_notes`` (seeded), ages
  and deadlines relative to the wall clock at the start of the run. One store grows
  from tier to tier: each tier's notes are written in-process (``Store(durable=False)``,
  batches of 1,000) and into an FTS5 table (``optimize``-d after each tier), then
  ``hikmahd`` is started on that data dir.
- Recall: 1-, 3- and 8-term queries (``recall.make_query_sets``: "1 common",
  "3 = 1 common + 2 mid", "8 = 2 common + 6 mid") through the daemon's socket, one
  client, one request in flight, ``limit`` 10 (the policy's ``recall_limit`` raised to
  10), timed from the send to the whole reply read; against FTS5 ``bm25()`` top 10
  in-process (no socket, rowids only: in the baseline's favour), interleaved query
  by query.
- Start: ``Popen`` to the socket accepting a connection (polled every 2 ms), median
  of several starts, and to the "promise queue loaded" log line; the baseline is the
  same daemon on an empty store. Memory: the daemon's ``VmRSS`` once the queue is
  loaded and after warming recall up, and its heap alone (``RssAnon``; the rest is
  ``RssFile``, the LMDB pages it has mapped), over the empty store's.
- Remember: ``rpc.write_phase`` (durable and ``--unsafe-no-sync`` daemons alternately,
  raw LMDB durable commits of the same bytes).
- CLI: ``hikmah recall`` (the venv's entry point) against the tier's daemon, median
  wall time, over ``python -c pass`` with the venv's interpreter (the fair baseline:
  the same interpreter and site-packages, judged) and over ``python3 -c pass`` as
  found on PATH (reported).
- Recall as of the past: each query of the three sets (100 a set) recalled now, as of
  the record before the last and as of the middle record, taking turns
  (``bench/asof.py``); the ratio is against the same recall now.
- Browse: each query of the three sets (40 a set) typed a character at a time into
  the tier's daemon, each prefix's recall timed with ``hikmah browse``'s asyncio client
  (the params its search sends), against the CLI's blocking client (``bench/browse.py``).
- Reminder lateness: ``reminders.lateness_rows`` on a copy of the 100k store, 16
  clients recalling, over the idle run.
- Bulk import: ``memory.import`` if the daemon serves it (batches of 500 lines, one
  request at a time, into an empty durable daemon), over the in-process build rate
  of the same notes ("not available" otherwise), and over the same import into a
  daemon with the semantic channel off.
- The semantic channel is on (the default) wherever a daemon serves, and every
  figure waits until it is ready: recall is fused, writes embed. Its vectors are
  built in-process with the store at each tier (the HNSW graph past 50k on two
  threads) and saved, so the daemon loads them at start; "start to semantic
  channel ready" is how long that takes in the background after READY. Remember
  throughput is also measured against a durable daemon with the channel off.
- The screen: ``screen.measure``, the screen of an agent's note, of 2 KiB and of
  256 KiB of prose, over the credential detector on the same texts (every write pays
  the detector; an agent's also the screen).
- hikmah-agent's start: ``agent.measure``, the installed script from its start to
  the answers to ``initialize`` and ``tools/list`` (sent at once, as a host does),
  over ``python -c pass`` with the venv's interpreter, run by run in turn; the
  import of the MCP SDK's server reported beside them.
- Import from other tools: ``migration.measure_all``, a generated export of 10k
  items per source (50 with ``--quick``) through the real CLI, ``hikmah import
  --from SOURCE PATH``, into an empty durable daemon (with ``--quick``, every source
  into the same one), over ``hikmah import`` of the same traces as JSON Lines into
  another; and the re-import (nothing written) over the import (bench/migration.py
  has the details).
- The vault: ``vault.measure`` on the load tier's size (200 traces with ``--quick``),
  two in-process stores with the same notes, one sealed: durable remember batches of
  8 and recall p50/p95, vault on over vault off (bench/vault.py has the details).
- Sync: ``sync.measure``: a commit on one real daemon to recallable on another
  through git (the hook of docs/sync.md) and through two Syncthing instances on
  loopback, over the engine alone carrying a small file; the load tier's notes
  applied from another device's chain (looked at and applied, durable) over the
  origin rebuilding its own indexes (bench/sync.py has the details).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agent
import asof
import browse
import lmdb
import migration
import reminders
import rpc
import screen
import sync
import vault
from report import Figure, Target, label, plot, table
from scale import (
    QUERY_SETS,
    Corpus,
    Empty,
    ImportResult,
    Repeats,
    TierResult,
    measure_empty,
    measure_import,
    measure_tier,
)

from tests.harness.stats import percentile

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
QUICK_RESULTS = HERE / "results-quick.json"
PLOT = HERE / "recall-scaling.png"
KIB, MIB = 1024, 1 << 20
QUICK_TIER = 500  # --quick's one tier
RATIO_TIER, RATIO_TARGET = 100_000, 0.5  # recall p50/p95 at most 0.5x FTS5 at 100k
BIG_TIER, BIG_P50_MS, BIG_P95_MS = 1_000_000, 25.0, 100.0
READY_TARGET_S = 1.0
WRITE_TARGET = 0.8  # 16 durable clients at least 0.8x the no-sync daemon
SEMANTIC_WRITE_TARGET = 0.9  # durable remember within 10% of the semantic channel off
SEMANTIC_IMPORT_TARGET = 0.8  # bulk import at least 0.8x its rate with the channel off
IMPORT_TARGET = 5000.0  # traces/s through memory.import
LONE_WRITER_TARGET = 0.5  # one client's durable remember over a raw LMDB sync commit
CLI_TARGET = 2.5
FIRST_ANSWER_TARGET_S = 0.1  # status and recall after a restart, from the socket accepting
CONNECT_TARGET_MS = 0.5  # what a new connection adds to a call
LATENESS_TARGET_MS = 50.0
# Codex offers the model only the MCP servers that answered within about a second.
AGENT_READY_TARGET_MS = 500.0
# Coming over from another tool costs at most twice importing Hikmah's own export.
MIGRATION_TARGET = 2.0


@dataclass(frozen=True)
class Plan:
    """What one run measures, and how many times."""

    quick: bool
    tiers: list[int]  # in the table
    plot_tiers: list[int]  # recall only, for the plot
    load_tier: int  # reminder lateness and bulk import run on this one
    queries: int  # per query set, up to 100k
    big_queries: int  # per query set, past 100k
    warmup: int
    starts: int
    cli_runs: int
    typed: int  # queries per query set typed a keystroke at a time (browse)
    past: int  # queries per query set recalled as of the past
    write_seconds: float
    write_warmup: float  # seconds of requests before each measurement
    write_rounds: int
    lateness_clients: int
    lateness_seconds: float
    lateness_reminders: int
    lateness_lead: float  # seconds from writing a run's commitments to the first deadline
    sync_samples: int  # commits timed to recallable, per engine
    sync_records: int  # another device's records applied
    migration_items: int  # per source
    migration_runs: int
    vault_traces: int  # in each of the two stores
    vault_batches: int  # durable write batches
    screen_repeats: int

    @classmethod
    def of(cls, args: argparse.Namespace) -> Plan:
        if args.quick:
            # Every figure at sizes that exercise its code, about 40 s on 2 idle CPUs: most
            # of it is daemon starts (each loads the model) and embedding what is written.
            return cls(
                quick=True, tiers=[QUICK_TIER], plot_tiers=[], load_tier=QUICK_TIER,
                queries=args.queries or 20, big_queries=args.queries or 20, warmup=3,
                starts=1, cli_runs=1, typed=1, past=10, write_seconds=0.15, write_warmup=0.1,
                write_rounds=1, lateness_clients=4, lateness_seconds=0.5, lateness_reminders=20,
                lateness_lead=1.0, sync_samples=1, sync_records=200, migration_items=50,
                migration_runs=1, vault_traces=200, vault_batches=20, screen_repeats=2,
            )  # fmt: skip
        tiers = [10_000, 100_000] + ([BIG_TIER] if args.one_million else [])
        plot = [30_000] + ([300_000] if args.one_million else [])
        return cls(
            quick=False, tiers=tiers, plot_tiers=plot, load_tier=100_000,
            queries=args.queries or 200, big_queries=args.queries or 100, warmup=20, starts=3,
            cli_runs=20, typed=browse.QUERIES, past=asof.QUERIES, write_seconds=2.0,
            write_warmup=rpc.WARMUP_S, write_rounds=2, lateness_clients=16, lateness_seconds=5.0,
            lateness_reminders=100, lateness_lead=reminders.FIRST_DEADLINE_S,
            sync_samples=10, sync_records=100_000, migration_items=10_000, migration_runs=3,
            vault_traces=100_000, vault_batches=300, screen_repeats=5,
        )  # fmt: skip

    def repeats(self, size: int) -> Repeats:
        """At a table tier everything; at a plot-only tier, recall."""
        full = size in self.tiers
        return Repeats(
            queries=self.queries if size <= 100_000 else self.big_queries,
            warmup=self.warmup,
            starts=self.starts if full else 1,
            connects=(20 if self.quick else 300) if full else 3,
            cli_runs=self.cli_runs if full else 0,
            typed=self.typed,
            past=self.past,
        )


# --- the measurements the plan sizes ---------------------------------------------------


def measure_writes(root: Path, plan: Plan, stack: contextlib.ExitStack) -> list[rpc.Measured]:
    opts = rpc.Options(
        plan.write_seconds, [1, 16], 1, plan.write_rounds, keep=False, warmup_s=plan.write_warmup
    )
    directory = root / "writes"
    directory.mkdir(mode=0o700)
    return rpc.write_phase(directory, opts, stack)


def measure_lateness(
    root: Path, plan: Plan, data: Path, stack: contextlib.ExitStack
) -> list[reminders.LatenessRow]:
    opts = reminders.Options(
        commitments=0,
        clients=plan.lateness_clients,
        seconds=plan.lateness_seconds,
        reminders=plan.lateness_reminders,
        notes=0,
        rounds=1,
        keep=False,
        lead_s=plan.lateness_lead,
    )
    directory = root / "lateness"
    directory.mkdir(mode=0o700)
    return reminders.lateness_rows(directory, opts, stack, data=data)


# --- figures ----------------------------------------------------------------------------


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


def screen_figures(found: dict[str, Any]) -> list[Figure]:
    """The screen of an agent's write beside the credential detector on the same text
    (reported: every write pays the detector, an agent's also the screen)."""
    texts = (("note", "an agent's note (median)"), ("prose_2k", "2 KiB of prose"),
             ("prose_256k", "256 KiB of prose"))  # fmt: skip
    return [
        Figure(
            f"screen of {what} vs the credential detector on it",
            found[f"{key}_screen_ms"],
            "ms",
            found[f"{key}_detector_ms"],
        )
        for key, what in texts
    ]


def agent_figures(found: dict[str, Any], plan: Plan) -> list[Figure]:
    baseline = found["python_pass_ms"]
    figures = [
        Figure(
            "hikmah-agent start to initialize answered vs venv python -c pass",
            found["initialize_ms"],
            "ms",
            baseline,
        ),
        Figure(
            "hikmah-agent start to tools/list answered vs venv python -c pass",
            found["tools_list_ms"],
            "ms",
            baseline,
            Target("value", "<", AGENT_READY_TARGET_MS, "ms"),
            judged=not plan.quick,
        ),
    ]
    if "import_sdk_ms" in found:
        figures.append(
            Figure(
                "MCP SDK server import (hikmah-agent's old start) vs venv python -c pass",
                found["import_sdk_ms"],
                "ms",
                baseline,
            )
        )
    return figures


def migration_figures(rows: list[migration.Row], plan: Plan) -> list[Figure]:
    figures = []
    for row in rows:
        size = label(row.items)
        figures.append(
            Figure(
                f"import --from {row.source}, {size} records end to end vs the same traces"
                " as JSON Lines",
                row.import_ms,
                "ms",
                row.baseline_ms,
                Target("ratio", "<=", MIGRATION_TARGET),
                judged=not plan.quick,
            )
        )
        figures.append(
            Figure(
                f"import --from {row.source} again, {size} records (writes nothing) vs the import",
                row.reimport_ms,
                "ms",
                row.import_ms,
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


def write_figures(rows: list[rpc.Measured], plan: Plan) -> list[Figure]:
    def per_s(target: str, workload: str, clients: int) -> float:
        return rpc.find(rows, target, workload, clients).per_s

    raw1 = per_s("raw LMDB, commit per write", "durable put+commit", 1)
    raw16 = per_s("raw LMDB, commit per 16 writes", "durable put+commit", 16)
    figures = []
    for n in (1, 16):
        durable = per_s("hikmahd durable", "memory.remember", n)
        nosync = per_s("hikmahd no-sync", "memory.remember", n)
        lexical = per_s("hikmahd durable, semantic off", "memory.remember", n)
        clients = "1 client" if n == 1 else f"{n} clients"
        target = Target("ratio", ">=", WRITE_TARGET) if n == 16 else None
        figures += [
            Figure(
                f"remember durable, {clients}, writes/s vs durable with the semantic channel off",
                durable,
                "/s",
                lexical,
                Target("ratio", ">=", SEMANTIC_WRITE_TARGET),
                judged=not plan.quick,
            ),
            Figure(
                f"remember durable, {clients}, writes/s vs daemon no-sync",
                durable,
                "/s",
                nosync,
                target,
                judged=not plan.quick,
            ),
            Figure(
                f"remember durable, {clients}, writes/s vs raw LMDB commit per write",
                durable,
                "/s",
                raw1,
                Target("ratio", ">=", LONE_WRITER_TARGET) if n == 1 else None,
                judged=not plan.quick,
            ),
        ]
        if n == 16:
            figures.append(
                Figure(
                    f"remember durable, {clients}, writes/s vs raw LMDB commit per 16 writes",
                    durable,
                    "/s",
                    raw16,
                )
            )
    return figures


def lateness_figures(rows: list[reminders.LatenessRow], size: int, plan: Plan) -> list[Figure]:
    idle, loaded = rows
    return [
        Figure(
            f"reminder lateness p99, {loaded.clients} clients recalling ({label(size)} store)"
            " vs idle",
            loaded.p99_ms,
            "ms",
            idle.p99_ms,
            Target("value", "<", LATENESS_TARGET_MS, "ms"),
            judged=not plan.quick,
        )
    ]


def import_figures(
    found: ImportResult, lexical: ImportResult, corpus_rate: float, size: int, plan: Plan
) -> list[Figure]:
    name = f"bulk import {label(size)} traces, traces/s vs in-process Store.apply (no sync)"
    if not found.available:
        return [Figure(name, None, "/s", corpus_rate, note="not available (no memory.import)")]
    if found.error is not None:
        return [Figure(name, None, "/s", corpus_rate, note=f"refused: {found.error[:60]}")]
    during = f"{label(size)} recall p50 while the vectors catch up with the import vs FTS5"
    caught = found.catching_up
    return [
        Figure(
            name,
            found.per_s,
            "/s",
            corpus_rate,
            Target("value", ">=", IMPORT_TARGET, "/s"),
            judged=not plan.quick,
        ),
        Figure(
            during,
            None if caught is None else caught.hikmah_p50_ms,
            "ms",
            None if caught is None else caught.fts5_p50_ms,
            Target("ratio", "<=", RATIO_TARGET),
            judged=not plan.quick,
            note="caught up before the first query"
            if caught is None
            else f"{caught.queries} queries; p95 {caught.hikmah_p95_ms:.2f}"
            f" vs {caught.fts5_p95_ms:.2f} ms",
        ),
        Figure(
            f"bulk import {label(size)} traces, traces/s vs the semantic channel off",
            found.per_s,
            "/s",
            lexical.per_s,
            Target("ratio", ">=", SEMANTIC_IMPORT_TARGET),
            judged=not plan.quick,
        ),
    ]


# --- the run ----------------------------------------------------------------------------


@dataclass
class Run:
    plan: Plan
    seed: int
    now_ms: int
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def section(self, name: str) -> Iterator[None]:
        """A part of the run; its failure is reported and the rest goes on."""
        began = time.monotonic()
        print(f"== {name}", file=sys.stderr, flush=True)
        try:
            yield
        except Exception as exc:
            traceback.print_exc()
            self.problems.append(f"{name}: {type(exc).__name__}: {exc}"[:500])
        self.details.setdefault("section_seconds", {})[name] = round(time.monotonic() - began, 1)


def execute(run: Run, root: Path) -> None:
    plan = run.plan
    empty: Empty | None = None
    with contextlib.ExitStack() as stack:
        with run.section("empty store (baselines of start and memory)"):
            empty = measure_empty(root, plan.starts, stack)
            run.details["empty"] = asdict(empty)
        with run.section("hikmah-agent start"):
            found = agent.measure(plan.cli_runs)
            run.details["agent"] = found
            run.figures += agent_figures(found, plan)
        with run.section("sync"):
            found = sync.measure(root / "sync", plan.sync_samples, plan.sync_records)
            run.details["sync"] = asdict(found)
            run.figures += sync_figures(found)
        with run.section("the screen on agents' notes"):
            found = screen.measure(plan.screen_repeats)
            run.details["screen"] = found
            run.figures += screen_figures(found)
        with run.section("import from other tools"):
            folder = root / "migration"
            folder.mkdir(mode=0o700)
            rows = migration.measure_all(
                folder, plan.migration_items, plan.migration_runs, shared=plan.quick
            )
            run.details["migration"] = [asdict(r) for r in rows]
            run.figures += migration_figures(rows, plan)
        with run.section("remember throughput"):
            writes = measure_writes(root, plan, stack)
            run.details["writes"] = [asdict(w) for w in writes]
            run.problems += [
                f"remember: {w.errors} errors ({w.first_error})" for w in writes if w.errors
            ]
            run.figures += write_figures(writes, plan)
        corpus = Corpus(root / "corpus", run.seed, run.now_ms)
        tiers: list[TierResult] = []
        for size in sorted(plan.tiers + plan.plot_tiers):
            full = size in plan.tiers
            with run.section(f"{label(size)} tier" + ("" if full else " (plot only)")):
                tier = measure_tier(corpus, size, plan.repeats(size), root, run.seed, stack)
                tiers.append(tier)
                if full and empty is not None:
                    run.figures += tier_figures(tier, empty, plan)
            if size == plan.load_tier:
                load_figures(run, root, corpus, size, stack)
        run.details["tiers"] = [asdict(t) for t in tiers]
        run.details["corpus"] = {
            "seed": run.seed,
            "now_ms": run.now_ms,
            "refused": dict(corpus.refused),
        }
        corpus.db.close()
    timings = [t for tier in tiers for t in tier.recall]
    with run.section("plot"):
        # Quick mode exercises the plotting code without touching the committed PNG.
        target = root / "recall-scaling.png" if plan.quick else PLOT
        when = datetime.fromtimestamp(run.now_ms / 1000, UTC).strftime("%Y-%m-%d")
        title = (
            f"Recall top 10 vs store size: Hikmah through its socket, FTS5 in-process"
            f" ({when}, {os.cpu_count()} CPUs)"
        )
        run.details["plot"] = plot(timings, target, title, QUERY_SETS)
        print(run.details["plot"], file=sys.stderr)


def load_figures(
    run: Run, root: Path, corpus: Corpus, size: int, stack: contextlib.ExitStack
) -> None:
    """Reminder lateness and bulk import, on the load tier."""
    with run.section(f"reminder lateness ({label(size)} store)"):
        rows = measure_lateness(root, run.plan, corpus.data_dir, stack)
        run.details["lateness"] = [asdict(r) for r in rows]
        for r in rows:
            if r.received < r.expected or r.recall_errors:
                run.problems.append(
                    f"lateness {r.load}: {r.received}/{r.expected} reminders,"
                    f" {r.recall_errors} recall errors ({r.first_error})"
                )
        run.figures += lateness_figures(rows, size, run.plan)
    with run.section(f"bulk import ({label(size)})"):
        sets = corpus.query_sets(run.plan.queries, run.seed)
        mixed = [words for qs in sets.values() for words in qs.queries]
        found = measure_import(
            root, size, run.seed, run.now_ms, stack, corpus=corpus, queries=mixed
        )
        lexical = measure_import(root, size, run.seed, run.now_ms, stack, semantic=False)
        run.details["import"] = asdict(found) | {"per_s": found.per_s}
        run.details["import_semantic_off"] = asdict(lexical) | {"per_s": lexical.per_s}
        for result in (found, lexical):
            if result.error is not None:
                run.problems.append(f"bulk import: {result.error}")
        rate = corpus.kept / corpus.hikmah_s
        run.figures += import_figures(found, lexical, rate, size, run.plan)
    with run.section(f"the vault ({label(run.plan.vault_traces)})"):
        sealed = vault.measure(
            root / "vault", run.plan.vault_traces, run.plan.queries, run.plan.vault_batches
        )
        run.details["vault"] = asdict(sealed)
        run.figures += vault_figures(sealed)


def sync_figures(found: sync.SyncResult) -> list[Figure]:
    figures = [
        Figure(
            "git: commit on one device to recallable on another vs the git round trip alone",
            found.git.median,
            "s",
            found.git.baseline,
        )
    ]
    st = found.syncthing
    name = "Syncthing: commit to recallable on another device vs a 300-byte file crossing"
    if st is None:
        figures.append(Figure(name, None, "s", note="not measured (no syncthing)"))
    else:
        figures.append(Figure(name, st.median, "s", st.baseline))
    a = found.apply
    figures.append(
        Figure(
            f"{label(a.records)} remote records looked at and applied vs rebuilt locally",
            a.look_s + a.apply_s,
            "s",
            a.rebuild_s,
        )
    )
    return figures


def vault_figures(found: vault.VaultResult) -> list[Figure]:
    size = label(found.traces)
    writes = found.writes_per_s
    figures = [
        Figure(
            f"{size} vault on, remember durable (batches of 8), traces/s vs vault off",
            writes["on"],
            "/s",
            writes["off"],
        )
    ]
    for what, seconds in found.vectors_s.items():
        figures.append(
            Figure(
                f"{size} vault on, the vector file's {what} (sealed) vs vault off",
                seconds["on"],
                "s",
                seconds["off"],
            )
        )
    for short, name in QUERY_SETS.items():
        on, off = found.recall_ms[name]["on"], found.recall_ms[name]["off"]
        for i, q in ((0, "p50"), (1, "p95")):
            figures.append(
                Figure(
                    f"{size} vault on, recall {short} {q} in-process vs vault off",
                    on[i],
                    "ms",
                    off[i],
                )
            )
    return figures


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "python_path": sys.executable,
        "sqlite": sqlite3.sqlite_version,
        "lmdb": ".".join(map(str, lmdb.version())),
        "platform": platform.platform(),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    p.add_argument("--quick", action="store_true", help="CI smoke mode: tiny sizes, < 1 min")
    p.add_argument("--1m", dest="one_million", action="store_true", help="add the 1M tier")
    p.add_argument("--queries", type=int, help="queries per query set (200; 100 past 100k)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, help="the JSON (bench/results.json)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (stores, logs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # The processes started here cache their bytecode, as an installed hikmah does: with
    # PYTHONDONTWRITEBYTECODE set (as on these machines), every CLI run and daemon start
    # would compile again each module edited since its cache was last written.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # A stopped run still stops its daemons (they run in sessions of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = Plan.of(args)
    out = args.out or (QUICK_RESULTS if plan.quick else RESULTS)
    run = Run(plan, args.seed, time.time_ns() // 1_000_000)
    root = Path(tempfile.mkdtemp(prefix="hkbench", dir="/tmp"))  # short: socket paths
    began = time.monotonic()
    try:
        execute(run, root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - began
    command = " ".join(["bench/run", *(sys.argv[1:] if argv is None else argv)])
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    info = machine()
    print(f"\n{command}  ({stamp}, {elapsed:.0f} s)")
    print(
        f"{info['cpus']} CPUs, Python {info['python']}, SQLite {info['sqlite']},"
        f" LMDB {info['lmdb']}"
    )
    print(table(run.figures))
    if plan.quick:
        print("quick mode: tiny sizes and few repetitions; targets are not judged")
    print(f"plot: {run.details.get('plot', 'not made')}")
    if args.keep:
        print(f"kept {root}")
    missed = [f.name for f in run.figures if f.met is False]
    if missed:
        print(f"{len(missed)} targets missed:", *(f"  {name}" for name in missed), sep="\n")
    for problem in run.problems:
        print(f"PROBLEM: {problem}")
    report = {
        "command": command,
        "date": stamp,
        "seconds": round(elapsed, 1),
        "machine": info,
        "plan": asdict(plan),
        "figures": [f.to_json() for f in run.figures],
        "problems": run.problems,
        **run.details,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 1 if run.problems else 0


if __name__ == "__main__":
    sys.exit(main())
