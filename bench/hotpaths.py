"""Where the time goes: the hot paths one at a time, for docs/performance.md.

    .venv/bin/python bench/hotpaths.py store DIR [--size 100000]   # build a corpus to profile
    .venv/bin/python bench/hotpaths.py recall DIR [--passes 3] [--set "3 = "]
    .venv/bin/python bench/hotpaths.py apply [--batch 8] [--traces 4000]
    .venv/bin/python bench/hotpaths.py cli SOCKET [--runs 5]
    .venv/bin/python bench/hotpaths.py top SPY.txt [--under FUNCTION] [--lines 25]

Each command times one path with the clock it needs (CPU time where other load on
the machine would blur wall time) and prints a few lines. For the call-level view
run it under py-spy and read the samples back with ``top``::

    .venv/bin/py-spy record -r 500 -f raw -o /tmp/recall.txt -- \\
        .venv/bin/python bench/hotpaths.py recall /tmp/hkprof --set "3 = "
    .venv/bin/python bench/hotpaths.py top /tmp/recall.txt --under "recall (hikmah/recall.py"

- ``store``: the suite's corpus (``corpus.Corpus``) at one size in ``DIR``, kept, with
  the word counts the query sets are drawn from (``DIR/meta.json``). Start hikmahd on it
  with ``--data-dir DIR/data --policy DIR/policy.toml``. ``bench/run --keep`` leaves
  the same in ``/tmp/hkbench*/corpus`` (at its largest tier).
- ``recall``: in-process ``hikmah.recall.ranking.recall`` over the suite's query sets, and what
  the daemon does with the results: ``msgspec.to_builtins`` then the JSON encode (and,
  for comparison, encoding the result Structs directly).
- ``apply``: ``Store.apply`` CPU time per trace in batches of ``--batch`` (the writer's
  batch: about 8 writes per commit under 16 clients), on a fresh store without sync.
- ``cli``: the CLI's phases in one process: import, parser build, parse, the call, the
  render (``python -X importtime`` breaks the import down further).
- ``top``: self and inclusive sample shares per function of a py-spy ``raw`` file,
  optionally only of the stacks through ``--under``.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import recall as recall_bench
from corpus import QUERY_SETS, Corpus
from workload import make_notes, remember

from hikmah.model.policy import KernelPolicy
from hikmah.store.core import Store


def store(args: argparse.Namespace) -> None:
    corpus = Corpus(args.dir, args.seed, time.time_ns() // 1_000_000)
    corpus.grow(args.size)
    corpus.db.close()
    print(
        f"{corpus.kept:,} traces in {args.dir}: Hikmah {corpus.hikmah_s:.1f} s,"
        f" FTS5 {corpus.fts5_s:.1f} s"
    )


def recall(args: argparse.Namespace) -> None:
    import msgspec  # noqa: PLC0415

    from hikmah.model.recall import RecallQuery  # noqa: PLC0415
    from hikmah.recall.ranking import recall as run_recall  # noqa: PLC0415

    meta = json.loads((args.dir / "meta.json").read_text())
    sets = recall_bench.make_query_sets(meta["notes_with"], meta["kept"], 200, args.seed)
    wanted = [*QUERY_SETS.values(), "1 mid"]
    policy = KernelPolicy(recall_limit=recall_bench.TOP_K)
    encoder = msgspec.json.Encoder()
    with Store(args.dir / "data") as hikmah:
        for qs in sets:
            if qs.name not in wanted or (args.set and args.set not in qs.name):
                continue
            times: dict[str, list[float]] = collections.defaultdict(list)
            for _ in range(args.passes):
                for words in qs.queries:
                    query = RecallQuery(query=" ".join(words), limit=recall_bench.TOP_K)
                    t0 = time.perf_counter()
                    results = hikmah.read(
                        run_recall,
                        query,
                        now_ms=meta["now_ms"],
                        policy=policy,
                        vectors=hikmah.semantic,
                    )
                    t1 = time.perf_counter()
                    plain = msgspec.to_builtins(results)
                    t2 = time.perf_counter()
                    encoder.encode({"jsonrpc": "2.0", "result": {"results": plain}, "id": 1})
                    t3 = time.perf_counter()
                    encoder.encode({"jsonrpc": "2.0", "result": {"results": results}, "id": 1})
                    t4 = time.perf_counter()
                    for name, took in (
                        ("recall", t1 - t0),
                        ("to_builtins", t2 - t1),
                        ("encode", t3 - t2),
                        ("encode Structs", t4 - t3),
                    ):
                        times[name].append(took * 1000)
            cells = ", ".join(f"{name} {statistics.median(v):.3f}" for name, v in times.items())
            print(f"{qs.name:<22} p50 ms: {cells}")


def apply(args: argparse.Namespace) -> None:
    notes = make_notes(1000 + args.traces, args.seed, time.time_ns() // 1_000_000)
    policy = KernelPolicy()
    with (
        tempfile.TemporaryDirectory(prefix="hkprof", dir="/tmp") as tmp,
        Store(Path(tmp) / "data", durable=False) as hikmah,
    ):
        hikmah.apply([remember(n) for n in notes[:1000]], now_ms=notes[0].created_at, policy=policy)
        work = notes[1000:]
        began = time.process_time()
        for first in range(0, len(work), args.batch):
            batch = [remember(n) for n in work[first : first + args.batch]]
            hikmah.apply(batch, now_ms=time.time_ns() // 1_000_000, policy=policy)
        cpu = time.process_time() - began
    print(
        f"Store.apply, batches of {args.batch}: {1e6 * cpu / len(work):.0f} us CPU per trace"
        f" ({len(work) / cpu:,.0f} traces per CPU second)"
    )


def cli(args: argparse.Namespace) -> None:
    """The CLI's phases, CPU time, median of fresh processes (each imports anew)."""
    code = f"""
import time
c0 = time.process_time()
import hikmah_cli.__main__ as m
c1 = time.process_time()
parser = m.build_parser()
c2 = time.process_time()
a = parser.parse_args(["--socket", {str(args.socket)!r}, "recall", "deploy cache worker"])
c3 = time.process_time()
command = m.BY_NAME[a.command]
method, params = command.request(a)
result = m.call(a, method, params)
c4 = time.process_time()
command.show(result)
c5 = time.process_time()
print(*(round(1000 * x, 2) for x in (c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4)))
"""
    import subprocess  # noqa: PLC0415

    rows = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        rows.append([float(x) for x in out.stdout.split()])
    names = ["import", "build_parser", "parse_args", "call (connect+recall)", "render"]
    medians = [statistics.median(column) for column in zip(*rows, strict=True)]
    print(
        "CPU ms, median of",
        args.runs,
        "processes:",
        ", ".join(f"{n} {m:.1f}" for n, m in zip(names, medians, strict=True)),
    )


