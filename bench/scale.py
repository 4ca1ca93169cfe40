"""The store at scale: one corpus grown tier by tier, hikmahd started on it, measured.

A :class:`Corpus` holds the same notes in a Hikmah store (written in-process,
``Store(durable=False)``, batches of 1,000: a million RPC writes would take an hour;
then the semantic channel's vectors brought up to date and saved, as the daemon
keeps them, with the HNSW graph built on two threads) and in an FTS5 table, and
grows from one tier to the next, since the notes of
``workload.iter_notes`` for a seed are a prefix of the notes of any larger tier. At
each tier the daemon is started on the store (a separate process, as a person runs
it) and :func:`measure_tier` times its start, reads its memory, and times recall
through its socket against FTS5 on the same notes.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asof
import browse
import hooks
import recall
import reminders
import waits
from report import label
from servers import (
    CHANNEL_OFF,
    OK_PREFIX,
    Server,
    call_many,
    hikmahd_argv,
    memory_kib,
    wait_semantic_ready,
)
from workload import Note, exported_trace, iter_notes, make_notes, remember

from hikmah.evaluation.fts5 import fts5_expr, open_fts5, surface_words
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.semantic.models import load_model
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors
from tests.harness.stats import percentile

BATCH = 1000
IMPORT_BATCH = 500
# The query sets timed, by what the table calls them (names of recall.make_query_sets).
QUERY_SETS = {
    "1-term": "1 common",
    "3-term": "3 = 1 common + 2 mid",
    "8-term": "8 = 2 common + 6 mid",
}


class Corpus:
    """The same notes in a Hikmah store and an FTS5 table, grown tier by tier.

    ``directory`` is laid out for :func:`servers.hikmahd_argv` (``data``, ``s``,
    ``policy.toml``), so a daemon can be started on the store between tiers.
    """

    def __init__(self, directory: Path, seed: int, now_ms: int) -> None:
        self.directory = directory
        directory.mkdir(mode=0o700, parents=True)
        (directory / "policy.toml").write_text(f"recall_limit = {recall.TOP_K}\n")
        self.now_ms = now_ms
        self._notes = iter_notes(seed, now_ms)
        self.db = open_fts5(directory / "fts5.db", [], unindexed=("tags",))
        self.notes_with: Counter[str] = Counter()  # surface word -> notes holding it
        self.drawn = 0
        self.kept = 0  # notes Hikmah accepted; FTS5 holds exactly these
        self.refused: Counter[str] = Counter()
        self.hikmah_s = 0.0
        self.fts5_s = 0.0
        self.vectors_s = 0.0  # embedding the notes and building the HNSW graph

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    def grow(self, size: int) -> None:
        """Write notes until ``size`` were drawn."""
        policy = KernelPolicy()
        sql = "INSERT INTO notes(rowid, content, tags) VALUES (?, ?, ?)"
        with Store(self.data_dir, durable=False) as store:
            while self.drawn < size:
                batch = list(islice(self._notes, min(BATCH, size - self.drawn)))
                self.drawn += len(batch)
                began = time.perf_counter()
                outcomes = store.apply(
                    [remember(n) for n in batch], now_ms=self.now_ms, policy=policy
                )
                self.hikmah_s += time.perf_counter() - began
                kept = []
                for note, outcome in zip(batch, outcomes, strict=True):
                    if isinstance(outcome, Exception):
                        self.refused[f"{type(outcome).__name__}: {outcome}"[:120]] += 1
                    else:
                        kept.append(note)
                rows = [(self.kept + i, n.content, " ".join(n.tags)) for i, n in enumerate(kept)]
                began = time.perf_counter()
                self.db.execute("BEGIN")
                self.db.executemany(sql, rows)
                self.db.execute("COMMIT")
                self.fts5_s += time.perf_counter() - began
                for note in kept:
                    self.notes_with.update(surface_words(note.content))
                self.kept += len(kept)
            began = time.perf_counter()
            semantic = policy.semantic
            model = load_model(semantic.model, model_cache_dir())
            vectors = open_vectors(store, model, ann_at=semantic.ann_at)
            while vectors.wants_fold():
                vectors.fold(threads=2, slice_size=4096)
            vectors.save(None)
            self.vectors_s += time.perf_counter() - began
        began = time.perf_counter()
        self.db.execute("INSERT INTO notes(notes) VALUES ('optimize')")
        self.fts5_s += time.perf_counter() - began
        # What bench/hotpaths.py needs to draw the same queries from a kept corpus.
        meta = {"now_ms": self.now_ms, "kept": self.kept, "notes_with": self.notes_with}
        (self.directory / "meta.json").write_text(json.dumps(meta))

    def query_sets(self, count: int, seed: int) -> dict[str, recall.QuerySet]:
        sets = recall.make_query_sets(self.notes_with, self.kept, count, seed)
        by_name = {qs.name: qs for qs in sets}
        return {short: by_name[name] for short, name in QUERY_SETS.items()}

    def fts5(self, words: list[str]) -> int:
        return len(self.db.execute(recall.FTS5_SQL, (fts5_expr(words),)).fetchall())


# --- the daemon ------------------------------------------------------------------------


class Client:
    """One blocking connection, one request in flight."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(str(path))
        self.replies = self.sock.makefile("rb", buffering=1 << 16)
        self.next_id = 0

    def call_raw(self, method: str, params: dict[str, Any]) -> bytes:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "method": method, "params": params, "id": self.next_id}
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        return self.replies.readline()

    def recall(self, words: list[str]) -> None:
        reply = self.call_raw("memory.recall", {"query": " ".join(words), "limit": recall.TOP_K})
        if not reply.startswith(OK_PREFIX):
            raise RuntimeError(f"recall refused: {reply[:300]!r}")

    def close(self) -> None:
        self.replies.close()
        self.sock.close()


