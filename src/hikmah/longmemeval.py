"""The public LongMemEval benchmark: read its questions, split its sessions, score
rankings, and run Hikmah and the FTS5 baseline on it (``hikmah eval --longmemeval``).

LongMemEval (Wu et al., ICLR 2025) gives each question its own haystack of
chat sessions and names the sessions that hold the evidence. A file is a JSON
list of questions::

    {"question_id": "e47becba", "question_type": "single-session-user",
     "question": "What degree did I graduate with?", "answer": "Business Administration",
     "question_date": "2023/05/30 (Tue) 23:40",
     "haystack_session_ids": ["sharegpt_yywfcmc_0", "..."],
     "haystack_dates": ["2023/05/20 (Sat) 02:21", "..."],
     "haystack_sessions": [[{"role": "user", "content": "...", "has_answer": true}, ...], ...],
     "answer_session_ids": ["answer_280352e9"]}

It decodes a file (:func:`parse_longmemeval`), turns a question's haystack
into the documents an engine indexes (:func:`documents`: one per session, per
message, per user turn, per round, or the user turns and the rounds), folds a
ranking of documents into a ranking of sessions (:func:`rank_sessions`) and
scores it the way the benchmark's own retrieval evaluation does
(:func:`score`): recall_any@k (some evidence session in the top k),
recall_all@k (every one) and nDCG@10 with binary relevance. Abstention
questions (ids ending in ``_abs``) have no evidence and are not scored.

:func:`run` gives each question a throwaway store (the documents written as
episodes at their session's date, recall at the question's date), and ranks
its sessions with Hikmah, Hikmah with the semantic channel off, and SQLite
FTS5 ``bm25()`` over the same documents.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec

from hikmah.embedding import load_embedder
from hikmah.errors import InvalidInput
from hikmah.fts5 import fts5_expr, open_fts5, query_words
from hikmah.policy import KernelPolicy, semantic_off
from hikmah.recall import RecallQuery, recall
from hikmah.rules import Remember, Written
from hikmah.store import Store
from hikmah.trace import Draft

Split = Literal["session", "message", "turn", "round", "turn+round"]
SPLITS: tuple[Split, ...] = ("session", "message", "turn", "round", "turn+round")
DEPTH = 50  # documents each engine ranks per question
NDCG_AT = 10
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    role: Literal["user", "assistant"]
    content: str
    has_answer: bool = False


class Question(msgspec.Struct, frozen=True, kw_only=True):
    """One LongMemEval question with its haystack (unknown fields are ignored, as
    later releases add some)."""

    question_id: str
    question: str
    answer: str | int | float
    haystack_session_ids: list[str]
    haystack_dates: list[str]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str]
    question_type: str = ""
    question_date: str = ""

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")


class Document(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of a haystack as an engine indexes it."""

    session_id: str
    text: str
    created_ms: int


class QuestionScore(msgspec.Struct, frozen=True, kw_only=True):
    question_id: str
    question_type: str
    ranked: list[str]  # session ids, best first
    recall_any: dict[int, float]
    recall_all: dict[int, float]
    ndcg: float


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    questions: int
    recall_any: dict[int, float]
    recall_all: dict[int, float]
    ndcg: float


def parse_longmemeval(data: bytes, *, origin: str = "longmemeval") -> list[Question]:
    """Decode and check a LongMemEval file.

    Raises:
        InvalidInput: naming ``origin`` and the problem (bad JSON, a missing
            field with its path, lists of different lengths, an evidence session
            that is not in the haystack, a date that does not parse).
    """
    try:
        questions = msgspec.json.decode(data, type=list[Question])
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"{origin}: {exc}") from None
    seen: set[str] = set()
    for number, q in enumerate(questions):
        where = f"{origin}: question {number} ({q.question_id})"
        if q.question_id in seen:
            raise InvalidInput(f"{where}: the question_id is used twice")
        seen.add(q.question_id)
        sizes = {len(q.haystack_session_ids), len(q.haystack_dates), len(q.haystack_sessions)}
        if len(sizes) != 1:
            raise InvalidInput(
                f"{where}: haystack_session_ids, haystack_dates and haystack_sessions"
                " must have the same length"
            )
        missing = set(q.answer_session_ids) - set(q.haystack_session_ids)
        if missing:
            raise InvalidInput(f"{where}: answer sessions not in the haystack: {sorted(missing)}")
        for date in [*q.haystack_dates, *([q.question_date] if q.question_date else [])]:
            parse_date(date, where=where)
    return questions


