"""The retrieval evaluation harness: metrics, the cases file, both engines, the CLI,
and the shipped evaluation set (tests/eval/cases.toml)."""

from __future__ import annotations

import json
import math
import re
import tempfile
import textwrap
from pathlib import Path

import pytest

from hikmah.evaluation.cases import load_cases, parse_cases
from hikmah.evaluation.fts5 import fts5_expr, open_fts5, surface_words
from hikmah.evaluation.harness import (
    CASES_FAILED,
    Report,
    evaluate,
    format_report,
    main,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from hikmah.model.errors import InvalidInput
from hikmah.model.tokenizer import terms

SHIPPED = Path(__file__).parents[1] / "eval" / "cases.toml"
HELDOUT = Path(__file__).parents[1] / "eval" / "heldout.toml"
PARAPHRASE = "para-"  # cases whose query shares no term with any answer

# Cases of the shipped set that Hikmah fails today (default policy: idf-cosine and the
# semantic channel on all-MiniLM-L6-v2), each for a reason docs/evaluation.md explains.
# The set is not bent to hide them; this list is strict both ways, so a fix to the
# engine has to remove its case from here.
KNOWN_FAILURES = {
    # "set up tally locally": the model finds every Tally trace about as near (0.5) as
    # the local set-up note (0.42), and their one shared word, "tally", is everywhere.
    # The channel costs this case: without it the note's two words win.
    "local-setup",
}
# Paraphrase cases (no term in common with their answer) the default model does not
# bring into the top 5: their answer's similarity (0.18-0.27) is below that of other
# traces, or the question's nearest trace is below [semantic] topic, where off-topic
# questions reach (docs/semantic.md, "The relevance gate"). Each one found must come off
# this list.
PARAPHRASES_NOT_FOUND = {
    "para-alter-largest-relations", "para-cloud-bill", "para-etl-cover",
    "para-missed-alert-night", "para-previous-version", "para-primary-db-down",
    "para-visual-approach", "para-where-passwords-go",
}  # fmt: skip
# Cases the channel costs (they pass with it off): each explained above.
CHANNEL_COSTS = {"local-setup"}

TINY = """
now = "2026-11-30T12:00:00Z"

[[trace]]
key = "db-old"
kind = "belief"
content = "The app database is Postgres 14."
age_days = 100
claim_key = "app.db"
claim_value = "14"

[[trace]]
key = "db-new"
kind = "belief"
content = "The app database runs Postgres 16 since the November upgrade window."
age_days = 5
claim_key = "app.db"
claim_value = "16"
supersedes = "db-old"

[[trace]]
key = "deploy"
kind = "procedure"
content = "Deploy the app by merging to main; Argo CD syncs it."
scope = "project:app"

[[trace]]
key = "deploy-other"
kind = "observation"
content = "Deploy of the other app failed on Friday."
scope = "project:other"

[[case]]
name = "db"
query = "which postgres version does the app database run"
expect = ["db-new"]
must_include = ["postgres 16"]
must_not_include = ["Postgres 14"]
"""

FAILING_CASE = """
[[case]]
name = "kube"
query = "kubernetes cluster"
k = 3
expect = ["deploy"]
must_include = ["Argo CD"]
"""


def write(tmp_path: Path, text: str, name: str = "cases.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# ---------------------------------------------------------------- metrics


def test_recall_at_k_counts_expected_keys_in_the_top_k() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    assert recall_at_k(ranked, {"a", "b"}, 5) == 1.0
    assert recall_at_k(ranked, {"a", "b", "c", "d"}, 5) == 0.75
    assert recall_at_k(ranked, {"a", "b"}, 2) == 0.5  # b is third
    assert recall_at_k([], {"a"}, 5) == 0.0


def test_reciprocal_rank_is_that_of_the_first_expected_key_within_k() -> None:
    assert reciprocal_rank(["a", "b"], {"a"}, 5) == 1.0
    assert reciprocal_rank(["x", "y", "b", "a"], {"a", "b"}, 5) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "y", "z", "a"], {"a"}, 3) == 0.0  # past k
    assert reciprocal_rank([], {"a"}, 5) == 0.0


def test_ndcg_uses_binary_relevance_and_the_ideal_order() -> None:
    # Relevant at ranks 1 and 3: DCG = 1 + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3).
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}, 3) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    # One relevant key at rank 2: (1/log2(3)) / 1.
    assert ndcg_at_k(["x", "a", "y"], {"a"}, 3) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 5) == pytest.approx(1.0)
    # Three expected but k = 2: the ideal holds two, so finding both is perfect.
    assert ndcg_at_k(["a", "b", "c"], {"a", "b", "c"}, 2) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], {"a"}, 2) == 0.0