def hikmahd(directory: Path, env_root: Path) -> reminders.Daemon:
    argv = hikmahd_argv(directory, "--log-level", "info")
    return reminders.Daemon("hikmahd", directory, argv, env=reminders.daemon_env(env_root))


@dataclass
class Started:
    """The daemon left running after ``starts`` starts, and what they took."""

    daemon: reminders.Daemon
    ready_s: list[float]
    loaded_s: list[float]
    semantic_s: list[float]  # from Popen to the semantic channel ready (or off)
    first: list[waits.FirstAnswers]  # each start's first status and recall

    @property
    def ready_median_s(self) -> float:
        return percentile(self.ready_s, 50)

    @property
    def loaded_median_s(self) -> float:
        return percentile(self.loaded_s, 50)


T = TypeVar("T")
# How long recall is timed while the vectors catch up with an import, at most.
CATCH_UP_S = 60.0
# What the first recall after a start asks (an agent's session start asks about its work).
FIRST_QUERY = "deploy the staging database"


def measure_alone(
    argv: list[str] | None,
    doc: str | None,
    queries: int,
    measure: Callable[[Path, list[list[str]]], T],
) -> tuple[int, dict[str, T]]:
    """A script run on its own: its flags (``--notes``, ``--queries``, default
    ``queries``, ``--seed``), then the suite's corpus of that many notes built in a temp
    dir, hikmahd started on it, and ``measure(socket, queries)`` for the queries of each
    query set. Returns the notes and the results by set."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("--notes", type=int, default=100_000, help="traces in the store")
    parser.add_argument("--queries", type=int, default=queries, help="queries per query set")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    notes, queries, seed = args.notes, args.queries, args.seed
    root = Path(tempfile.mkdtemp(prefix="hkms", dir="/tmp"))
    rows = {}
    try:
        corpus = Corpus(root / "corpus", seed, time.time_ns() // 1_000_000)
        corpus.grow(notes)
        sets = corpus.query_sets(queries, seed)
        with contextlib.ExitStack() as stack:
            daemon = start(corpus.directory, root, 1, stack).daemon
            for name, qs in sets.items():
                rows[name] = measure(daemon.socket, qs.queries)
            daemon.stop()
        corpus.db.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return notes, rows


def start(
    directory: Path,
    env_root: Path,
    starts: int,
    stack: contextlib.ExitStack,
    query: str = FIRST_QUERY,
) -> Started:
    """Start hikmahd ``starts`` times on ``directory``; the last one keeps running. Each
    start's first status and recall of ``query`` are timed from the socket accepting."""
    ready, loaded, semantic, first = [], [], [], []
    for attempt in range(starts):
        daemon = hikmahd(directory, env_root)
        stack.callback(daemon.stop)
        daemon.log.unlink(missing_ok=True)  # the log line waited for must be this start's
        daemon.launch()
        daemon.listening(poll_s=0.002)
        accepted = time.monotonic()
        ready.append(accepted - daemon.started_at)
        first.append(waits.first_answers(daemon.socket, query, accepted))
        loaded.append(daemon.wait_for_log("promise queue loaded"))
        wait_semantic_ready(daemon.socket)
        semantic.append(time.monotonic() - daemon.started_at)
        if attempt < starts - 1:
            daemon.stop()
    return Started(daemon, ready, loaded, semantic, first)


