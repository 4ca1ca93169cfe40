"""Where a recall spends its time in the daemon, part by part, with the suite's queries.

hikmahd (the semantic channel on) is started on a kept corpus (``bench/hotpaths.py
store DIR``, or ``bench/run --keep``'s) and wrapped to time each part of every recall:
the query's embedding (on its own thread) and the model's run in it, the lexical
candidates, the wait for the embedding, the vector search, the fused pool, the
selection, the whole of the ranking. One client recalls one query set for
``--seconds``; prints each part's median over the recalls after the first quarter::

    .venv/bin/python bench/recall_steps.py --corpus DIR [--set "3 = "] [--seconds 5]
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recall as recall_bench
from servers import wait_semantic_ready
from socket_recall import Client
from write_steps import serve_wrapped, serving_parser

from tests.harness.sockets import wait_for_socket

# (class path, method, what it is): each call's duration, by what it is
PARTS = (
    ("hikmah.semantic.store_vectors.SemanticIndex", "embed_query", "the query's embedding"),
    ("onnxruntime.InferenceSession", "run", "  the model's run"),
    ("hikmah.recall.ranking._Scorer", "_candidates", "the lexical candidates"),
    ("hikmah.recall.ranking._Scorer", "_semantic", "the wait for the embedding"),
    ("hikmah.semantic.store_vectors.SemanticIndex", "search", "the vector search"),
    ("hikmah.recall.ranking._Scorer", "_fused", "the fused pool (search included)"),
    ("hikmah.recall.ranking._Scorer", "_select", "the selection"),
    ("hikmah.recall.ranking._Scorer", "run", "the ranking in all"),
)


def timed(durations: dict[str, list[int]], method: Callable[..., Any], part: str) -> Any:
    """``method`` that appends each call's duration (ns) to ``durations[part]``."""
    clock = time.perf_counter_ns

    @functools.wraps(method)
    def called(*args: Any, **kwargs: Any) -> Any:
        began = clock()
        try:
            return method(*args, **kwargs)
        finally:
            durations.setdefault(part, []).append(clock() - began)

    return called


def serve(argv: list[str], report: Path) -> None:
    """Run hikmahd with every part timed; write the durations to ``report`` when it stops."""
    durations: dict[str, list[int]] = {}
    wrappers = [
        (path, name, lambda method, part=part: timed(durations, method, part))
        for path, name, part in PARTS
    ]
    serve_wrapped(argv, wrappers, lambda: report.write_text(json.dumps(durations)))


def measure(corpus: Path, wanted: str, seconds: float) -> None:
    meta = json.loads((corpus / "meta.json").read_text())
    sets = recall_bench.make_query_sets(meta["notes_with"], meta["kept"], 40, 7)
    chosen = next(qs for qs in sets if qs.name.startswith(wanted))
    root = Path(tempfile.mkdtemp(prefix="hkrecall"))
    report = root / "parts.json"
    argv = ["--socket", str(root / "s"), "--data-dir", str(corpus / "data"),
            "--policy", str(corpus / "policy.toml")]  # fmt: skip
    command = [sys.executable, __file__, "--serve", str(report), "--", *argv]
    log = root / "log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    times: list[float] = []
    try:
        wait_for_socket(root / "s", daemon, log)
        channel = wait_semantic_ready(root / "s")
        client = Client(root / "s")
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for words in chosen.queries:
                    began = time.perf_counter()
                    client.recall(words)
                    times.append((time.perf_counter() - began) * 1000)
        finally:
            client.close()
    finally:
        daemon.terminate()
        daemon.wait()
    graph = f"{channel['graph']} of {channel['vectors']} vectors in the graph"
    print(f"{chosen.name!r}: {len(times)} recalls, p50 {statistics.median(times):.2f} ms; {graph}")
    durations = json.loads(report.read_text())
    for _, _, part in PARTS:
        found = durations.get(part, [])
        kept = found[len(found) // 4 :]
        if kept:
            print(f"  {part:40s} median {statistics.median(kept) / 1e6:6.2f} ms")


def main() -> None:
    parser = serving_parser(__doc__)
    parser.add_argument("--corpus", type=Path, help="a kept corpus (hotpaths.py store DIR)")
    parser.add_argument("--set", default="3 = ", help="the query set whose name starts so")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.daemon, args.serve)
    elif args.corpus is None:
        parser.error("give a kept corpus: --corpus DIR")
    else:
        measure(args.corpus, args.set, args.seconds)


if __name__ == "__main__":
    main()
