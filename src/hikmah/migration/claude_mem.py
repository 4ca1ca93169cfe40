"""claude-mem's SQLite database (``~/.claude-mem/claude-mem.db``).

The schema, as claude-mem 13.25.3's own ``SessionStore`` creates it (schema
version 52; the fixture is made by that code under Bun): ``observations``
(``id``, ``memory_session_id``, ``project``, ``type``, ``title``,
``subtitle``, ``narrative``, ``facts``, ``concepts``, ``files_read``,
``files_modified`` (JSON lists), ``text`` (older rows), ``created_at_epoch``
in ms, ``merged_into_project``) and ``session_summaries`` (``request``,
``investigated``, ``learned``, ``completed``, ``next_steps``, ``notes``,
``files_read``, ``files_edited``, ``created_at_epoch``,
``merged_into_project``). ``project`` is the folder name of the session's
working directory (``parent/worktree`` for a git worktree); claude-mem's
``adopt`` sets ``merged_into_project`` when a worktree's branch is merged.
Columns added by later versions are read when present.

The database is opened read-only (``mode=ro``, ``query_only``) with a short
busy timeout, so a database that claude-mem's worker holds locked is an error
after that timeout, never a hang, and the file is never written. (SQLite
creates the empty ``-wal`` and ``-shm`` files beside a WAL database it reads
when they are missing, as claude-mem's own readers do.)

What becomes what:

* each observation: an ``observation`` (its title, subtitle, narrative,
  facts and files), tagged with its type (``bugfix``, ``decision``, …) and
  concepts;
* each session summary: an ``episode`` (request, investigated, learned,
  completed, next steps, notes), tagged ``session-summary``;
* scope: ``project:<path>`` when the person maps the project name to its
  folder (``projects``), else ``project:<name>`` (claude-mem records only the
  folder's name); a merged worktree's rows take the project they were merged
  into, so ``adopt`` corrects their earlier import;
* times: ``created_at_epoch``; rows are identified by session and row id.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote

from hikmah.migration.items import Collector, ImportSourceError, Item, Reading, make_item
from hikmah.migration.sources import check_file
from hikmah.model.vocabulary import Kind

SOURCE = "tool:claude-mem"
WHAT = "a claude-mem database (claude-mem.db)"
BUSY_TIMEOUT = 2.0

_OBSERVATION_COLUMNS = (
    "id",
    "memory_session_id",
    "project",
    "merged_into_project",
    "type",
    "title",
    "subtitle",
    "narrative",
    "text",
    "facts",
    "concepts",
    "files_read",
    "files_modified",
    "created_at_epoch",
)
_SUMMARY_COLUMNS = (
    "id",
    "memory_session_id",
    "project",
    "merged_into_project",
    "request",
    "investigated",
    "learned",
    "completed",
    "next_steps",
    "notes",
    "files_read",
    "files_edited",
    "created_at_epoch",
)
_SUMMARY_PARTS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)
_REQUIRED = ("id", "memory_session_id", "project", "created_at_epoch")
Row = dict[str, object]


def read(
    path: Path, *, projects: Mapping[str, str] | None = None, timeout: float = BUSY_TIMEOUT
) -> Reading:
    """Read a claude-mem database into items.

    Args:
        path: the database file.
        projects: claude-mem project names mapped to the scope of each (for
            example ``{"webapp": "project:/home/ana/src/webapp"}``).
        timeout: seconds to wait for a lock claude-mem holds.

    Raises:
        ImportSourceError: not a file, not an SQLite database (or a damaged
            one), not claude-mem's schema, locked past the timeout, or a row
            whose JSON columns are not lists (named by table and row id).
    """
    path = path.absolute()  # locators name the file wherever the import ran
    check_file(path, WHAT)
    found = Collector()
    scopes = dict(projects or {})
    try:
        connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error as exc:
        raise _error(path, exc) from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.row_factory = sqlite3.Row
        for row in _rows(connection, path, "observations", _OBSERVATION_COLUMNS):
            _observation(found, row, path, scopes)
        for row in _rows(connection, path, "session_summaries", _SUMMARY_COLUMNS):
            _summary(found, row, path, scopes)
    except sqlite3.Error as exc:
        raise _error(path, exc) from None
    finally:
        connection.close()
    return found.reading()


def _rows(
    connection: sqlite3.Connection, path: Path, table: str, wanted: tuple[str, ...]
) -> Iterator[Row]:
    present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
    if not present:
        raise ImportSourceError(f"{path} has no {table} table: it is not {WHAT}")
    missing = [name for name in _REQUIRED if name not in present]
    if missing:
        raise ImportSourceError(
            f"{path}: the {table} table has no {', '.join(missing)} column: it is not {WHAT}"
        )
    columns = [name for name in wanted if name in present]
    query = f"SELECT {', '.join(columns)} FROM {table} ORDER BY id"  # names from our list
    for row in connection.execute(query):
        yield {name: row[name] for name in columns}


def _observation(found: Collector, row: Row, path: Path, scopes: dict[str, str]) -> None:
    where = f"{path}#observations/{row['id']}"
    head = [_text(row.get("title")), _text(row.get("subtitle"))]
    body = _text(row.get("narrative")) or _text(row.get("text"))
    facts = "\n".join(f"- {fact}" for fact in _list(row, "facts", where))
    files = _files(row, where, ("files_read", "Files read"), ("files_modified", "Files modified"))
    content = "\n\n".join(filter(None, ("\n".join(filter(None, head)), body, facts, files)))
    if not content.strip():
        found.skip(where, "an observation with no text")
        return
    tags = [_text(row.get("type")), *_list(row, "concepts", where)]
    found.add(_item(row, "observations", where, "observation", content, tags, scopes))


def _summary(found: Collector, row: Row, path: Path, scopes: dict[str, str]) -> None:
    where = f"{path}#session_summaries/{row['id']}"
    parts = [f"{label}: {_text(row.get(name))}" for name, label in _SUMMARY_PARTS if row.get(name)]
    files = _files(row, where, ("files_read", "Files read"), ("files_edited", "Files edited"))
    content = "\n".join(parts + ([files] if files else []))
    if not parts:
        found.skip(where, "a session summary with no text")
        return
    item = _item(row, "session_summaries", where, "episode", content, ["session-summary"], scopes)
    found.add(item)


def _item(
    row: Row,
    table: str,
    where: str,
    kind: Kind,
    content: str,
    tags: list[str],
    scopes: dict[str, str],
) -> Item:
    created = row["created_at_epoch"]
    if not isinstance(created, int):
        raise ImportSourceError(f"{where}: created_at_epoch is not a time in milliseconds")
    project = _text(row.get("merged_into_project")) or _text(row["project"])
    return make_item(
        source=SOURCE,
        identity=f"{table}\0{row['memory_session_id']}\0{row['id']}",
        locator=where,
        kind=kind,
        content=content,
        tags=tags,
        scope=scopes.get(project) or (f"project:{project}" if project else "global"),
        created_at=created,
        born_at=created,
    )


def _files(row: Row, where: str, *fields: tuple[str, str]) -> str:
    lines = []
    for name, label in fields:
        files = _list(row, name, where)
        if files:
            lines.append(f"{label}: {', '.join(files)}")
    return "\n".join(lines)


def _list(row: Row, name: str, where: str) -> list[str]:
    raw = row.get(name)
    if raw is None or raw == "":
        return []
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ImportSourceError(f"{where}: {name} is not a JSON list of strings")
    return [v for v in value if v.strip()]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _error(path: Path, exc: sqlite3.Error) -> ImportSourceError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return ImportSourceError(
            f"{path} is locked by another program (claude-mem's worker?): stop it or copy"
            " the file, then import again"
        )
    if "not a database" in text or "malformed" in text:
        return ImportSourceError(f"{path} is not an SQLite database, or it is damaged: not {WHAT}")
    return ImportSourceError(f"cannot read {path}: {text}")