def top(args: argparse.Namespace) -> None:
    self_samples: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in args.file.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_function(f) for f in stack.split(";")]
        if args.under and not any(args.under in f for f in frames):
            continue
        total += int(count)
        self_samples[frames[-1]] += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
    print(f"{total} samples" + (f" through {args.under!r}" if args.under else ""))
    for title, counter in (("self", self_samples), ("inclusive", inclusive)):
        print(f"-- {title}")
        for name, n in counter.most_common(args.lines):
            print(f"{100 * n / total:5.1f}%  {name}")


def _function(frame: str) -> str:
    """``name (path:line)`` as ``name (short path)``: samples add up per function."""
    frame = re.sub(r":\d+\)$", ")", frame)
    return re.sub(r" \((?:.*/site-packages/|.*/lib/python3\.\d+/|.*/(?:src|daemon|clients)/)", " (",
                  frame)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=7)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("store", help="build a corpus to profile")
    p.add_argument("dir", type=Path)
    p.add_argument("--size", type=int, default=100_000)
    p.set_defaults(run=store)
    p = commands.add_parser("recall", help="in-process recall and its encoding")
    p.add_argument("dir", type=Path)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--set", help="only the query sets whose name holds this")
    p.set_defaults(run=recall)
    p = commands.add_parser("apply", help="Store.apply CPU per trace")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--traces", type=int, default=4000)
    p.set_defaults(run=apply)
    p = commands.add_parser("cli", help="the CLI's phases")
    p.add_argument("socket", type=Path)
    p.add_argument("--runs", type=int, default=5)
    p.set_defaults(run=cli)
    p = commands.add_parser("top", help="aggregate a py-spy raw file")
    p.add_argument("file", type=Path)
    p.add_argument("--under", help="only stacks through a frame holding this")
    p.add_argument("--lines", type=int, default=25)
    p.set_defaults(run=top)
    args = parser.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
