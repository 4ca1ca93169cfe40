"""Term weighting and semantic fusion for Resonance Recall, measured on the evaluation sets.

    .venv/bin/python bench/weighting.py [--sets tests/eval/cases.toml,tests/eval/heldout.toml]
        [--model wordllama] [--only NAME,...] [--json]

A prototype, kept to reproduce docs/evaluation.md: Hikmah's own recall
(``hikmah.recall._Scorer``, so candidates, filters, meta, overdue floors,
folding and the 0.12 gate are exactly today's) with the lexical cue and the
cue's fusion with the semantic similarity replaced by each variant below,
computed with the kernel's :mod:`hikmah.weighting` and :mod:`hikmah.fusion`
where a variant is one the kernel keeps. Every trace and query is embedded
with the chosen model; semantic candidates are the 50 most similar traces the
query may see. It reads the store's private scorer, so it moves with
``recall.py``. Prints one table row per variant and evaluation set: passed,
recall@k, MRR, nDCG@k, superseded in any top k, and the cases won and lost
against the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.embedding import load_embedder
from hikmah.evaluation import (
    Case,
    CaseFile,
    EngineReport,
    _bm25_ranker,
    _fill_store,
    _run,
    load_cases,
    open_fts5,
)
from hikmah.fusion import fuse
from hikmah.policy import KernelPolicy, SemanticPolicy
from hikmah.recall import RecallQuery, _Scorer
from hikmah.rules import Remember
from hikmah.store import Store
from hikmah.tokenizer import terms
from hikmah.trace import normalize_tag
from hikmah.weighting import inverse_document_frequency, lexical_scores

Floats = npt.NDArray[np.float64]
POOL = 50


@dataclass(frozen=True)
class Variant:
    """One way to score the cue.

    lexical: "reference" (uniform coverage + Jaccard), "idf" (IDF-weighted
    coverage + Jaccard), "idf-cosine" (IDF coverage + binary cosine overlap),
    "cosine" (uniform coverage + cosine overlap), "coverage" (uniform coverage
    alone), "idf-only" (IDF coverage alone), "bm25" (BM25 with binary tf,
    normalised), "bm25-tf" (BM25 with the real term frequency), "idf-bm25"
    (0.7 IDF coverage + 0.3 binary BM25).
    fusion: "none", "blend" (cue = (1-w) lexical cue + w sem), "max"
    (cue = max(lexical cue, w sem)), "bonus" (lexical cue + w sem (1 - lexical cue)),
    "rrf" (reciprocal rank fusion of the lexical and semantic orders, gated by
    max(lexical cue, w sem)).
    """

    name: str
    lexical: str = "reference"
    fusion: str = "none"
    weight: float = 0.0  # w above
    floor: float = 0.0  # similarity at or below which the semantic part is 0
    high: float = 1.0  # similarity from which the semantic part is 1
    alone: float = 0.0  # similarity a trace needs to be recalled on semantics alone
    k1: float = 1.2
    b: float = 0.75


class Context:
    """Per-store data the variants need: document vectors, frequencies, term counts."""

    def __init__(self, store: Store, embed: Callable[[list[str]], npt.NDArray[np.float32]]) -> None:
        with store.snapshot() as snapshot:
            self.size = len(snapshot.features)
            self.traces = [snapshot.trace_at(doc) for doc in range(self.size)]
        self.vectors = embed([t.content for t in self.traces])
        self.tf = [_counts(t.content) for t in self.traces]
        self.embed = embed
        nterms = np.array([len(terms(t.content)) for t in self.traces], dtype=np.float64)
        self.avg_nterms = float(nterms.mean()) if len(nterms) else 1.0


def _counts(text: str) -> dict[str, int]:
    from hikmah.tokenizer import tokenize  # noqa: PLC0415

    out: dict[str, int] = {}
    for term in tokenize(text):
        out[term] = out.get(term, 0) + 1
    return out


class VariantScorer(_Scorer):
    """Today's scorer with the cue computed by a variant (every candidate scored)."""

    def __init__(self, *args: Any, variant: Variant, context: Context) -> None:
        super().__init__(*args)
        self.variant, self.context = variant, context
        q = context.embed([self.query.query])[0] if self.query.query.strip() else None
        self.qvec = q if q is not None and q.any() else None
        self.weights: dict[int, float] = {}
        self.sem = (
            context.vectors @ self.qvec if self.qvec is not None else np.zeros(context.size)
        ).astype(np.float64)

    def _candidates(self) -> Any:
        docs, matched, tagged, overdue = super()._candidates()
        n = self.context.size
        dfs = np.array([len(self.snapshot.postings(t)) for t in self.q_terms], dtype=np.float64)
        self.term_idf = dict(
            zip(self.q_terms, inverse_document_frequency(dfs, n).tolist(), strict=True)
        )
        self.query_idf = float(sum(self.term_idf.values())) or 1.0
        if self.variant.fusion == "none" or self.qvec is None or self.listing:
            return docs, matched, tagged, overdue
        rows = self.features.take(("present", "status", "kind", "privacy", "scope"), np.arange(n))
        allowed = np.flatnonzero(self._wanted(rows))
        sims = self.sem[allowed]
        top = allowed[np.argsort(-sims)[:POOL]].astype(np.uint32)
        extra = np.setdiff1d(top, docs)
        if not len(extra):
            return docs, matched, tagged, overdue
        all_docs = np.concatenate([docs, extra])
        order = np.argsort(all_docs, kind="stable")
        pad = np.zeros(len(extra))
        return (
            all_docs[order],
            np.concatenate([matched, pad])[order],
            np.concatenate([tagged, pad])[order],
            np.concatenate([overdue, np.zeros(len(extra), dtype=bool)])[order],
        )

    def _upper_bounds(self, matched: Floats, tagged: Floats, overdue: Any) -> Floats:
        return np.full(len(matched), np.inf)  # score everything: exact, slow, fine here

    def _breakdown(self, docs: Any, matched: Floats, tagged: Floats) -> dict[str, Any]:
        out = super()._breakdown(docs, matched, tagged)
        if self.listing:
            return out
        v, p = self.variant, self.policy.recall
        lexical = self._lexical(docs, matched, out)
        tag_coverage = out["tag_coverage"]
        cue = self._cue(lexical, tag_coverage)
        sem = np.clip((self.sem[docs.astype(np.intp)] - v.floor) / (v.high - v.floor), 0.0, 1.0)
        if self.qvec is None or v.fusion == "none":
            fused = cue
        elif v.fusion == "blend":  # the kernel's: hikmah.fusion
            policy = SemanticPolicy(weight=v.weight, floor=v.floor, full=v.high, alone=v.alone)
            hit = (matched > 0) | (tagged > 0)
            fused = fuse(cue, self.sem[docs.astype(np.intp)], hit, policy)
        elif v.fusion == "max":
            fused = np.maximum(cue, v.weight * sem)
        elif v.fusion == "bonus":
            fused = cue + v.weight * sem * (1 - cue)
        elif v.fusion == "rrf":
            fused = np.maximum(cue, v.weight * sem)
        else:
            raise ValueError(v.fusion)
        if self.qvec is not None and v.fusion != "none":
            lexical_hit = (matched > 0) | (tagged > 0)
            alone = self.sem[docs.astype(np.intp)] >= v.alone
            fused = np.where(lexical_hit | alone, fused, 0.0)
        meta = out["meta"]
        score = fused * (p.relevance_base + p.metadata_share * meta)
        if v.fusion == "rrf" and self.qvec is not None:
            score = _rrf(cue * (p.relevance_base + p.metadata_share * meta), sem) * (fused > 0)
        score = np.where(out["overdue"], np.maximum(score, p.overdue_floor), score)
        out.update(
            lexical=lexical,
            cue=fused,
            score=score,
            keep=(fused >= self.policy.minimum_recall_score) | out["overdue"],
        )
        return out

    def _lexical(self, docs: Any, matched: Floats, out: dict[str, Any]) -> Floats:
        v, p = self.variant, self.policy.recall
        if v.lexical in ("reference", "idf-cosine"):  # the kernel's: hikmah.weighting
            found = [self.context.tf[int(d)] for d in docs]
            return lexical_scores(
                v.lexical,  # type: ignore[arg-type]
                matched=matched,
                n_query=len(self.q_terms),
                nterms=self.features.take(("nterms",), docs)["nterms"],
                matched_idf=np.array(
                    [sum(w for t, w in self.term_idf.items() if t in tf) for tf in found]
                ),
                query_idf=self.query_idf,
                coverage_weight=p.lexical_coverage,
                overlap_weight=p.lexical_jaccard,
                match_floor=p.match_floor,
            ).lexical
        n_q = max(len(self.q_terms), 1)
        traces = [self.context.traces[int(d)] for d in docs]
        tfs = [self.context.tf[int(d)] for d in docs]
        lengths = np.array([max(len(tf), 1) for tf in tfs], dtype=np.float64)
        weighted = np.array(
            [sum(w for t, w in self.term_idf.items() if t in tf) for tf in tfs], dtype=np.float64
        )
        idf_cov = weighted / self.query_idf
        coverage = matched / n_q
        jaccard = np.asarray(out["jaccard"])
        cosine = matched / np.sqrt(n_q * lengths)

        def bm25(use_tf: bool) -> Floats:
            norm = v.k1 * (1 - v.b + v.b * lengths / self.context.avg_nterms)
            best = sum(self.term_idf.values()) * (v.k1 + 1) / (1 + v.k1 * (1 - v.b))
            total = np.zeros(len(docs))
            for t, w in self.term_idf.items():
                f = np.array([tf.get(t, 0) if use_tf else float(t in tf) for tf in tfs])
                total += w * f * (v.k1 + 1) / (f + norm)
            return np.minimum(total / (best or 1.0), 1.0)

        raw = {
            "idf": p.lexical_coverage * idf_cov + p.lexical_jaccard * jaccard,
            "cosine": p.lexical_coverage * coverage + p.lexical_jaccard * cosine,
            "coverage": coverage,
            "idf-only": idf_cov,
            "bm25": bm25(False),
            "bm25-tf": bm25(True),
            "idf-bm25": p.lexical_coverage * idf_cov + p.lexical_jaccard * bm25(False),
        }[v.lexical]
        del traces
        return np.where(matched > 0, np.maximum(raw, p.match_floor), 0.0)


