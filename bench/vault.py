"""What the vault costs: remember throughput and recall latency, vault on against off.

    .venv/bin/python bench/vault.py [--size 100000] [--queries 200] [--batches 300]

Two stores get the same synthetic notes (bench/workload.py), one plain and one
sealed (keys held in memory: the keyring is touched only when a store opens,
so it is no part of the per-write or per-recall cost). Then, alternating
between the two so that load on the shared machine falls on both alike:

- remember: durable batches of 8 writes (the writer's batch under 16 clients),
  traces per second;
- recall: the suite's query sets (1, 3 and 8 terms), in-process p50 and p95;
- the semantic channel's vector file (both stores have their vectors, built
  and folded as the daemon keeps them): a save (sealed under a fresh data key
  with the vault) and a load (opened and restored), median of three.

Prints a table with each vault figure, its plain baseline from the same run
and the ratio, and writes ``bench/results-vault.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recall as recall_bench
from workload import iter_notes, remember

from hikmah.evaluation.fts5 import surface_words
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.recall.ranking import recall
from hikmah.semantic.models import load_model
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.semantic.vector_file import vectors_path
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors
from hikmah.vault.sealing import HeldKeys
from tests.harness.stats import percentile

SEED = 7
NOW_MS = 1_790_000_000_000
BUILD_BATCH = 1000
WRITE_BATCH = 8
QUERY_SETS = ("1 common", "1 mid", "3 = 1 common + 2 mid", "3 mid", "8 = 2 common + 6 mid")


@dataclass(frozen=True)
class VaultResult:
    traces: int
    writes_per_s: dict[str, float]  # "on", "off"
    recall_ms: dict[str, dict[str, tuple[float, float]]]  # query set -> on/off -> p50, p95
    store_bytes: dict[str, int]
    vectors_s: dict[str, dict[str, float]]  # "save", "load" -> on/off -> seconds


def build(root: Path, size: int) -> tuple[Path, Path, Counter[str], int]:
    """Both stores with the same ``size`` notes; the word counts queries are drawn from."""
    plain_dir, sealed_dir = root / "plain", root / "sealed"
    keys = HeldKeys()
    policy = KernelPolicy()
    notes_with: Counter[str] = Counter()
    kept = 0
    notes = iter_notes(SEED, NOW_MS)
    # On a terminal the count is rewritten in place; in a log, a line each time.
    live = sys.stderr.isatty()
    with (
        Store(plain_dir, durable=False) as plain,
        Store(sealed_dir, durable=False, vault=keys.loader()) as sealed,
    ):
        done = 0
        while done < size:
            batch = list(islice(notes, min(BUILD_BATCH, size - done)))
            done += len(batch)
            ops = [remember(n) for n in batch]
            outcomes = plain.apply(ops, now_ms=NOW_MS, policy=policy)
            sealed.apply(ops, now_ms=NOW_MS, policy=policy)
            for note, outcome in zip(batch, outcomes, strict=True):
                if not isinstance(outcome, Exception):
                    notes_with.update(surface_words(note.content))
                    kept += 1
            progress = f"built {done:,} of {size:,}"
            if live:
                print(f"\r{progress}", end="", file=sys.stderr, flush=True)
            else:
                print(progress, file=sys.stderr, flush=True)
    if live:
        print(file=sys.stderr)
    (root / "keys").write_bytes(keys.master + keys.index)
    return plain_dir, sealed_dir, notes_with, kept


def time_writes(stores: dict[str, Store], batches: int) -> dict[str, float]:
    """Traces per second of durable ``WRITE_BATCH``-write batches, per store."""
    policy = KernelPolicy()
    notes = iter_notes(SEED + 1, NOW_MS)
    spent = dict.fromkeys(stores, 0.0)
    for _ in range(batches):
        ops = [remember(n) for n in islice(notes, WRITE_BATCH)]
        for name, store in stores.items():
            began = time.perf_counter()
            store.apply(ops, now_ms=NOW_MS, policy=policy)
            spent[name] += time.perf_counter() - began
    return {name: batches * WRITE_BATCH / s for name, s in spent.items()}


def vectors(stores: dict[str, Store], keys: HeldKeys) -> dict[str, dict[str, float]]:
    """Give both stores their vectors; the median seconds of a save and a load of each."""
    policy = KernelPolicy().semantic
    model = load_model(policy.model, model_cache_dir())
    times: dict[str, dict[str, list[float]]] = {"save": {}, "load": {}}
    for name, store in stores.items():
        semantic = open_vectors(store, model, ann_at=policy.ann_at)
        while semantic.wants_fold():
            semantic.fold(threads=2, slice_size=4096)
        sealing = keys if name == "on" else None
        for _ in range(3):
            began = time.perf_counter()
            semantic.save(sealing)
            times["save"].setdefault(name, []).append(time.perf_counter() - began)
            loaded = SemanticIndex(
                vectors_path(store.data_dir), model.embedder, model=model.name, ann_at=policy.ann_at
            )
            began = time.perf_counter()
            with store.snapshot() as snapshot:
                loaded.load(snapshot, sealing)
            times["load"].setdefault(name, []).append(time.perf_counter() - began)
    return {what: {n: sorted(t)[1] for n, t in by.items()} for what, by in times.items()}


def time_recalls(
    stores: dict[str, Store], sets: list[recall_bench.QuerySet]
) -> dict[str, dict[str, tuple[float, float]]]:
    """(p50, p95) in ms per query set, per store."""
    policy = KernelPolicy()
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for qs in sets:
        times: dict[str, list[float]] = {name: [] for name in stores}
        for words in qs.queries:
            query = RecallQuery(query=" ".join(words))
            for name, store in stores.items():
                began = time.perf_counter()
                store.read(recall, query, now_ms=NOW_MS, policy=policy, vectors=store.semantic)
                times[name].append((time.perf_counter() - began) * 1000)
        out[qs.name] = {name: (percentile(t, 50), percentile(t, 95)) for name, t in times.items()}
    return out


def measure(root: Path, size: int, queries: int, batches: int) -> VaultResult:
    """Build both stores under ``root`` (removed after) and measure them."""
    try:
        plain_dir, sealed_dir, notes_with, kept = build(root, size)
        keys_raw = (root / "keys").read_bytes()
        keys = HeldKeys(master=keys_raw[:32], index=keys_raw[32:])  # type: ignore[arg-type]
        sets = [
            qs
            for qs in recall_bench.make_query_sets(notes_with, kept, queries, SEED)
            if qs.name in QUERY_SETS
        ]
        with (
            Store(plain_dir) as plain,
            Store(sealed_dir, vault=keys.loader()) as sealed,
        ):
            stores = {"off": plain, "on": sealed}
            files = vectors(stores, keys)
            recalls = time_recalls(stores, sets)  # first: on the stores as built
            writes = time_writes(stores, batches)
        sizes = {
            name: sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
            for name, d in (("off", plain_dir), ("on", sealed_dir))
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return VaultResult(kept, writes, recalls, sizes, files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="traces in each store")
    parser.add_argument("--queries", type=int, default=200, help="queries per query set")
    parser.add_argument("--batches", type=int, default=300, help="durable write batches")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results-vault.json"))
    args = parser.parse_args(argv)
    found = measure(Path(tempfile.mkdtemp(prefix="hkvault")), args.size, args.queries, args.batches)
    writes, recalls, sizes, kept = (
        found.writes_per_s,
        found.recall_ms,
        found.store_bytes,
        found.traces,
    )
    rows = [
        ("remember, durable batches of 8 (traces/s)", writes["on"], writes["off"]),
        *(
            (f"recall {name} p{q} (ms)", r["on"][i], r["off"][i])
            for name, r in recalls.items()
            for i, q in ((0, 50), (1, 95))
        ),
        ("store size (MiB)", sizes["on"] / 2**20, sizes["off"] / 2**20),
        *((f"vector file {what} (s)", t["on"], t["off"]) for what, t in found.vectors_s.items()),
    ]
    print(f"vault on against off, {kept:,} traces")
    print(f"{'figure':44} {'vault on':>10} {'vault off':>10} {'ratio':>7}")
    for name, on, off in rows:
        print(f"{name:44} {on:10.2f} {off:10.2f} {on / off:6.2f}x")
    result = {
        "run": asdict(found),
        "traces": kept,
        "figures": [
            {"name": n, "vault_on": on, "vault_off": off, "ratio": on / off} for n, on, off in rows
        ],
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