# --- measurements -----------------------------------------------------------------------


@dataclass
class RecallTiming:
    size: int
    query_set: str
    queries: int
    hikmah_p50_ms: float
    hikmah_p95_ms: float
    fts5_p50_ms: float
    fts5_p95_ms: float


def warm(client: Client, corpus: Corpus, sets: dict[str, recall.QuerySet], count: int) -> None:
    for qs in sets.values():
        for words in qs.queries[:count]:
            client.recall(words)
            corpus.fts5(words)


def in_turn(
    client: Client,
    corpus: Corpus,
    words: list[str],
    i: int,
    hikmah: list[float],
    fts5: list[float],
) -> None:
    """``words`` through the socket and through FTS5, who goes first alternating with
    ``i``; each time appended to its list, in ms."""
    engines: list[tuple[list[float], Callable[[list[str]], object]]] = [
        (hikmah, client.recall),
        (fts5, corpus.fts5),
    ]
    for times, run in engines if i % 2 == 0 else engines[::-1]:
        began = time.perf_counter_ns()
        run(words)
        times.append((time.perf_counter_ns() - began) / 1e6)


def timing(size: int, name: str, hikmah: list[float], fts5: list[float]) -> RecallTiming:
    return RecallTiming(
        size=size,
        query_set=name,
        queries=len(hikmah),
        hikmah_p50_ms=percentile(hikmah, 50),
        hikmah_p95_ms=percentile(hikmah, 95),
        fts5_p50_ms=percentile(fts5, 50),
        fts5_p95_ms=percentile(fts5, 95),
    )


def time_recall(
    client: Client, corpus: Corpus, sets: dict[str, recall.QuerySet], size: int
) -> list[RecallTiming]:
    """Each query through the socket and through FTS5, who goes first alternating."""
    timings = []
    for short, qs in sets.items():
        hikmah: list[float] = []
        fts5: list[float] = []
        for i, words in enumerate(qs.queries):
            in_turn(client, corpus, words, i, hikmah, fts5)
        timings.append(timing(size, short, hikmah, fts5))
        print(
            f"  {label(size)} {short}: socket p50 {timings[-1].hikmah_p50_ms:.2f} ms"
            f" p95 {timings[-1].hikmah_p95_ms:.2f} ms, FTS5 p50 {timings[-1].fts5_p50_ms:.2f} ms"
            f" p95 {timings[-1].fts5_p95_ms:.2f} ms",
            file=sys.stderr,
            flush=True,
        )
    return timings


@dataclass
class Empty:
    """The daemon on an empty store: the baseline of start and memory."""

    ready_s: float
    loaded_s: float
    semantic_s: float
    memory_loaded_kib: dict[str, int]
    memory_warm_kib: dict[str, int]


def measure_empty(root: Path, starts: int, stack: contextlib.ExitStack) -> Empty:
    """The daemon on an empty store: median start of ``starts``, memory before and after
    two recalls."""
    directory = root / "empty"
    directory.mkdir(mode=0o700)
    (directory / "policy.toml").write_text(f"recall_limit = {recall.TOP_K}\n")
    started = start(directory, root, starts, stack)
    loaded = memory_kib(started.daemon.pid)
    client = Client(started.daemon.socket)
    for words in (["deploy"], ["deploy", "cache", "worker"]):
        client.recall(words)
    client.close()
    warm_kib = memory_kib(started.daemon.pid)
    started.daemon.stop()
    semantic = percentile(started.semantic_s, 50)
    return Empty(started.ready_median_s, started.loaded_median_s, semantic, loaded, warm_kib)


@dataclass
class TierResult:
    size: int
    kept: int
    build_s: dict[str, float]
    ready_s: list[float] = field(default_factory=list)
    loaded_s: list[float] = field(default_factory=list)
    semantic_s: list[float] = field(default_factory=list)
    vectors: dict[str, Any] = field(default_factory=dict)  # daemon.status's semantic part
    memory_loaded_kib: dict[str, int] = field(default_factory=dict)
    memory_warm_kib: dict[str, int] = field(default_factory=dict)
    recall: list[RecallTiming] = field(default_factory=list)
    recall_off: list[RecallTiming] = field(default_factory=list)  # the semantic channel off
    first: list[waits.FirstAnswers] = field(default_factory=list)  # after each start
    settled: waits.FirstAnswers | None = None  # the same calls once the daemon settled
    connect: waits.ConnectTiming | None = None
    cli: dict[str, Any] = field(default_factory=dict)
    browse: dict[str, Any] = field(default_factory=dict)  # browse.KeystrokeTiming
    as_of: dict[str, Any] = field(default_factory=dict)  # asof.AsOfTiming
    store_bytes: int = 0