def _rrf(lexical_score: Floats, sem: Floats, k: int = 60) -> Floats:
    def ranks(x: Floats) -> Floats:
        order = np.argsort(-x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(1, len(x) + 1)
        return r

    lex = np.where(lexical_score > 0, 1 / (k + ranks(lexical_score)), 0.0)
    return lex + np.where(sem > 0, 1 / (k + ranks(sem)), 0.0)


def recall_with(
    store: Store,
    context: Context,
    query: RecallQuery,
    now_ms: int,
    policy: KernelPolicy,
    variant: Variant,
) -> list[Any]:
    limit = min(query.limit or policy.recall_limit, policy.recall_limit)
    q_terms = sorted(terms(query.query))
    q_tags = sorted({t for t in map(normalize_tag, query.tags) if t})
    if query.query.strip() and not q_terms and not q_tags:
        return []  # a query of stopwords only asks for nothing, with or without semantics
    with store.snapshot() as snapshot:
        scorer = VariantScorer(
            snapshot,
            query,
            q_terms,
            q_tags,
            now_ms,
            policy,
            variant=variant,
            context=context,
        )
        return scorer.run(limit)


def evaluate_variant(
    cases: CaseFile, variants: list[Variant], embed: Callable[[list[str]], Any], k: int = 5
) -> dict[str, EngineReport]:
    largest = max([k, *(c.k for c in cases.case if c.k is not None)])
    policy = msgspec.structs.replace(KernelPolicy(), recall_limit=largest)
    reports: dict[str, EngineReport] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hikmah-w-") as tmp,
        Store(Path(tmp) / "s", map_size=1 << 25, durable=False) as store,
    ):
        key_of = _fill_store(store, cases, policy)
        context = Context(store, embed)
        for variant in variants:

            def rank(case: Case, k: int, v: Variant = variant) -> list[str]:
                query = RecallQuery(
                    query=case.query, tags=case.tags, kinds=case.kinds, limit=k, scope=case.scope
                )
                found = recall_with(store, context, query, cases.now_ms, policy, v)
                return [key_of[r.trace.id] for r in found]

            reports[variant.name] = _run(variant.name, cases, k, rank)
    db = open_fts5(
        ":memory:",
        (
            (row, t.content, t.kind, t.scope or "global", -t.age_days)
            for row, t in enumerate(cases.trace)
        ),
        unindexed=("kind", "scope", "newness"),
    )
    reports["bm25 (fts5)"] = _run("bm25", cases, k, _bm25_ranker(db, cases))
    db.close()
    return reports


