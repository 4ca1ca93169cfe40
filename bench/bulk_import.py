"""Bulk import through ``hikmah import`` into an empty durable daemon, and recall while
the semantic channel's vectors catch up with it."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corpus import Corpus
from servers import CHANNEL_OFF, cli, hikmahd_daemon, wait_semantic_ready
from socket_recall import Client, RecallTiming, in_turn, timing
from workload import Note, exported_trace, make_notes

# How long recall is timed while the vectors catch up with an import, at most.
CATCH_UP_S = 60.0


@dataclass
class ImportResult:
    available: bool
    written: int = 0
    seconds: float = 0.0
    error: str | None = None  # the import failed, or refused lines
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


def write_export(notes: list[Note], path: Path) -> None:
    """``notes`` as the lines of an ``hikmah export`` file (ids and times kept)."""
    with path.open("w") as out:
        for number, note in enumerate(notes):
            out.write(json.dumps(exported_trace(note, number), separators=(",", ":")) + "\n")


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
    """``size`` notes through ``hikmah import`` (the CLI, end to end) into an empty durable
    daemon (with the semantic channel on, ready before the import starts, or off); then,
    given the ``corpus`` of the same notes and ``queries``, recall while the vectors
    catch up."""
    directory = root / ("import" if semantic else "import-off")
    directory.mkdir(mode=0o700)
    if not semantic:
        (directory / "policy.toml").write_text(CHANNEL_OFF)
    daemon = hikmahd_daemon(root, directory)
    stack.callback(daemon.stop)
    daemon.start()
    wait_semantic_ready(daemon.socket)
    try:
        if not serves(daemon.socket, "memory.import"):
            return ImportResult(available=False)
        export = directory / "traces.jsonl"
        write_export(make_notes(size, seed, now_ms), export)
        try:
            took_ms, report = cli(daemon, "import", str(export))
        except RuntimeError as exc:  # a line refused (exit 3) or the import failed
            return ImportResult(available=True, error=str(exc)[:300])
        result = ImportResult(True, int(report["written"]), took_ms / 1000)
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