@pytest.mark.parametrize("metric", [recall_at_k, reciprocal_rank, ndcg_at_k])
def test_metrics_need_an_expectation(metric: object) -> None:
    with pytest.raises(ValueError, match="expected"):
        metric(["a"], set(), 5)  # type: ignore[operator]


# ---------------------------------------------------------------- the cases file


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[[case]]\nquery = "x"\nexpect = ["nope"]\n', "unknown key 'nope'"),
        ('[[case]]\nquery = "x"\nexpect = ["db-old"]\n', "'db-old', which is superseded"),
        ('[[case]]\nquery = "x"\nlimit = 3\n', "unknown field `limit`"),
        ('[[case]]\nquery = "x"\nk = 0\n', "`$.case[1].k`"),
        ('[[trace]]\nkey = "db-new"\nkind = "belief"\ncontent = "x"\n', "used twice"),
        ('[[trace]]\nkey = "z"\nkind = "belief"\ncontent = "x"\nsupersedes = "zz"\n', "earlier"),
        ('[[trace]]\nkey = "z"\nkind = "rumour"\ncontent = "x"\n', "`$.trace[4].kind`"),
        ('[[case]]\nname = "db"\nquery = "x"\n', "case name 'db' is used twice"),
        (
            '[[case]]\nquery = "cricket"\nnothing = true\nexpect = ["db-new"]\n',
            "an off-topic case (nothing = true) expects no result",
        ),
    ],
)
def test_bad_cases_files_are_refused_with_the_reason(extra: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        parse_cases(textwrap.dedent(TINY) + extra, origin="tiny.toml")


def test_bad_toml_names_the_file() -> None:
    with pytest.raises(InvalidInput, match=r"tiny\.toml: not valid TOML"):
        parse_cases("now = ", origin="tiny.toml")


def test_a_trace_the_write_rules_refuse_is_named(tmp_path: Path) -> None:
    text = TINY + '[[trace]]\nkey = "bad"\nkind = "belief"\ncontent = "x"\nsalience = 2.0\n'
    with pytest.raises(InvalidInput, match=re.escape("`$.trace[4].salience`")):
        parse_cases(textwrap.dedent(text))
    text = TINY + '[[trace]]\nkey = "bad"\nkind = "belief"\ncontent = "x"\nscope = "nowhere"\n'
    with pytest.raises(InvalidInput, match="trace 'bad' is refused: scope must be"):
        evaluate(parse_cases(textwrap.dedent(text)))


# ---------------------------------------------------------------- the harness


def test_the_tiny_file_passes_for_hikmah_and_not_for_bm25() -> None:
    report = evaluate(parse_cases(textwrap.dedent(TINY)))
    (hikmah,) = report.hikmah.cases
    (bm25,) = report.bm25.cases
    assert hikmah.passed and hikmah.reasons == []
    assert hikmah.ranked[0] == "db-new"
    assert hikmah.superseded == []
    # A naive store indexes the superseded trace too, and it comes back.
    assert "db-old" in bm25.ranked
    assert bm25.superseded == ["db-old"]
    assert not bm25.passed
    assert any(r.startswith("must_not_include 'Postgres 14' is in #") for r in bm25.reasons)
    assert report.hikmah.summary.superseded_in_top_k == 0
    assert report.bm25.summary.superseded_in_top_k == 1
    assert report.superseded_traces == 1
    assert report.traces == 4


def test_failing_cases_say_why(tmp_path: Path) -> None:
    report = evaluate(parse_cases(textwrap.dedent(TINY + FAILING_CASE)))
    kube = report.hikmah.cases[1]
    assert kube.name == "kube" and kube.k == 3
    assert not kube.passed
    assert kube.reasons == [
        "expected not in top 3: deploy",
        "must_include 'Argo CD' is in no top-3 result",
    ]
    assert kube.recall == 0.0 and kube.reciprocal_rank == 0.0 and kube.ndcg == 0.0
    summary = report.hikmah.summary
    assert (summary.cases, summary.passed, summary.pass_rate) == (2, 1, 0.5)
    assert summary.recall_at_k == pytest.approx(0.5)
    assert summary.mrr == pytest.approx(0.5)


def test_kinds_and_scope_filter_both_engines() -> None:
    text = TINY + textwrap.dedent(
        """
        [[case]]
        name = "scoped"
        query = "deploy"
        scope = "project:app"
        expect = ["deploy"]
        must_not_include = ["other app"]

        [[case]]
        name = "kinds"
        query = "deploy app"
        kinds = ["observation"]
        expect = ["deploy-other"]
        """
    )
    report = evaluate(parse_cases(textwrap.dedent(text)))
    for engine in (report.hikmah, report.bm25):
        scoped, kinds = engine.cases[1], engine.cases[2]
        assert scoped.ranked == ["deploy"], engine.engine
        assert kinds.ranked == ["deploy-other"], engine.engine


def test_an_off_topic_case_passes_only_when_nothing_is_recalled() -> None:
    text = TINY + '[[case]]\nname = "cricket"\nquery = "the rules of cricket"\nnothing = true\n'
    text += '[[case]]\nname = "app"\nquery = "app database"\nnothing = true\n'
    report = evaluate(parse_cases(textwrap.dedent(text)), k=5)
    hikmah = {c.name: c for c in report.hikmah.cases}
    assert hikmah["cricket"].passed and hikmah["cricket"].ranked == []
    assert not hikmah["app"].passed and "off-topic, yet" in hikmah["app"].reasons[0]
    assert (report.hikmah.summary.off_topic, report.hikmah.summary.off_topic_answered) == (2, 1)
    assert hikmah["cricket"].recall is None  # no metrics: nothing is expected
    assert "off-topic answered" in format_report(report)


def test_a_case_without_expectations_has_no_metrics() -> None:
    text = TINY + '[[case]]\nquery = "merging to main"\nmust_include = ["Argo"]\n'
    report = evaluate(parse_cases(textwrap.dedent(text)))
    case = report.hikmah.cases[1]
    assert case.name == "case 2"
    assert case.passed
    assert case.recall is case.reciprocal_rank is case.ndcg is None
    assert report.hikmah.summary.with_expectations == 1


def test_runs_repeat_exactly_and_leave_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cases = parse_cases(textwrap.dedent(TINY + FAILING_CASE))
    first, second = evaluate(cases), evaluate(cases)
    assert first == second
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- the CLI


def test_cli_exit_status_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(write(tmp_path, TINY))]) == 0
    out = capsys.readouterr().out
    assert "Hikmah" in out and "BM25" in out
    assert "superseded in top k" in out
    assert "must_not_include 'Postgres 14'" not in out  # the cases only with --verbose
    assert main([str(write(tmp_path, TINY)), "--verbose"]) == 0
    assert "must_not_include 'Postgres 14'" in capsys.readouterr().out  # BM25's failure

    failing = str(write(tmp_path, TINY + FAILING_CASE, "failing.toml"))
    assert main([failing, "--k", "4"]) == CASES_FAILED
    out = capsys.readouterr().out
    assert "k = 4 unless a case sets its own" in out and "1 case failed for Hikmah" in out
    assert main([failing, "--k", "4", "--verbose"]) == CASES_FAILED
    assert "expected not in top 3: deploy" in capsys.readouterr().out


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(write(tmp_path, TINY)), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == set(Report.__struct_fields__)
    assert data["hikmah"]["summary"]["passed"] == 1
    assert data["bm25"]["summary"]["superseded_in_top_k"] == 1
    assert data["bm25"]["cases"][0]["superseded"] == ["db-old"]


