"""Recall latency benchmark: Hikmah's Resonance Recall against SQLite FTS5 ``bm25()``.

Builds the same deterministic synthetic memories (short developer notes over a
Zipfian vocabulary) into a Hikmah store, an FTS5 table and a plain pure-Python
inverted index, at each size, then times the same queries through all three,
interleaved so that machine noise hits them alike, and prints one table.

    .venv/bin/python bench/recall.py [--sizes 10000,100000] [--queries 200] [--seed 7]

Fairness choices, all in the baseline's favour or neutral:

- FTS5 indexes ``content`` only (``tags`` is UNINDEXED): Hikmah's query text
  matches content, tags are a separate cue. Its tokenizer keeps ``_`` inside
  tokens, like Hikmah's, so ``load_user_cache`` is one term in both.
- FTS5 gets a 64 MiB page cache and an ``optimize`` after the build (one
  b-tree segment), as a tuned deployment would; Hikmah's LMDB is mmap-ed.
- Query words are surface words that Hikmah's tokenizer leaves unchanged, so
  both engines look up the same string. Hikmah stems its index lightly, so a
  word may match a few more notes there ("deploy" also finds "deploys"): the
  table shows the candidate counts of both.
- Hikmah's ``recall_limit`` is raised from 8 to 10, so all three return a top 10.
- The Hikmah store is built with ``durable=False`` (no fsync) for speed; this
  changes build time only, not recall.

What Hikmah does that the baselines do not (and pays for): meta scoring,
near-duplicate folding, conflict/supersession annotations, and overdue
commitments (0.15% of the notes here) joining every query's candidates.

Query sets: "common" words are the 50 most frequent query-eligible words
(in about 3-35% of notes), "top-5" the five most frequent, "mid" words are in
0.05-0.5% of notes. The issue's target is the "3 = 1 common + 2 mid" row at 100k.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import json
import platform
import pstats
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path

from hikmah.evaluation import fts5_expr, open_fts5, surface_words
from hikmah.policy import KernelPolicy
from hikmah.recall import RecallQuery, recall
from hikmah.store import Remember, Store
from hikmah.tokenizer import terms, tokenize
from hikmah.trace import Draft

NOW_MS = 1_760_000_000_000  # a fixed "now" (2025-10-09), so every run sees the same ages
DAY_MS = 86_400_000
BATCH = 1000
TOP_K = 10
WARMUP = 20
COMMON_RANKS = 50  # "common words" are the 50 most frequent query-eligible words
TARGET_SIZE, TARGET_RATIO = 100_000, 0.5  # issue 2: H/F p50 <= 0.5x at 100k traces
ZIPF_S = 1.05  # Zipf-Mandelbrot weight 1/(rank + q)^s; q flattens the head of a category
RESULTS = Path(__file__).with_name("results-recall.json")

# ---------------------------------------------------------------- vocabulary


def words(text: str) -> list[str]:
    """The distinct whitespace-separated words of ``text``, in order."""
    return list(dict.fromkeys(text.split()))


NOUNS = words("""
deploy build test migration database schema index query cache queue worker job cron
service server client request response timeout retry error exception log logs metric
dashboard alert incident outage release branch commit merge rebase review ticket issue
bug fix patch config setting flag feature endpoint route handler middleware token session
cookie header payload field column table row record user account tenant customer invoice
payment order cart checkout refund subscription plan quota limit rate budget cost bill
container image registry cluster node pod volume disk memory cpu thread process socket
port network proxy gateway balancer certificate key secret vault permission role policy
backup snapshot restore replica shard partition lock transaction rollback connection pool
driver library dependency package version upgrade lockfile manifest pipeline runner stage
artifact cache script makefile dockerfile readme changelog doc docs spec design proposal
meeting standup retro sprint roadmap estimate deadline demo customer vendor contract team
oncall pager runbook playbook postmortem latency throughput benchmark profile trace span
event stream topic consumer producer offset batch chunk buffer file path directory folder
module function method class interface type struct enum constant variable parameter
argument return value string integer float list dict map set array tuple iterator
generator decorator fixture mock stub assertion coverage linter formatter typechecker
compiler interpreter runtime environment staging production sandbox preview laptop desktop
editor terminal shell prompt alias hook plugin extension theme font keyboard shortcut
""")

VERBS = words("""
deploy build test migrate index query cache retry log fix patch review merge rebase
release rollback restore backup upgrade pin bump remove rename refactor split extract
inline document benchmark profile trace monitor alert page rotate renew revoke encrypt
decrypt sign verify validate parse serialize compress archive clean prune vacuum reindex
restart reload drain scale throttle debounce cancel schedule ping check ask tell email
""")

PAST = {v: (v + "d" if v.endswith("e") else v + "ed") for v in VERBS}
PAST.update(
    build="built", split="split", ask="asked", tell="told", log="logged", pin="pinned",
    rebase="rebased", page="paged", drain="drained", index="indexed", cache="cached",
)  # fmt: skip

ADJECTIVES = words("""
slow fast flaky broken stale noisy missing duplicate wrong old new large small empty
full hot cold primary secondary legacy internal external public private shared local
remote nightly weekly daily manual automatic optional required deprecated experimental
stable unstable blocking critical minor major urgent strict lenient verbose quiet
""")

TOOLS = words("""
ruff flake8 black isort mypy pyright pytest tox nox pip uv poetry docker podman kubectl
helm terraform ansible postgres mysql sqlite redis kafka rabbitmq nginx envoy grafana
prometheus sentry datadog github gitlab jenkins circleci vim neovim emacs vscode tmux
zsh bash fish make cmake cargo rustc go node npm pnpm yarn webpack vite jest eslint
""")

PEOPLE = words("""
ana bilal chen dana eli farah gus hana ivan jo kai lena mo nadia omar pia quinn ravi
sara tom uma vik wen xavi yusuf zoe
""")

DAYS = words("monday tuesday wednesday thursday friday saturday sunday tomorrow tonight")
TAGS = words("""
deploy ci infra security db perf frontend backend api docs oncall billing auth testing
tooling release incident ux data
""")
CLAIM_ATTRS = words("""
python_version node_version db_engine queue_backend owner region cache_ttl log_level
deploy_day runtime
""")

SYLLABLES = words("""
ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so
su ta te ti to tu va ve vi vo za ze zi zo bra bri bro dra dri fla fle gra gro kra kro
pla ple pri pro sta ste sti tra tri tro vel ver vor zan zen zor tix rax lux pex dor mar
""")
SERVICE_SUFFIXES = words("api worker gateway svc service db web cli sync bot proxy")
FILE_EXTS = words("py ts go rs toml yaml json sql md sh")


@dataclass(frozen=True)
class Zipf:
    """Words ranked by frequency; ``draw`` picks one with weight 1/(rank + q)^s."""

    words: list[str]
    cum: list[float]

    @classmethod
    def of(cls, words: Sequence[str], q: float = 1.0) -> Zipf:
        weights = (1.0 / (rank + q) ** ZIPF_S for rank in range(len(words)))
        return cls(list(words), list(accumulate(weights)))

    def draw(self, rng: random.Random) -> str:
        return rng.choices(self.words, cum_weights=self.cum)[0]


def pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def distinct(rng: random.Random, count: int, make: Callable[[], str]) -> list[str]:
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[make()] = None
    out = list(seen)
    rng.shuffle(out)
    return out


@dataclass(frozen=True)
class Vocabulary:
    noun: Zipf  # real nouns near the top, then a long tail of project jargon
    verb: Zipf
    adj: Zipf
    tool: Zipf
    person: Zipf
    service: Zipf
    path: Zipf
    func: Zipf
    claim_keys: list[str]
    claim_values: dict[str, list[str]]


def make_vocabulary(rng: random.Random) -> Vocabulary:
    """About 20k distinct surface words: real English/dev words plus generated identifiers."""
    jargon = distinct(rng, 6000, lambda: pseudo_word(rng))
    nouns = list(NOUNS)
    rng.shuffle(nouns)
    # The real nouns lead the ranking, with some jargon mixed in (a project's own words).
    ranked_nouns = sorted(
        [(rng.random() ** 3, w) for w in nouns] + [(rng.random(), w) for w in jargon]
    )
    services = distinct(rng, 1500, lambda: f"{pseudo_word(rng)}-{rng.choice(SERVICE_SUFFIXES)}")
    paths = distinct(
        rng,
        4000,
        lambda: (
            f"src/{rng.choice(jargon[:800])}/{rng.choice(NOUNS)}_{rng.choice(NOUNS)}"
            f".{rng.choice(FILE_EXTS)}"
        ),
    )
    func_tails = [*NOUNS, *jargon[:2000]]
    funcs = distinct(
        rng,
        5000,
        lambda: f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{rng.choice(func_tails)}",
    )
    keys = [f"{s.split('-')[0]}.{a}" for s in services[:200] for a in CLAIM_ATTRS]
    rng.shuffle(keys)
    values = {k: [pseudo_word(rng) for _ in range(3)] for k in keys}
    return Vocabulary(
        noun=Zipf.of([w for _, w in ranked_nouns], q=3),
        verb=Zipf.of(VERBS),
        adj=Zipf.of(ADJECTIVES),
        tool=Zipf.of(TOOLS),
        person=Zipf.of(PEOPLE),
        service=Zipf.of(services, q=20),
        path=Zipf.of(paths, q=20),
        func=Zipf.of(funcs, q=20),
        claim_keys=keys,
        claim_values=values,
    )


# ---------------------------------------------------------------- notes

# "{slot}" draws a word of that category; "[a|b|c]" picks one phrasing, so that no
# connective word belongs to a single sentence shape.
NOTE_TEMPLATES = [
    "the [deploy|rollout|migration|build|release] of {svc} [failed|broke|hung|stalled]"
    " because the {noun} {past} [out|again|twice|early]",
    "[prefer|use|pick] {tool} over {tool2} [for|in] {svc}",
    "{svc} is {adj} again, [probably|maybe|likely] the {noun} in {path}",
    "{person} [says|thinks|noticed] {func} should not {verb} the {noun} [twice|again|here]",
    "{func} in {path} returns [a|an] {adj} {noun} when the {noun2} is {adj2}",
    "we {past} the {noun} [for|of|in] {svc} after the {adj} {noun2} [incident|outage|alert]",
    "[do not|never|avoid to] {verb} {svc} on {day}, the {noun} [job|cron|batch] runs then",
    "{tool} [flags|reports|warns about] {func}; ignore it until the {noun} [refactor|rewrite]",
    "the {adj} {noun} test in {path} is {adj2}, [rerun|retry|restart] it before"
    " [blaming|touching|reverting] the {noun2}",
    "use {tool} to {verb} the {noun} [locally|in ci|on staging], {tool2} is too {adj}",
    "{svc} [reads|loads|gets] its {noun} from {path}",
    "[asked|pinged|told] {person} about the {noun} {noun2}; {verb} it with {func}",
    "{noun} {noun2} for {svc} [lives|is] in {path}",
    "after [upgrading|bumping|pinning] {tool}, {func} [got|became|is] {adj} and the {noun}"
    " [broke|failed|changed]",
    "{person} owns {svc} and the {noun} [dashboard|runbook|alerts]",
    "the {noun} of {svc} is {adj}, see {func} [and|in] {path}",
    "the {svc} {noun} is {adj} [today|now|again|since {day}]",
    "{svc} needs a {adj} {noun} [for|before|after] the {noun2}",
    "{tool} {past} {func} [on|in|for] {svc}",
    "[todo|idea|question]: {verb} the {noun} {noun2} in {svc} [with|without] {tool}",
    "{func} [is|was] slow [because of|due to] the {adj} {noun} in {path}",
    "[found|saw|hit] a {adj} {noun} in {svc} while [testing|reviewing|debugging] {func}",
    "[lesson|note]: {verb} the {noun} before you {verb2} the {noun2}",
    "{person} [prefers|wants|asked for] {adj} {noun} [names|checks|logs] in {svc}",
    "{svc} [talks to|depends on|calls] {svc2} [through|via] the {noun}",
    "[on|since|after] {day} the {noun} [for|of] {svc} [moved to|lives in] {path}",
]
COMMITMENT_TEMPLATES = [
    "remember to {verb} the {adj} {noun} [before|by] {day}",
    "{verb} {svc} {noun} with {person} [by|on|before] {day}",
    "follow up [on|about] the {noun} {noun2} for {svc}",
    "{verb} {func} before the {noun} [release|freeze|demo]",
    "ask {person} about {func} [by|on] {day}",
]
EXTRA_CLAUSES = [
    "; see {path}",
    " ([related|see also|cf]: {func})",
    ", [also|then|and] {verb} the {noun}",
    " — {person} [knows|owns|wrote] the {noun} {noun2}",
    ", {adj} {noun} {noun2} {noun3}",
    " [in|for|on] {svc}",
]


@dataclass(frozen=True)
class Note:
    content: str
    kind: str
    tags: tuple[str, ...]
    created_at: int
    claim: tuple[str, str] | None = None
    deadline: int | None = None
    salience: float = 0.5
    confidence: float = 0.5
    source: str = "human:ana"


def fill(template: str, vocab: Vocabulary, rng: random.Random) -> str:
    """Fill a template's slots; ``{noun2}`` and the like differ from ``{noun}``."""
    draws: dict[str, Callable[[], str]] = {
        "svc": lambda: vocab.service.draw(rng),
        "noun": lambda: vocab.noun.draw(rng),
        "verb": lambda: vocab.verb.draw(rng),
        "past": lambda: PAST[vocab.verb.draw(rng)],
        "adj": lambda: vocab.adj.draw(rng),
        "tool": lambda: vocab.tool.draw(rng),
        "person": lambda: vocab.person.draw(rng),
        "path": lambda: vocab.path.draw(rng),
        "func": lambda: vocab.func.draw(rng),
        "day": lambda: rng.choice(DAYS),
    }
    template = re.sub(r"\[([^]]+)\]", lambda m: rng.choice(m.group(1).split("|")), template)
    values: dict[str, str] = {}
    for name in re.findall(r"{(\w+)}", template):
        kind = name.rstrip("23")
        value = draws[kind]()
        while name != kind and value in values.values():
            value = draws[kind]()
        values[name] = value
    return template.format(**values)