def parse_date(text: str, *, where: str = "date") -> int:
    """A LongMemEval date (``2023/05/20 (Sat) 02:21``, taken as UTC) in epoch ms.

    Raises:
        InvalidInput: the date does not have that form.
    """
    try:
        moment = datetime.strptime(text, DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput(
            f"{where}: {text!r} is not a date like '2023/05/20 (Sat) 02:21'"
        ) from None
    return int(moment.timestamp() * 1000)


def documents(question: Question, split: Split = "session") -> list[Document]:
    """The haystack of ``question`` as documents, in haystack order.

    ``session``: one document per session (every turn, ``role: content`` lines);
    ``message``: one per turn of either side (how ``hikmah ingest`` keeps a
    transcript); ``turn``: one per user turn; ``round``: one per user turn with
    the assistant's replies up to the next user turn; ``turn+round``: the user
    turns and the rounds, each a document of its own. Empty turns are skipped.
    """
    out: list[Document] = []
    for session_id, date, turns in zip(
        question.haystack_session_ids,
        question.haystack_dates,
        question.haystack_sessions,
        strict=True,
    ):
        created = parse_date(date)
        for text in _pieces(turns, split):
            if text.strip():
                out.append(Document(session_id=session_id, text=text, created_ms=created))
    return out


def _pieces(turns: Sequence[Turn], split: Split) -> Iterable[str]:
    if split == "session":
        yield "\n".join(f"{t.role}: {t.content}" for t in turns)
        return
    if split == "message":
        yield from (t.content for t in turns)
        return
    if split in ("turn", "turn+round"):
        yield from (t.content for t in turns if t.role == "user")
        if split == "turn":
            return
    current: list[str] = []
    for turn in turns:
        if turn.role == "user" and current:
            yield "\n".join(current)
            current = []
        current.append(f"{turn.role}: {turn.content}")
    if current:
        yield "\n".join(current)


def rank_sessions(ranked_session_ids: Iterable[str]) -> list[str]:
    """Sessions in the order their first document appears in a document ranking."""
    return list(dict.fromkeys(ranked_session_ids))


def score(question: Question, ranked: Sequence[str], ks: Sequence[int] = (5, 10)) -> QuestionScore:
    """How well ``ranked`` (session ids, best first) finds the evidence of ``question``.

    Raises:
        ValueError: ``question`` is an abstention question or has no evidence.
    """
    wanted = set(question.answer_session_ids)
    if question.abstention or not wanted:
        raise ValueError(f"question {question.question_id} has no evidence sessions to find")
    ranked = rank_sessions(ranked)
    any_at = {k: float(bool(wanted & set(ranked[:k]))) for k in ks}
    all_at = {k: float(wanted <= set(ranked[:k])) for k in ks}
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, sid in enumerate(ranked[:NDCG_AT], start=1)
        if sid in wanted
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), NDCG_AT) + 1))
    return QuestionScore(
        question_id=question.question_id,
        question_type=question.question_type,
        ranked=list(ranked),
        recall_any=any_at,
        recall_all=all_at,
        ndcg=dcg / ideal,
    )


def scorable(questions: Iterable[Question]) -> list[Question]:
    """The questions a retrieval run scores: not abstentions, with evidence."""
    return [q for q in questions if not q.abstention and q.answer_session_ids]


def summarize(scores: Sequence[QuestionScore]) -> Summary:
    """Means over ``scores`` (0 for every figure when there are none)."""
    n = len(scores)
    ks = sorted({k for s in scores for k in s.recall_any})

    def mean(values: Iterable[float]) -> float:
        return sum(values) / n if n else 0.0

    return Summary(
        questions=n,
        recall_any={k: mean(s.recall_any[k] for s in scores) for k in ks},
        recall_all={k: mean(s.recall_all[k] for s in scores) for k in ks},
        ndcg=mean(s.ndcg for s in scores),
    )


# ---------------------------------------------------------------- a run


class EngineScores(msgspec.Struct, frozen=True, kw_only=True):
    """One engine over a file: the means, and the means per question type."""

    engine: str
    summary: Summary
    by_type: dict[str, Summary]


class Run(msgspec.Struct, frozen=True, kw_only=True):
    """Every engine over one file and split."""

    split: Split
    questions: int  # scored
    skipped: int  # abstentions and questions without evidence
    refused: int  # documents the write rules refused (a credential in them, say)
    engines: list[EngineScores]


Ranker = Callable[[Question, list[Document]], list[str]]