def test_cli_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = write(tmp_path, "recall_limit = 2\n", "policy.toml")
    # recall_limit is raised to k: the top 5 is still a top 5.
    assert main([str(write(tmp_path, TINY)), "--policy", str(policy), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hikmah"]["cases"][0]["passed"]
    bad = write(tmp_path, "recall_limit = 0\n", "bad-policy.toml")
    assert main([str(write(tmp_path, TINY)), "--policy", str(bad)]) == 2
    assert "recall_limit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["missing.toml"], ["cases.toml", "--policy", "missing-policy.toml"]],
)
def test_cli_unusable_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    write(tmp_path, TINY)
    assert main([str(tmp_path / a) if a.endswith(".toml") else a for a in argv]) == 2
    assert capsys.readouterr().err.startswith("hikmah eval: ")


# ---------------------------------------------------------------- the FTS5 helpers


def test_fts5_helpers() -> None:
    assert surface_words("Load_user_cache, load_USER_cache; x-ray") == [
        "load_user_cache",
        "x",
        "ray",
    ]
    assert fts5_expr(["a", 'say "hi"']) == '"a" OR "say ""hi"""'
    db = open_fts5(":memory:", [(1, "load_user_cache is slow", "perf"), (2, "fast", "")])
    try:
        rows = db.execute(
            "SELECT rowid, tags FROM notes WHERE notes MATCH ?", (fts5_expr(["load_user_cache"]),)
        ).fetchall()
        assert rows == [(1, "perf")]
    finally:
        db.close()
    with pytest.raises(ValueError, match="column"):
        open_fts5(":memory:", [], unindexed=("bad name",))


# ---------------------------------------------------------------- the shipped set


def test_the_shipped_set_is_big_and_honest_enough() -> None:
    cases = load_cases(SHIPPED)
    assert len(cases.trace) >= 150
    assert len(cases.case) >= 50
    superseded = {t.key: t.content for t in cases.trace if t.key in cases.superseded()}
    assert len(superseded) >= 10
    guarded = {
        key
        for case in cases.case
        for text in case.must_not_include
        for key, content in superseded.items()
        if text.lower() in content.lower()
    }
    assert len(guarded) >= 10


def test_the_shipped_set_passes_with_no_superseded_trace_in_any_top_5() -> None:
    cases = load_cases(SHIPPED)
    report = evaluate(cases, k=5)
    failed = {c.name: c.reasons for c in report.hikmah.cases if not c.passed}
    known = KNOWN_FAILURES | PARAPHRASES_NOT_FOUND
    unexpected = {name: why for name, why in failed.items() if name not in known}
    assert unexpected == {}
    fixed = known - set(failed)
    assert not fixed, f"these cases pass now: take them off KNOWN_FAILURES: {sorted(fixed)}"
    assert report.hikmah.summary.superseded_in_top_k == 0
    assert all(c.superseded == [] for c in report.hikmah.cases)
    # The claims of docs/evaluation.md: Hikmah ahead of BM25, and BM25 shows corrections' past.
    h, b = report.hikmah.summary, report.bm25.summary
    assert h.recall_at_k is not None and b.recall_at_k is not None
    assert h.mrr is not None and b.mrr is not None
    assert h.recall_at_k > b.recall_at_k and h.mrr > b.mrr and h.passed > b.passed
    assert b.superseded_in_top_k > 0


@pytest.mark.parametrize("path", [SHIPPED, HELDOUT], ids=["shipped", "heldout"])
def test_the_semantic_channel_beats_bm25_and_hikmah_without_it(path: Path) -> None:
    report = evaluate(load_cases(path), k=5)
    assert report.semantic_off is not None
    engines = (report.hikmah.summary, report.semantic_off.summary, report.bm25.summary)
    recall, mrr, ndcg = (
        [getattr(e, f) or 0.0 for e in engines] for f in ("recall_at_k", "mrr", "ndcg_at_k")
    )
    for metric in (recall, mrr, ndcg):
        assert metric[0] > metric[1] > metric[2]
    assert report.hikmah.summary.superseded_in_top_k == 0
    assert report.semantic_off.summary.superseded_in_top_k == 0
    on = {c.name for c in report.hikmah.cases if c.passed}
    off = {c.name for c in report.semantic_off.cases if c.passed}
    assert off - on == (CHANNEL_COSTS if path == SHIPPED else set())
    # Off-topic questions: nothing is recalled for them, where the words alone (an
    # overdue commitment, a shared everyday word) answer most of them.
    h, o = report.hikmah.summary, report.semantic_off.summary
    assert h.off_topic >= 12 and h.off_topic_answered <= h.off_topic // 10
    assert o.off_topic_answered > h.off_topic // 2


@pytest.mark.parametrize("path", [SHIPPED, HELDOUT], ids=["shipped", "heldout"])
def test_paraphrase_cases_share_no_term_with_their_answers(path: Path) -> None:
    cases = load_cases(path)
    content = {t.key: t.content for t in cases.trace}
    paraphrases = [c for c in cases.case if (c.name or "").startswith(PARAPHRASE)]
    assert len(paraphrases) >= 15
    for case in paraphrases:
        answers = [content[k] for k in case.expect] or [
            text
            for text in content.values()
            for s in case.must_include
            if s.lower() in text.lower()
        ]
        assert answers, case.name
        for answer in answers:
            assert not terms(case.query) & terms(answer), (
                case.name,
                terms(case.query) & terms(answer),
            )


def test_the_shipped_set_has_long_agent_session_traces() -> None:
    cases = load_cases(SHIPPED)
    long = [t for t in cases.trace if len(t.content) >= 1000]
    assert len(long) >= 5
    targeted = {k for c in cases.case for k in c.expect}
    assert all(t.key in targeted for t in long)


def test_the_heldout_set_runs_with_no_superseded_trace_in_any_top_5() -> None:
    cases = load_cases(HELDOUT)
    assert len(cases.trace) >= 70 and len(cases.case) >= 40
    shipped = {t.key for t in load_cases(SHIPPED).trace}
    assert not {t.key for t in cases.trace} & shipped  # another memory, not a copy
    report = evaluate(cases, k=5)
    assert report.hikmah.summary.superseded_in_top_k == 0
    assert report.bm25.summary.superseded_in_top_k > 0