BASE = [
    Variant("reference"),
    Variant("idf", lexical="idf"),
    Variant("idf-cosine", lexical="idf-cosine"),
    Variant("cosine", lexical="cosine"),
    Variant("coverage", lexical="coverage"),
    Variant("idf-only", lexical="idf-only"),
    Variant("bm25", lexical="bm25"),
    Variant("bm25-tf", lexical="bm25-tf"),
    Variant("idf-bm25", lexical="idf-bm25"),
]


def fusion_grid(lexical: str) -> list[Variant]:
    out = []
    for floor in (0.2, 0.25, 0.3):
        for high in (0.5, 0.6, 0.7):
            for weight in (0.3, 0.5, 0.7):
                for fusion in ("blend", "max", "bonus"):
                    out.append(
                        Variant(
                            f"{lexical}+{fusion} w={weight} f={floor} h={high}",
                            lexical,
                            fusion,
                            weight,
                            floor,
                            high,
                        )
                    )
            out.append(
                Variant(f"{lexical}+rrf f={floor} h={high}", lexical, "rrf", 0.5, floor, high)
            )
    return out


def similarity_profile(cases: CaseFile, embed: Callable[[list[str]], Any]) -> dict[str, float]:
    """Cosine of each query with its expected traces and with every other trace."""
    keys = [t.key for t in cases.trace]
    vectors = embed([t.content for t in cases.trace])
    relevant, other = [], []
    for case in cases.case:
        if not case.query.strip() or not case.expect:
            continue
        sims = vectors @ embed([case.query])[0]
        for key, sim in zip(keys, sims.tolist(), strict=True):
            (relevant if key in case.expect else other).append(sim)
    other.sort()

    def q(p: float) -> float:
        return other[min(int(p * len(other)), len(other) - 1)]

    return {
        "relevant_median": float(np.median(relevant)),
        "relevant_p10": float(np.percentile(relevant, 10)),
        "unrelated_median": q(0.5),
        "unrelated_p99": q(0.99),
        "unrelated_p999": q(0.999),
        "unrelated_max": other[-1],
    }


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


