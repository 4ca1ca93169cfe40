"""What the benchmarks share: synthetic developer notes, request lines and table cells.

Two generators, both deterministic from a seed:

- :func:`note_lines` and :func:`zipf_words`: short notes of 6-12 words over a
  200-word vocabulary drawn Zipf-like (the socket, reminder and hook benchmarks,
  where the words hardly matter);
- :func:`make_notes` / :func:`iter_notes`: realistic short developer notes for
  recall at scale. Sentences from templates ("the deploy of kavi-api failed because
  the token retried twice") over about 20k distinct surface words: real nouns,
  verbs, tools and people, plus generated services, paths and function names, each
  category drawn Zipf-Mandelbrot (a few very common words, a long tail); zero to
  three tags; 5% commitments with deadlines (3% of those already overdue), 10%
  beliefs with a claim key and value, the rest observations, preferences,
  procedures and episodes with spread salience, confidence and sources. Ages and
  deadlines are relative to a ``now_ms`` given (a fixed date by default, so the
  in-process benchmarks see the same ages in every run).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember

NOW_MS = 1_760_000_000_000  # a fixed "now" (2025-10-09), so every run sees the same ages
DAY_MS = 86_400_000
ZIPF_S = 1.05  # Zipf-Mandelbrot weight 1/(rank + q)^s; q flattens the head of a category

_VOCABULARY = """
deploy cache billing auth token queue worker retry timeout schema migration index
release branch merge review test fixture flaky build docker image cluster node pod
service gateway proxy latency memory leak profile trace span metric alert pager oncall
database replica backup restore vacuum lock deadlock transaction rollback commit hook
config secret vault rotate certificate expiry dns route ingress egress firewall quota
frontend backend api client server socket stream buffer batch cron job scheduler lease
python rust golang typescript parser lexer compiler linter formatter wheel package
upgrade downgrade pin version changelog ticket sprint roadmap design review meeting
friday monday tomorrow tonight alice bob carol dave erin frank grace heidi ivan judy
slow fast broken fixed pending urgent minor major stale fresh cold warm hot noisy
"""
WORDS = _VOCABULARY.split()
ZIPF = list(itertools.accumulate(1.0 / (rank + 2) for rank in range(len(WORDS))))
TAGS = ["ops", "dev", "infra", "team", "bug", "plan", "perf", "docs"]


def zipf_words(rng: random.Random, count: int) -> list[str]:
    """``count`` words, frequent ones far more often (a Zipf-like draw)."""
    return rng.choices(WORDS, cum_weights=ZIPF, k=count)


def fmt(value: float | None, spec: str) -> str:
    """A table cell: ``-`` for a missing value."""
    return "-" if value is None else format(value, spec)


def request_body(method: str, params: dict[str, Any]) -> bytes:
    """A request line up to its id: ``{"jsonrpc":"2.0","method":...,"params":{...},"id":``."""
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    return json.dumps(message, separators=(",", ":")).encode()[:-1] + b',"id":'


def with_id(body: bytes, request_id: int) -> bytes:
    """The whole line. Ids count up per client, as a JSON-RPC client's do."""
    return body + b"%d}\n" % request_id


def note_lines(count: int, seed: int) -> list[bytes]:
    """``memory.remember`` requests of short notes (6-12 words, one or two tags)."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        content = " ".join(zipf_words(rng, rng.randint(6, 12)))
        tags = rng.sample(TAGS, rng.randint(1, 2))
        body = request_body("memory.remember", {"content": content, "tags": tags})
        lines.append(with_id(body, i))
    return lines


# --- realistic developer notes --------------------------------------------------------


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
NOTE_TAGS = words("""
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
        return cls(list(words), list(itertools.accumulate(weights)))

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


def make_note(vocab: Vocabulary, rng: random.Random, now_ms: int = NOW_MS) -> Note:
    """One note written in the year before ``now_ms``; commitments fall due around it."""
    created = now_ms - rng.randrange(365 * DAY_MS)
    tags = tuple(rng.sample(NOTE_TAGS, rng.choices([0, 1, 2, 3], weights=[40, 30, 20, 10])[0]))
    roll = rng.random()
    claim: tuple[str, str] | None = None
    deadline: int | None = None
    if roll < 0.05:
        kind = "commitment"
        content = fill(rng.choice(COMMITMENT_TEMPLATES), vocab, rng)
        # Mostly due in the next two months; a few already overdue.
        ahead = rng.randrange(3_600_000, 60 * DAY_MS)
        deadline = now_ms - ahead // 4 if rng.random() < 0.03 else now_ms + ahead
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


def iter_notes(seed: int, now_ms: int = NOW_MS) -> Iterator[Note]:
    """Notes without end, the same ones for the same seed: the first n of them are
    ``make_notes(n, seed)``, so a store can grow from one size to the next."""
    rng = random.Random(seed)
    vocab = make_vocabulary(rng)
    while True:
        yield make_note(vocab, rng, now_ms)


def make_notes(count: int, seed: int, now_ms: int = NOW_MS) -> list[Note]:
    """``count`` notes (5% commitments with deadlines, 10% beliefs with a claim)."""
    return list(itertools.islice(iter_notes(seed, now_ms), count))


def remember(note: Note) -> Remember:
    """The kernel operation writing ``note`` as it was written then (``created_at``)."""
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


def remember_params(note: Note) -> dict[str, Any]:
    """``note`` as the params of ``memory.remember`` (the draft's fields; no ``created_at``)."""
    params: dict[str, Any] = {
        "content": note.content,
        "kind": note.kind,
        "tags": list(note.tags),
        "salience": note.salience,
        "confidence": note.confidence,
        "source": note.source,
    }
    if note.claim:
        params["claim_key"], params["claim_value"] = note.claim
    if note.deadline is not None:
        params["deadline"] = note.deadline
    return params


def exported_trace(note: Note, number: int) -> dict[str, Any]:
    """``note`` as a line of ``hikmah export`` (the ``trace`` of a ``memory.import`` line),
    with an id of the daemon's form made from its time and ``number``."""
    trace: dict[str, Any] = {
        "id": f"tr_{note.created_at & 0xFFFF_FFFF_FFFF:012x}{number & 0xFF_FFFF_FFFF:010x}",
        "kind": note.kind,
        "content": note.content,
        "tags": list(note.tags),
        "created_at": note.created_at,
        "salience": note.salience,
        "confidence": note.confidence,
        "provenance": {"source": note.source},
        "status": "active",
    }
    if note.claim:
        trace["claim_key"], trace["claim_value"] = note.claim
    if note.deadline is not None:
        trace["deadline"] = note.deadline
    return trace