def make_note(vocab: Vocabulary, rng: random.Random) -> Note:
    created = NOW_MS - rng.randrange(365 * DAY_MS)
    tags = tuple(rng.sample(TAGS, rng.choices([0, 1, 2, 3], weights=[40, 30, 20, 10])[0]))
    roll = rng.random()
    claim: tuple[str, str] | None = None
    deadline: int | None = None
    if roll < 0.05:
        kind = "commitment"
        content = fill(rng.choice(COMMITMENT_TEMPLATES), vocab, rng)
        # Mostly due in the next two months; a few already overdue.
        ahead = rng.randrange(3_600_000, 60 * DAY_MS)
        deadline = NOW_MS - ahead // 4 if rng.random() < 0.03 else NOW_MS + ahead
        created = min(created, deadline - 3_600_000)
    elif roll < 0.15:
        kind = "belief"
        key = rng.choice(vocab.claim_keys)
        value = rng.choice(vocab.claim_values[key])
        claim = (key, value)
        words = key.replace(".", " ").replace("_", " ")
        content = f"{words} is {value} for " + fill("{svc}", vocab, rng)
    else:
        kind = rng.choices(["observation", "preference", "procedure", "episode"], [6, 2, 1, 1])[0]
        content = fill(rng.choice(NOTE_TEMPLATES), vocab, rng)
    while len(content.split()) < 20 and rng.random() < 0.4:
        content += fill(rng.choice(EXTRA_CLAUSES), vocab, rng)
    return Note(
        content=content,
        kind=kind,
        tags=tags,
        created_at=created,
        claim=claim,
        deadline=deadline,
        salience=round(rng.uniform(0.2, 0.9), 2),
        confidence=round(rng.uniform(0.3, 1.0), 2),
        source=f"human:{vocab.person.draw(rng)}",
    )


