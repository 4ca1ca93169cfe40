"""hikmahd started on a corpus: each start timed to the socket accepting, to its first
answers, to the promise queue loaded and to the semantic channel ready; and a script's
run on its own over a corpus built for it."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import waits
from corpus import Corpus
from servers import Daemon, hikmahd_daemon, wait_semantic_ready

from tests.harness.stats import percentile

T = TypeVar("T")
# What the first recall after a start asks (an agent's session start asks about its work).
FIRST_QUERY = "deploy the staging database"


@dataclass
class Started:
    """The daemon left running after ``starts`` starts, and what they took."""

    daemon: Daemon
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
        daemon = hikmahd_daemon(env_root, directory)
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
