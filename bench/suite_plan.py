"""What one run of the suite measures and how many times (``--quick``, ``--1m`` or the
default), and the parts it sizes that other scripts measure."""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from pathlib import Path

import asof
import browse
import reminders
import rpc_phases
from lateness import LatenessRow
from rpc_clients import WARMUP_S
from scale import Repeats
from suite_targets import BIG_TIER

QUICK_TIER = 500  # --quick's one tier


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
            write_warmup=WARMUP_S, write_rounds=2, lateness_clients=16, lateness_seconds=5.0,
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


def measure_writes(
    root: Path, plan: Plan, stack: contextlib.ExitStack
) -> list[rpc_phases.Measured]:
    opts = rpc_phases.Options(
        plan.write_seconds, [1, 16], 1, plan.write_rounds, keep=False, warmup_s=plan.write_warmup
    )
    directory = root / "writes"
    directory.mkdir(mode=0o700)
    return rpc_phases.write_phase(directory, opts, stack)


def measure_lateness(
    root: Path, plan: Plan, data: Path, stack: contextlib.ExitStack
) -> list[LatenessRow]:
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