def off_topic_similarities(cases: CaseFile, embed: Any) -> list[float]:
    """The best cosine each off-topic query reaches among the set's traces."""
    vectors = embed([t.content for t in cases.trace])
    return sorted(float((vectors @ embed([q])[0]).max()) for q in OFF_TOPIC)


def off_topic_admissions(cases: CaseFile, variants: list[Variant], embed: Any) -> dict[str, int]:
    """Results with no query term in common admitted for queries about nothing in the store."""
    policy = msgspec.structs.replace(KernelPolicy(), recall_limit=5)
    out: dict[str, int] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hikmah-w-") as tmp,
        Store(Path(tmp) / "s", map_size=1 << 25, durable=False) as store,
    ):
        _fill_store(store, cases, policy)
        context = Context(store, embed)
        for v in variants:
            count = 0
            for text in OFF_TOPIC:
                query = RecallQuery(query=text, limit=5)
                for r in recall_with(store, context, query, cases.now_ms, policy, v):
                    if not r.why.overdue and not (terms(text) & terms(r.trace.content)):
                        count += 1
            out[v.name] = count
    return out


def row(name: str, report: EngineReport, reference: EngineReport | None) -> dict[str, Any]:
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
    if reference is not None:
        better = worse = 0
        for a, r in zip(report.cases, reference.cases, strict=True):
            ka = (a.passed, a.ndcg or 0)
            kr = (r.passed, r.ndcg or 0)
            better += ka > kr
            worse += ka < kr
        out["won"], out["lost"] = better, worse
    return out