def run(questions: Sequence[Question], *, policy: KernelPolicy, split: Split = "round") -> Run:
    """Rank every scorable question's sessions with each engine, and score them.

    Hikmah runs with ``policy`` (its ``recall_limit`` raised to :data:`DEPTH`) and,
    when the policy has the semantic channel on, once more with it off.
    """
    chosen = scorable(questions)
    policy = msgspec.structs.replace(policy, recall_limit=DEPTH)
    names = ["hikmah", *(["hikmah, semantic off"] if policy.semantic.enabled else [])]
    scores: dict[str, list[QuestionScore]] = {name: [] for name in [*names, "bm25 (fts5)"]}
    refused = 0
    for question in chosen:
        docs = documents(question, split)
        ranked, lost = _hikmah(question, docs, policy)
        refused += lost
        for name, sessions in zip(names, ranked, strict=True):
            scores[name].append(score(question, sessions))
        scores["bm25 (fts5)"].append(score(question, _bm25(question, docs)))
    engines = [
        EngineScores(
            engine=name,
            summary=summarize(found),
            by_type={
                kind: summarize([s for s in found if s.question_type == kind])
                for kind in sorted({s.question_type for s in found})
            },
        )
        for name, found in scores.items()
    ]
    return Run(
        split=split,
        questions=len(chosen),
        skipped=len(questions) - len(chosen),
        refused=refused,
        engines=engines,
    )


def _now(question: Question, docs: Sequence[Document]) -> int:
    if question.question_date:
        return parse_date(question.question_date)
    return max((d.created_ms for d in docs), default=0)


def _hikmah(
    question: Question, docs: list[Document], policy: KernelPolicy
) -> tuple[list[list[str]], int]:
    """The sessions Hikmah ranks (with the policy, then with the channel off when it is
    on), and how many documents the write rules refused."""
    now = _now(question, docs)
    with (
        tempfile.TemporaryDirectory(prefix="hikmah-lme-") as tmp,
        Store(Path(tmp) / "store", map_size=1 << 28, durable=False) as store,
    ):
        operations = [
            Remember(
                draft=Draft(content=d.text, kind="episode", source="human:longmemeval"),
                created_at=d.created_ms,
            )
            for d in docs
        ]
        outcomes = store.apply(operations, now_ms=now, policy=policy, sync=False)
        session_of = {
            o.trace.id: d.session_id
            for o, d in zip(outcomes, docs, strict=True)
            if isinstance(o, Written) and o.trace is not None
        }
        policies = [policy]
        if policy.semantic.enabled:
            model = load_embedder(policy.semantic.model)
            store.open_vectors(model, ann_at=policy.semantic.ann_at)
            policies.append(semantic_off(policy))
        query = RecallQuery(query=question.question, limit=DEPTH)
        ranked = [
            [session_of[r.trace.id] for r in store.read(recall, query, now_ms=now, policy=p)]
            for p in policies
        ]
    return ranked, len(docs) - len(session_of)


def _bm25(question: Question, docs: list[Document]) -> list[str]:
    words = query_words(question.question)
    if not words:
        return []
    db = open_fts5(":memory:", [(i, d.text, "") for i, d in enumerate(docs)])
    try:
        rows = db.execute(
            f"SELECT rowid FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT {DEPTH}",
            (fts5_expr(words),),
        ).fetchall()
    finally:
        db.close()
    return [docs[row].session_id for (row,) in rows]


def format_run(result: Run, origin: str) -> str:
    """The run as a table: each engine's recall_any/recall_all at 5 and 10 and nDCG@10,
    then the same per question type."""
    lines = [
        f"{origin}: {result.questions} questions scored ({result.skipped} abstention or"
        f" without evidence skipped), one document per {result.split}"
        + (f", {result.refused} documents refused by the write rules" if result.refused else ""),
        "",
        f"{'engine':<22} {'any@5':>7} {'all@5':>7} {'any@10':>7} {'all@10':>7} {'nDCG@10':>8}",
    ]

    def cells(s: Summary) -> str:
        return (
            f"{s.recall_any.get(5, 0):>7.3f} {s.recall_all.get(5, 0):>7.3f}"
            f" {s.recall_any.get(10, 0):>7.3f} {s.recall_all.get(10, 0):>7.3f} {s.ndcg:>8.3f}"
        )

    lines += [f"{e.engine:<22} {cells(e.summary)}" for e in result.engines]
    kinds = sorted({kind for e in result.engines for kind in e.by_type})
    for kind in kinds:
        lines += ["", f"{kind or '(no type)'}:"]
        lines += [
            f"  {e.engine:<20} {cells(e.by_type[kind])}"
            for e in result.engines
            if kind in e.by_type
        ]
    return "\n".join(lines)