def make_notes(count: int, seed: int) -> list[Note]:
    rng = random.Random(seed)
    vocab = make_vocabulary(rng)
    return [make_note(vocab, rng) for _ in range(count)]


# ---------------------------------------------------------------- engines


@dataclass
class Engines:
    store: Store
    db: sqlite3.Connection
    python: PythonIndex
    surface: dict[str, set[int]]  # FTS5's view of the words: word -> rowids (for counts)
    build_s: dict[str, float] = field(default_factory=dict)


def build_hikmah(notes: list[Note], path: Path) -> tuple[Store, list[int]]:
    """The store, and the indices of the notes it accepted (the others are reported)."""
    store = Store(path, durable=False)
    policy = KernelPolicy()
    accepted: list[int] = []
    refused: Counter[str] = Counter()
    for start in range(0, len(notes), BATCH):
        batch = notes[start : start + BATCH]
        outcomes = store.apply([remember(n) for n in batch], now_ms=NOW_MS, policy=policy)
        for offset, outcome in enumerate(outcomes):
            if isinstance(outcome, Exception):
                refused[f"{type(outcome).__name__}: {outcome}"[:120]] += 1
            else:
                accepted.append(start + offset)
    if refused:
        print(f"  hikmah refused {sum(refused.values())} notes:", dict(refused.most_common(3)))
    return store, accepted


