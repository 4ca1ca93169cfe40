"""Term weighting and semantic fusion, measured on the evaluation sets through Hikmah's own
recall, policy by policy.

    .venv/bin/python bench/weighting.py [--sets tests/eval/cases.toml,tests/eval/heldout.toml]
        [--model wordllama] [--grid] [--profile] [--longmemeval FILE --split round] [--json]

Each variant is a policy: ``[recall] weighting`` and the ``[semantic]`` fields
(``enabled``, ``weight``, ``floor``, ``full``, ``alone``, ``candidates``), run by
:func:`hikmah.evaluation.harness.evaluate` exactly as ``hikmah eval`` runs it. For every
variant and set: passed, recall@k, MRR, nDCG@k, superseded in any top k, the
paraphrase (``para-``), long (``long-``) and other cases' nDCG, the cases won and
lost against the reference policy, and off-topic admissions: results sharing no term
with 20 questions about nothing in the store. ``--grid`` adds the weight, floor and
full grid; ``--profile`` prints how similar queries are to their answers and to
everything else; ``--longmemeval`` ranks a LongMemEval file's sessions with each
variant (``hikmah.evaluation.longmemeval.run``).

The variants the kernel does not keep (max and "bonus" fusion, reciprocal rank
fusion, BM25-style lexical scores) were measured by this script's prototype, at
commit 707ae3e; docs/semantic.md has their figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import msgspec
import numpy as np

from hikmah.evaluation import longmemeval
from hikmah.evaluation.cases import CaseFile, load_cases
from hikmah.evaluation.harness import EngineReport, _fill_store, evaluate
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy, SemanticPolicy, reference_policy, semantic_off
from hikmah.model.recall import RecallQuery
from hikmah.model.tokenizer import terms
from hikmah.recall.ranking import recall
from hikmah.semantic.models import load_embedder, load_model
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors
from tests.harness.stats import percentile

OFF_TOPIC = [
    "recipe for banana bread",
    "best hiking boots for winter",
    "how do I repot an orchid",
    "chess openings for beginners",
    "what is the capital of mongolia",
    "train times from paris to lyon",
    "how to knit a scarf",
    "symptoms of a cold",
    "tips for learning the guitar",
    "history of the roman empire",
    "what wine goes with fish",
    "how tall is mount kilimanjaro",
    "good books about whales",
    "how to fix a bicycle puncture",
    "birthday gift ideas for a toddler",
    "how do solar panels work",
    "rules of cricket",
    "what time does the bakery open",
    "why is the sky blue",
    "how to meditate",
]


def variants(model: str, grid: bool) -> dict[str, KernelPolicy]:
    """The policies compared, by name; "reference" first."""
    base = KernelPolicy(semantic=SemanticPolicy(model=model))  # type: ignore[arg-type]
    found = {
        "reference": reference_policy(base),
        "idf-cosine": semantic_off(base),
        "reference + semantic": msgspec.structs.replace(
            base, recall=msgspec.structs.replace(base.recall, weighting="reference")
        ),
        "idf-cosine + semantic (default)": base,
    }
    if grid:
        for weight in (0.3, 0.5, 0.7):
            for floor in (0.1, 0.15, 0.2):
                for full in (0.4, 0.5, 0.6):
                    for alone in (0.28, 0.34, 0.4):
                        semantic = msgspec.structs.replace(
                            base.semantic, weight=weight, floor=floor, full=full, alone=alone
                        )
                        name = f"w={weight} floor={floor} full={full} alone={alone}"
                        found[name] = msgspec.structs.replace(base, semantic=semantic)
    return found


def off_topic(cases: CaseFile, policy: KernelPolicy) -> int:
    """Results sharing no term with questions about nothing in the store."""
    count = 0
    with (
        tempfile.TemporaryDirectory(prefix="hikmah-w-") as tmp,
        Store(Path(tmp) / "s", map_size=1 << 25, durable=False) as store,
    ):
        _fill_store(store, cases, policy)
        if policy.semantic.enabled:
            model = load_model(policy.semantic.model, model_cache_dir())
            open_vectors(store, model, ann_at=policy.semantic.ann_at)
        for text in OFF_TOPIC:
            query = RecallQuery(query=text, limit=5)
            for r in store.read(
                recall, query, now_ms=cases.now_ms, policy=policy, vectors=store.semantic
            ):
                if not r.why.overdue and not (terms(text) & terms(r.trace.content)):
                    count += 1
    return count


def row(name: str, report: EngineReport, reference: EngineReport) -> dict[str, Any]:
    s = report.summary
    out: dict[str, Any] = {
        "variant": name,
        "passed": f"{s.passed}/{s.cases}",
        "recall@k": round(s.recall_at_k or 0, 3),
        "MRR": round(s.mrr or 0, 3),
        "nDCG@k": round(s.ndcg_at_k or 0, 3),
        "superseded": s.superseded_in_top_k,
    }
    for group in ("para-", "long-"):
        picked = [c for c in report.cases if c.name.startswith(group) and c.ndcg is not None]
        if picked:
            out[f"{group}nDCG"] = round(sum(c.ndcg or 0 for c in picked) / len(picked), 3)
    rest = [
        c for c in report.cases if not c.name.startswith(("para-", "long-")) and c.ndcg is not None
    ]
    out["other-nDCG"] = round(sum(c.ndcg or 0 for c in rest) / len(rest), 3)
    better = worse = 0
    for a, r in zip(report.cases, reference.cases, strict=True):
        better += (a.passed, a.ndcg or 0) > (r.passed, r.ndcg or 0)
        worse += (a.passed, a.ndcg or 0) < (r.passed, r.ndcg or 0)
    out["won"], out["lost"] = better, worse
    return out


def profile(cases: CaseFile, model: str) -> dict[str, Any]:
    """Cosine of each query with its expected traces and with every other trace, and the
    best cosine each off-topic question reaches."""
    embedder = load_embedder(model, model_cache_dir())
    keys = [t.key for t in cases.trace]
    vectors = embedder.embed([t.content for t in cases.trace])
    relevant, other = [], []
    for case in cases.case:
        if not case.query.strip() or not case.expect:
            continue
        sims = vectors @ embedder.embed_query(case.query)
        for key, sim in zip(keys, sims.tolist(), strict=True):
            (relevant if key in case.expect else other).append(sim)
    best = sorted(float((vectors @ embedder.embed([q])[0]).max()) for q in OFF_TOPIC)
    return {
        "relevant_median": round(float(np.median(relevant)), 3),
        "relevant_p10": round(percentile(relevant, 10), 3),
        "unrelated_median": round(float(np.median(other)), 3),
        "unrelated_p99": round(percentile(other, 99), 3),
        "off_topic_best": [round(x, 3) for x in best],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="tests/eval/cases.toml,tests/eval/heldout.toml")
    parser.add_argument("--model", default="wordllama")
    parser.add_argument("--grid", action="store_true", help="add the fusion grid")
    parser.add_argument("--only", default="", help="variants to run (and reference)")
    parser.add_argument("--profile", action="store_true", help="print similarity profiles")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--longmemeval", type=Path, help="rank a LongMemEval file's sessions")
    parser.add_argument("--split", default="round", choices=longmemeval.SPLITS)
    args = parser.parse_args()
    chosen = variants(args.model, args.grid)
    if args.only:
        wanted = {"reference", *args.only.split(",")}
        chosen = {name: p for name, p in chosen.items() if name in wanted}
    if args.longmemeval is not None:
        questions = longmemeval.parse_longmemeval(args.longmemeval.read_bytes())
        for name, policy in chosen.items():
            result = longmemeval.run(questions, policy=policy, split=args.split)
            s = result.engines[0].summary
            print(
                f"{name:36} recall_any@5={s.recall_any[5]:.3f} recall_all@5={s.recall_all[5]:.3f}"
                f" recall_any@10={s.recall_any[10]:.3f} nDCG@10={s.ndcg:.3f}"
            )
        bm25 = result.engines[-1].summary
        print(f"{'bm25 (fts5)':36} recall_any@5={bm25.recall_any[5]:.3f} nDCG@10={bm25.ndcg:.3f}")
        return
    for path in args.sets.split(","):
        cases = load_cases(Path(path))
        if args.profile:
            print(path, json.dumps(profile(cases, args.model)))
        reports = {name: evaluate(cases, k=5, policy=p) for name, p in chosen.items()}
        reference = reports["reference"].hikmah
        print(f"\n{path} ({args.model})")
        for name, report in reports.items():
            r = row(name, report.hikmah, reference)
            r["off-topic"] = off_topic(cases, chosen[name])
            print(json.dumps(r) if args.json else "  ".join(f"{k}={v}" for k, v in r.items()))
        bm25 = row("bm25 (fts5)", reports["reference"].bm25, reference)
        print(json.dumps(bm25) if args.json else "  ".join(f"{k}={v}" for k, v in bm25.items()))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