def longmemeval(path: Path, variants: list[Variant], embed: Any, splits: list[str]) -> None:
    """Rank each question's haystack sessions with every variant and BM25; print the means."""
    from hikmah.fts5 import fts5_expr, surface_words  # noqa: PLC0415
    from hikmah.longmemeval import (  # noqa: PLC0415
        documents,
        parse_date,
        parse_longmemeval,
        scorable,
        score,
        summarize,
    )
    from hikmah.tokenizer import STOPWORDS  # noqa: PLC0415
    from hikmah.trace import Draft  # noqa: PLC0415

    questions = scorable(parse_longmemeval(path.read_bytes(), origin=str(path)))
    policy = msgspec.structs.replace(KernelPolicy(), recall_limit=50)
    for split in splits:
        scores: dict[str, list[Any]] = {v.name: [] for v in variants} | {"bm25 (fts5)": []}
        for q in questions:
            docs = documents(q, split)  # type: ignore[arg-type]
            now = (
                parse_date(q.question_date) if q.question_date else max(d.created_ms for d in docs)
            )
            with (
                tempfile.TemporaryDirectory(prefix="hikmah-lme-") as tmp,
                Store(Path(tmp) / "s", map_size=1 << 27, durable=False) as store,
            ):
                ops = [
                    Remember(
                        draft=Draft(content=d.text, kind="episode", source="user"),
                        created_at=d.created_ms,
                    )
                    for d in docs
                ]
                outcomes = store.apply(ops, now_ms=now, policy=policy, sync=False)
                session_of = {o.trace.id: d.session_id for o, d in zip(outcomes, docs, strict=True)}
                context = Context(store, embed)
                for v in variants:
                    query = RecallQuery(query=q.question, limit=50)
                    found = recall_with(store, context, query, now, policy, v)
                    scores[v.name].append(score(q, [session_of[r.trace.id] for r in found]))
            db = open_fts5(":memory:", [(i, d.text, "") for i, d in enumerate(docs)])
            words = [w for w in surface_words(q.question) if w not in STOPWORDS and len(w) > 1]
            rows = (
                db.execute(
                    "SELECT rowid FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT 50",
                    (fts5_expr(words),),
                ).fetchall()
                if words
                else []
            )
            db.close()
            scores["bm25 (fts5)"].append(score(q, [docs[r].session_id for (r,) in rows]))
        print(f"\n{path} split={split} ({len(questions)} questions)")
        for name, got in scores.items():
            s = summarize(got)
            print(
                f"  {name:32} recall_any@5={s.recall_any[5]:.3f} recall_all@5={s.recall_all[5]:.3f}"
                f" recall_any@10={s.recall_any[10]:.3f} nDCG@10={s.ndcg:.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="tests/eval/cases.toml,tests/eval/heldout.toml")
    parser.add_argument("--model", default="wordllama")
    parser.add_argument("--grid", default="", help="lexical variants to run the fusion grid on")
    parser.add_argument("--only", default="", help="built-in variants to run (and reference)")
    parser.add_argument("--extra", default="", help="JSON list of Variant fields to run too")
    parser.add_argument("--profile", action="store_true", help="print similarity profiles")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--longmemeval", type=Path, help="rank a LongMemEval file's sessions")
    parser.add_argument("--split", default="session,round,turn", help="with --longmemeval")
    args = parser.parse_args()
    embedder = load_embedder(args.model)
    cache: dict[str, Any] = {}

    def embed(texts: list[str]) -> Any:
        missing = [t for t in texts if t not in cache]
        if missing:
            for t, v in zip(missing, embedder.embed(missing), strict=True):
                cache[t] = v
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, 1))

    variants = list(BASE)
    for lexical in filter(None, args.grid.split(",")):
        variants += fusion_grid(lexical)
    if args.only:
        wanted = set(args.only.split(","))
        variants = [v for v in variants if v.name in wanted or v.name == "reference"]
    for fields in json.loads(args.extra or "[]"):
        variants.append(Variant(**fields))
    if args.longmemeval is not None:
        longmemeval(args.longmemeval, variants, embed, args.split.split(","))
        return
    for path in args.sets.split(","):
        cases = load_cases(Path(path))
        if args.profile:
            print(path, json.dumps(similarity_profile(cases, embed)))
            best = off_topic_similarities(cases, embed)
            print(path, "off-topic best similarity:", [round(x, 3) for x in best])
        reports = evaluate_variant(cases, variants, embed)
        admitted = off_topic_admissions(cases, variants, embed)
        reference = reports["reference"]
        print(f"\n{path} ({args.model})")
        for name, report in reports.items():
            r = row(name, report, reference)
            r["off-topic"] = admitted.get(name, "-")
            print(json.dumps(r) if args.json else "  ".join(f"{k}={v}" for k, v in r.items()))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