def remember(note: Note) -> Remember:
    draft = Draft(
        content=note.content,
        kind=note.kind,  # type: ignore[arg-type]
        tags=note.tags,
        claim_key=note.claim[0] if note.claim else None,
        claim_value=note.claim[1] if note.claim else None,
        deadline=note.deadline,
        salience=note.salience,
        confidence=note.confidence,
        source=note.source,
    )
    return Remember(draft=draft, created_at=note.created_at)


def build_fts5(notes: list[Note], path: Path) -> sqlite3.Connection:
    rows = ((i, n.content, " ".join(n.tags)) for i, n in enumerate(notes))
    return open_fts5(path, rows, unindexed=("tags",))


class PythonIndex:
    """The plain baseline: dict term -> ids, score = 0.7*coverage + 0.3*Jaccard, top 10."""

    def __init__(self, notes: list[Note]) -> None:
        self.postings: dict[str, list[int]] = {}
        self.nterms: list[int] = []
        for i, note in enumerate(notes):
            note_terms = terms(note.content)
            self.nterms.append(len(note_terms))
            for term in note_terms:
                self.postings.setdefault(term, []).append(i)

    def search(self, query: str) -> list[tuple[float, int]]:
        q_terms = terms(query)
        counts: Counter[int] = Counter()
        for term in q_terms:
            counts.update(self.postings.get(term, ()))
        n_q, nterms = len(q_terms), self.nterms
        scored = ((0.7 * m / n_q + 0.3 * m / (n_q + nterms[i] - m), i) for i, m in counts.items())
        return heapq.nlargest(TOP_K, scored)

    def candidates(self, query: str) -> int:
        found: set[int] = set()
        for term in terms(query):
            found.update(self.postings.get(term, ()))
        return len(found)


