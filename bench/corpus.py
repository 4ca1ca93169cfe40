"""The suite's corpus: the same notes in a Hikmah store and an FTS5 table, grown tier by
tier, and the query sets drawn from it.

The store is written in-process (``Store(durable=False)``, batches of 1,000: a million
RPC writes would take an hour), then the semantic channel's vectors are brought up to
date and saved, as the daemon keeps them, with the HNSW graph built on two threads. The
corpus grows from one tier to the next, since the notes of ``workload.iter_notes`` for a
seed are a prefix of the notes of any larger tier.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from itertools import islice
from pathlib import Path

import recall
from workload import iter_notes, remember

from hikmah.evaluation.fts5 import fts5_expr, open_fts5, surface_words
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.semantic.models import load_model
from hikmah.store.core import Store
from hikmah.store.vectors import open_vectors

BATCH = 1000
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
