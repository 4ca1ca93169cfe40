"""Recall through the daemon's socket timed against FTS5 in-process on the same notes,
query by query, who goes first alternating."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recall
from corpus import Corpus
from report import label
from servers import OK_PREFIX

from tests.harness.stats import percentile


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