def build_all(notes: list[Note], tmp: Path) -> tuple[Engines, list[Note]]:
    t0 = time.perf_counter()
    store, accepted = build_hikmah(notes, tmp / "hikmah")
    hikmah_s = time.perf_counter() - t0
    kept = [notes[i] for i in accepted]  # every engine gets exactly the notes Hikmah kept
    t0 = time.perf_counter()
    db = build_fts5(kept, tmp / "fts5.db")
    fts5_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    python = PythonIndex(kept)
    python_s = time.perf_counter() - t0
    surface: dict[str, set[int]] = {}
    for i, note in enumerate(kept):
        for word in surface_words(note.content):
            surface.setdefault(word, set()).add(i)
    builds = {"hikmah": hikmah_s, "fts5": fts5_s, "python": python_s}
    return Engines(store, db, python, surface, builds), kept


# ---------------------------------------------------------------- queries


@dataclass(frozen=True)
class QuerySet:
    name: str
    queries: list[list[str]]


def make_query_sets(engines: Engines, count: int, seed: int) -> list[QuerySet]:
    """Query words are surface words Hikmah's tokenizer keeps as they are (same string in both)."""
    rng = random.Random(seed * 7919 + len(engines.python.nterms))
    ranked = sorted(
        (w for w in engines.surface if tokenize(w) == [w]),
        key=lambda w: (-len(engines.surface[w]), w),
    )
    n = len(engines.python.nterms)
    common = ranked[:COMMON_RANKS]
    # Mid frequency: in 0.05%-0.5% of notes (50-500 notes at 100k, 5-50 at 10k).
    mid = [w for w in ranked if n * 0.0005 <= len(engines.surface[w]) <= n * 0.005]

    def draw(parts: list[tuple[list[str], int]]) -> list[str]:
        words: list[str] = []
        for pool, k in parts:
            words += rng.sample([w for w in pool if w not in words], k)
        rng.shuffle(words)
        return words

    def qset(name: str, parts: list[tuple[list[str], int]]) -> QuerySet:
        return QuerySet(name, [draw(parts) for _ in range(count)])

    return [
        qset("1 common", [(common, 1)]),
        qset("1 mid", [(mid, 1)]),
        qset("3 = 1 common + 2 mid", [(common, 1), (mid, 2)]),
        qset("3 = 1 top-5 + 2 mid", [(common[:5], 1), (mid, 2)]),
        qset("3 mid", [(mid, 3)]),
        qset("8 = 2 common + 6 mid", [(common, 2), (mid, 6)]),
        qset("8 mid", [(mid, 8)]),
    ]


