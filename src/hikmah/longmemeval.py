"""The public LongMemEval format: read its questions, split its sessions, score rankings.

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

This module is pure: it decodes a file (:func:`parse_longmemeval`), turns a
question's haystack into the documents an engine indexes
(:func:`documents`, one per session, per user turn or per round), folds a
ranking of documents into a ranking of sessions (:func:`rank_sessions`) and
scores it the way the benchmark's own retrieval evaluation does
(:func:`score`): recall_any@k (some evidence session in the top k),
recall_all@k (every one) and nDCG@10 with binary relevance. Abstention
questions (ids ending in ``_abs``) have no evidence and are not scored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Literal

import msgspec

from hikmah.errors import InvalidInput

Split = Literal["session", "turn", "round"]
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
    ``turn``: one per user turn; ``round``: one per user turn with the
    assistant's replies up to the next user turn. Empty turns are skipped.
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
    if split == "turn":
        yield from (t.content for t in turns if t.role == "user")
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