@dataclass(frozen=True)
class Repeats:
    """How many times each thing is done at a tier."""

    queries: int  # per query set
    warmup: int  # queries per set before the timed ones
    starts: int  # daemon starts (the median is reported)
    connects: int  # status calls on new connections (as many on a kept one)
    cli_runs: int  # ``hikmah recall`` runs, 0 for none
    typed: int  # queries per set typed a keystroke at a time (browse)
    past: int  # queries per set recalled as of the past


def measure_tier(
    corpus: Corpus,
    size: int,
    repeats: Repeats,
    root: Path,
    seed: int,
    stack: contextlib.ExitStack,
) -> TierResult:
    """Grow the corpus to ``size``, start the daemon on it and measure. The daemon is
    stopped before returning; ``root`` is the run's temp dir."""
    began = time.monotonic()
    corpus.grow(size)
    print(
        f"{label(size)}: {corpus.kept:,} traces kept, build {time.monotonic() - began:.1f} s"
        f" (Hikmah so far {corpus.hikmah_s:.1f} s, its vectors {corpus.vectors_s:.1f} s,"
        f" FTS5 {corpus.fts5_s:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    if corpus.refused:
        print(f"  refused: {dict(corpus.refused.most_common(3))}", file=sys.stderr)
    result = TierResult(
        size=size,
        kept=corpus.kept,
        build_s={"hikmah": corpus.hikmah_s, "fts5": corpus.fts5_s, "vectors": corpus.vectors_s},
        store_bytes=sum(f.stat().st_size for f in corpus.data_dir.rglob("*") if f.is_file()),
    )
    sets = corpus.query_sets(repeats.queries, seed)
    started = start(corpus.directory, root, repeats.starts, stack)
    daemon = started.daemon
    result.ready_s, result.loaded_s = started.ready_s, started.loaded_s
    result.first = started.first
    result.semantic_s = started.semantic_s
    result.vectors = wait_semantic_ready(daemon.socket)
    result.memory_loaded_kib = memory_kib(daemon.pid)
    client = Client(daemon.socket)
    warm(client, corpus, sets, repeats.warmup)
    result.memory_warm_kib = memory_kib(daemon.pid)
    result.settled = waits.settled_answers(daemon.socket, FIRST_QUERY, 20)
    result.connect = waits.connection_overhead(daemon.socket, repeats.connects)
    result.recall = time_recall(client, corpus, sets, size)
    if repeats.cli_runs:
        # The same daemon with the semantic channel off (the policy file reloads).
        policy = corpus.directory / "policy.toml"
        kept = policy.read_text()
        policy.write_text(kept + CHANNEL_OFF)
        deadline = time.monotonic() + 30
        while wait_semantic_ready(daemon.socket)["state"] != "off":
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not turn the semantic channel off")
            time.sleep(0.05)
        result.recall_off = time_recall(client, corpus, sets, size)
        policy.write_text(kept)
    client.close()
    typed = [words for qs in sets.values() for words in qs.queries[: repeats.typed]]
    result.browse = asdict(browse.measure(daemon.socket, typed))
    recalled = [words for qs in sets.values() for words in qs.queries[: repeats.past]]
    result.as_of = asdict(asof.measure(daemon.socket, recalled))
    if repeats.cli_runs:
        result.cli = measure_cli(daemon, sets["3-term"].queries[0], repeats.cli_runs)
    daemon.stop()
    return result


def measure_cli(daemon: Server, words: list[str], runs: int) -> dict[str, Any]:
    """Median wall time of ``hikmah recall`` and of the two ``-c pass`` baselines.

    The commands take turns, run by run, so that a burst of load elsewhere on the
    machine hits them alike; each is run once first to warm the page cache.
    """
    venv_python = sys.executable
    hikmah = Path(venv_python).with_name("hikmah")
    # The installed entry point, as a person runs it.
    cli = [str(hikmah)] if hikmah.exists() else [venv_python, "-m", "hikmah_cli"]
    path_python = shutil.which("python3")
    commands = {
        "venv_python": [venv_python, "-c", "pass"],
        "hikmah_recall": [*cli, "--socket", str(daemon.socket), "recall", " ".join(words)],
    }
    if path_python is not None:
        commands["path_python3"] = [path_python, "-c", "pass"]
    for argv in commands.values():
        hooks.run_ms(argv, "")
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(hooks.run_ms(argv, "")[0])
    found: dict[str, Any] = {
        "runs": runs,
        "venv_python_path": venv_python,
        "path_python3_path": path_python,
        "hikmah_argv": commands["hikmah_recall"],
    }
    for name, values in times.items():
        found[f"{name}_ms"] = statistics.median(values)
    return found


@dataclass
class ImportResult:
    available: bool
    written: int = 0
    seconds: float = 0.0
    error: str | None = None  # a refused call, or lines refused
    # Recall while the vectors catch up with the import, against FTS5 on the same notes.
    catching_up: RecallTiming | None = None

    @property
    def per_s(self) -> float | None:
        return self.written / self.seconds if self.seconds else None


def serves(path: Path, method: str) -> bool:
    """Whether the daemon knows ``method`` (anything but -32601 to empty params)."""
    client = Client(path)
    try:
        reply = json.loads(client.call_raw(method, {}))
    finally:
        client.close()
    code: object = reply.get("error", {}).get("code")
    return code != -32601


def import_lines(notes: list[Note]) -> list[bytes]:
    """``memory.import`` requests of ``IMPORT_BATCH`` lines each, numbered from 1: the
    lines of an export file (ids and times kept), as ``hikmah import`` sends them."""
    requests: list[bytes] = []
    for first in range(0, len(notes), IMPORT_BATCH):
        lines = [
            {"line": first + i + 1, "trace": exported_trace(note, first + i)}
            for i, note in enumerate(notes[first : first + IMPORT_BATCH])
        ]
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": "memory.import",
            "params": {"lines": lines},
            "id": len(requests),
        }
        requests.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    return requests


