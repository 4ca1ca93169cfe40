"""The baseline every retrieval evaluation compares with: SQLite FTS5 ``bm25()``.

A naive memory store, as a deployment would tune it: every trace indexed
(superseded or not), the query's words without Hikmah's stopwords ORed, ranked
by ``bm25()``. Its tokenizer keeps ``_`` inside words, as Hikmah's does.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from hikmah.model.tokenizer import STOPWORDS

FTS5_TOKENIZER = "unicode61 tokenchars '_'"  # keeps load_user_cache one token, like Hikmah
_COLUMN = re.compile(r"[a-z_][a-z0-9_]*")
_SURFACE = re.compile(r"\w+")


def surface_words(text: str) -> list[str]:
    """Distinct words as FTS5's ``unicode61`` tokenizer (``_`` a token character) sees
    them, lowercased, in order."""
    return list(dict.fromkeys(_SURFACE.findall(text.lower())))


def fts5_expr(words: Iterable[str]) -> str:
    """An FTS5 query matching any of ``words`` (each quoted, so no word is an operator)."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def open_fts5(
    path: Path | str,
    rows: Iterable[Sequence[object]],
    *,
    unindexed: Sequence[str] = ("tags",),
) -> sqlite3.Connection:
    """An FTS5 table ``notes(content, *unindexed)`` holding ``rows``, optimized.

    Each row is ``(rowid, content, *values of the unindexed columns)``; only
    ``content`` is searched. The connection is tuned as a deployment would be:
    WAL, no fsync, a 64 MiB page cache and one b-tree segment after the build.
    """
    for column in unindexed:
        if not _COLUMN.fullmatch(column) or column == "content":
            raise ValueError(f"not a usable column name: {column!r}")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-65536")
    columns = ", ".join(["content", *(f"{c} UNINDEXED" for c in unindexed)])
    db.execute(f'CREATE VIRTUAL TABLE notes USING fts5({columns}, tokenize="{FTS5_TOKENIZER}")')
    placeholders = ", ".join("?" * (len(unindexed) + 2))
    names = ", ".join(["rowid", "content", *unindexed])
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO notes({names}) VALUES ({placeholders})", rows)
    db.execute("COMMIT")
    db.execute("INSERT INTO notes(notes) VALUES ('optimize')")
    return db


def query_words(text: str) -> list[str]:
    """The baseline's query: surface words without stopwords and one-letter words."""
    return [w for w in surface_words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
