"""The store at scale: one corpus grown tier by tier, hikmahd started on it, measured.

At each tier the corpus (``corpus.py``: the same notes in a Hikmah store and an FTS5
table) grows to the tier's size, the daemon is started on the store (a separate
process, as a person runs it, ``daemon_starts.py``) and :func:`measure_tier` times its
start, reads its memory, and times recall through its socket against FTS5 on the same
notes (``socket_recall.py``). Bulk import is ``bulk_import.py``.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asof
import browse
import hooks
import recall
import waits
from corpus import Corpus
from daemon_starts import FIRST_QUERY, start
from report import label
from servers import CHANNEL_OFF, Server, memory_kib, wait_semantic_ready
from socket_recall import Client, RecallTiming, time_recall, warm

from tests.harness.stats import percentile


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
