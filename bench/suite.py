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
idle CPUs (``suite_plan.Plan``).

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
- Remember: ``rpc_phases.write_phase`` (durable and ``--unsafe-no-sync`` daemons alternately,
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

This module runs the parts and writes the results; the plan of a run is
``suite_plan.py``, the targets ``suite_targets.py``, the table's figures
``tier_figures.py`` (each tier's) and ``part_figures.py`` (the rest), the table and
the plot ``report.py``.
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
import lmdb
import migration
import screen
import sync
import vault
from bulk_import import measure_import
from corpus import QUERY_SETS, Corpus
from part_figures import (
    agent_figures,
    import_figures,
    lateness_figures,
    migration_figures,
    screen_figures,
    sync_figures,
    vault_figures,
    write_figures,
)
from report import Figure, label, plot, table
from scale import Empty, TierResult, measure_empty, measure_tier
from suite_plan import Plan, measure_lateness, measure_writes
from tier_figures import tier_figures

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
QUICK_RESULTS = HERE / "results-quick.json"
PLOT = HERE / "recall-scaling.png"


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