def measure_import(
    root: Path,
    size: int,
    seed: int,
    now_ms: int,
    stack: contextlib.ExitStack,
    *,
    semantic: bool = True,
    corpus: Corpus | None = None,
    queries: Sequence[list[str]] = (),
) -> ImportResult:
    """``size`` notes through ``memory.import`` into an empty durable daemon (with the
    semantic channel on, ready before the import starts, or off); then, given the
    ``corpus`` of the same notes and ``queries``, recall while the vectors catch up."""
    directory = root / ("import" if semantic else "import-off")
    directory.mkdir(mode=0o700)
    if not semantic:
        (directory / "policy.toml").write_text(CHANNEL_OFF)
    daemon = hikmahd(directory, root)
    stack.callback(daemon.stop)
    daemon.start()
    wait_semantic_ready(daemon.socket)
    try:
        if not serves(daemon.socket, "memory.import"):
            return ImportResult(available=False)
        requests = import_lines(make_notes(size, seed, now_ms))
        began = time.perf_counter()
        try:
            results = call_many(daemon.socket, requests, window=1)  # a batch at a time, as the CLI
        except RuntimeError as exc:
            return ImportResult(available=True, error=str(exc)[:300])
        seconds = time.perf_counter() - began
        written = sum(r["written"] for r in results)
        refused = [line for r in results for line in r["refused"]]
        error = None if not refused else f"{len(refused)} refused, first: {refused[0]}"[:300]
        result = ImportResult(True, written, seconds, error)
        if semantic and corpus is not None and queries:
            result.catching_up = recall_catching_up(daemon.socket, corpus, queries, size)
        return result
    finally:
        daemon.stop()


def recall_catching_up(
    path: Path, corpus: Corpus, queries: Sequence[list[str]], size: int
) -> RecallTiming | None:
    """Each query through the socket and through FTS5 in turn, for as long as the
    semantic channel is behind or building its graph (at most ``CATCH_UP_S``); None when
    it had caught up before the first query."""
    client = Client(path)
    hikmah: list[float] = []
    fts5: list[float] = []
    deadline = time.monotonic() + CATCH_UP_S
    try:
        for i, words in enumerate(itertools.cycle(queries)):
            if i % 10 == 0:
                channel = json.loads(client.call_raw("daemon.status", {}))["result"]["semantic"]
                if channel["state"] == "ready" and not channel["behind"]:
                    break
            if time.monotonic() > deadline:
                break
            in_turn(client, corpus, words, i, hikmah, fts5)
    finally:
        client.close()
    return timing(size, "catching up", hikmah, fts5) if hikmah else None