# ---------------------------------------------------------------- timing


@dataclass
class Row:
    size: int
    query_set: str
    cand_hikmah: float
    cand_fts5: float
    hikmah_p50_ms: float
    hikmah_p95_ms: float
    fts5_p50_ms: float
    fts5_p95_ms: float
    python_p50_ms: float
    python_p95_ms: float
    ratio_p50: float
    ratio_p95: float
    python_ratio_p50: float
    empty_hikmah: int


def runners(engines: Engines) -> dict[str, Callable[[list[str]], int]]:
    policy = KernelPolicy(recall_limit=TOP_K)  # the default is 8; compare top 10 with top 10
    sql = f"SELECT rowid FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT {TOP_K}"

    def hikmah(words: list[str]) -> int:
        query = RecallQuery(query=" ".join(words), limit=TOP_K)
        return len(recall(engines.store, query, now_ms=NOW_MS, policy=policy))

    def fts5(words: list[str]) -> int:
        return len(engines.db.execute(sql, (fts5_expr(words),)).fetchall())

    def python(words: list[str]) -> int:
        return len(engines.python.search(" ".join(words)))

    return {"hikmah": hikmah, "fts5": fts5, "python": python}


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def time_set(engines: Engines, qs: QuerySet, size: int) -> Row:
    run = runners(engines)
    names = list(run)
    for words in qs.queries[:WARMUP]:
        for name in names:
            run[name](words)
    times: dict[str, list[float]] = {name: [] for name in names}
    empty = 0
    for i, words in enumerate(qs.queries):
        order = names[i % 3 :] + names[: i % 3]  # rotate who goes first
        for name in order:
            t0 = time.perf_counter_ns()
            found = run[name](words)
            times[name].append((time.perf_counter_ns() - t0) / 1e6)
            empty += name == "hikmah" and found == 0
    cand_h = statistics.mean(engines.python.candidates(" ".join(w)) for w in qs.queries)
    cand_f = statistics.mean(
        len(set().union(*(engines.surface.get(x, set()) for x in w))) for w in qs.queries
    )
    p = {name: (percentile(t, 50), percentile(t, 95)) for name, t in times.items()}
    return Row(
        size=size,
        query_set=qs.name,
        cand_hikmah=round(cand_h, 1),
        cand_fts5=round(cand_f, 1),
        hikmah_p50_ms=round(p["hikmah"][0], 3),
        hikmah_p95_ms=round(p["hikmah"][1], 3),
        fts5_p50_ms=round(p["fts5"][0], 3),
        fts5_p95_ms=round(p["fts5"][1], 3),
        python_p50_ms=round(p["python"][0], 3),
        python_p95_ms=round(p["python"][1], 3),
        ratio_p50=round(p["hikmah"][0] / p["fts5"][0], 2),
        ratio_p95=round(p["hikmah"][1] / p["fts5"][1], 2),
        python_ratio_p50=round(p["python"][0] / p["fts5"][0], 2),
        empty_hikmah=empty,
    )


def profile_hikmah(engines: Engines, qs: QuerySet) -> None:
    run = runners(engines)["hikmah"]
    profiler = cProfile.Profile()
    profiler.enable()
    for words in qs.queries:
        run(words)
    profiler.disable()
    print(f"\ncProfile of Hikmah recall, {qs.name!r}, {len(qs.queries)} queries:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


# ---------------------------------------------------------------- report

HEADER = (
    "size", "query set", "cand H", "cand F", "H p50", "H p95", "F p50", "F p95",
    "H/F p50", "H/F p95", "Py p50", "Py p95", "Py/F p50",
)  # fmt: skip


def cells(r: Row) -> list[str]:
    ms = [r.hikmah_p50_ms, r.hikmah_p95_ms, r.fts5_p50_ms, r.fts5_p95_ms]
    ratios = [r.ratio_p50, r.ratio_p95]
    return [
        f"{r.size:,}",
        r.query_set,
        f"{r.cand_hikmah:,.0f}",
        f"{r.cand_fts5:,.0f}",
        *(f"{x:.2f}" for x in ms),
        *(f"{x:.2f}x" for x in ratios),
        f"{r.python_p50_ms:.2f}",
        f"{r.python_p95_ms:.2f}",
        f"{r.python_ratio_p50:.2f}x",
    ]


def format_table(rows: list[Row]) -> str:
    table = [list(HEADER), *map(cells, rows)]
    widths = [max(len(c) for c in column) for column in zip(*table, strict=True)]
    out = []
    for line in table:
        padded = [
            c.ljust(w) if j == 1 else c.rjust(w)
            for j, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append(" | ".join(padded))
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated trace counts")
    parser.add_argument("--queries", type=int, default=200, help="queries per query set")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile Hikmah on the 3-term common-word set"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[Row] = []
    builds: list[dict[str, float | int]] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="hk-bench-") as tmp:
            print(f"building {size:,} notes ...", flush=True)
            engines, kept = build_all(make_notes(size, args.seed), Path(tmp))
            b = engines.build_s
            builds.append(
                {"size": size, "kept": len(kept)} | {k: round(v, 2) for k, v in b.items()}
            )
            print(
                f"  built {len(kept):,} notes: hikmah {b['hikmah']:.1f} s (durable=False, "
                f"batches of {BATCH}), fts5 {b['fts5']:.1f} s, python index {b['python']:.1f} s",
                flush=True,
            )
            query_sets = make_query_sets(engines, args.queries, args.seed)
            for qs in query_sets:
                rows.append(time_set(engines, qs, size))
                print(f"  timed {qs.name}", flush=True)
            if args.profile and size == sizes[-1]:
                profile_hikmah(engines, query_sets[2])
            engines.store.close()
            engines.db.close()
    print()
    print("latency in ms over", args.queries, "queries per set; H = Hikmah recall (full scoring,")
    print(
        "folding, annotations), F = SQLite FTS5 bm25() top 10, Py = pure-Python coverage/Jaccard;"
    )
    print("cand = mean notes matching any query term (H: stemmed terms, F: surface words);")
    print("common = top 50 words, top-5 = top 5 words, mid = words in 0.05-0.5% of notes")
    print(format_table(rows))
    for r in rows:
        if r.empty_hikmah:
            print(f"note: {r.empty_hikmah} {r.query_set!r} queries at {r.size:,} returned nothing")
    for r in rows:
        if r.size == TARGET_SIZE and r.query_set.startswith("3 = "):
            verdict = "meets" if r.ratio_p50 <= TARGET_RATIO else "MISSES"
            print(
                f"issue target at {r.size:,}, {r.query_set!r}: H/F p50 {r.ratio_p50:.2f}x"
                f" {verdict} <= {TARGET_RATIO}x"
            )
    report = {
        "seed": args.seed,
        "queries_per_set": args.queries,
        "now_ms": NOW_MS,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "builds_s": builds,
        "rows": [asdict(r) for r in rows],
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
