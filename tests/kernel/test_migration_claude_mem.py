"""claude-mem's SQLite database, as claude-mem's own SessionStore created and filled it
(tests/fixtures/peers/claude-mem: its npm package run by Bun, v2 after its own ``adopt``)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import ImportSourceError, claude_mem, read
from hikmah.store.core import Store
from tests.kernel.peers import copy, import_items, kinds

T0 = 1_790_845_200_000  # 2026-10-01T09:00Z, the fixture's first observation


def database(tmp_path: Path, version: str = "v1") -> Path:
    return copy("claude-mem", f"claude-mem-{version}.db", tmp_path)


def test_observations_and_summaries_become_observations_and_episodes(tmp_path: Path) -> None:
    path = database(tmp_path)
    reading = read("claude-mem", path)
    assert reading.skipped == []
    assert kinds(reading.items) == {"episode": 2, "observation": 5}
    first = reading.items[0]
    assert first.content == (
        "Login redirect loop fixed\nThe session cookie lacked SameSite\n\n"
        "Safari dropped the cookie on the OAuth callback, so every login bounced back to"
        " /login.\n\n- Cookies are set in auth/session.ts\n- SameSite=Lax fixes the callback\n\n"
        "Files read: auth/session.ts\nFiles modified: auth/session.ts"
    )
    assert first.tags == ("bugfix", "problem-solution", "gotcha")
    assert first.scope == "project:webapp"
    assert (first.created_at, first.born_at) == (T0, T0)
    assert first.locator == f"{path}#observations/1"
    assert first.source == "tool:claude-mem"
    legacy = reading.items[4]  # written by claude-mem's importObservation: text only
    assert (legacy.content, legacy.scope) == ("zsh loads nvm lazily since 2025", "project:dotfiles")
    summary = reading.items[5]
    assert summary.kind == "episode" and summary.tags == ("session-summary",)
    assert summary.content.splitlines()[:2] == [
        "Request: Fix the login redirect loop",
        "Investigated: Cookie flags on the OAuth callback",
    ]
    assert summary.created_at == T0 + 120_000
    assert {i.scope for i in reading.items} == {
        "project:webapp",
        "project:webapp/feat-login",
        "project:dotfiles",
    }


def test_project_names_map_to_the_person_s_project_scopes(tmp_path: Path) -> None:
    projects = {"webapp": "project:/home/ana/src/webapp"}
    reading = read("claude-mem", database(tmp_path), projects=projects)
    assert reading.items[0].scope == "project:/home/ana/src/webapp"
    assert reading.items[3].scope == "project:dotfiles"


def test_the_database_is_only_read(tmp_path: Path) -> None:
    path = database(tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    first = read("claude-mem", path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert [(i.identity, i.version) for i in read("claude-mem", path).items] == [
        (i.identity, i.version) for i in first.items
    ]


def test_v2_adds_the_new_session_and_the_adopted_worktree_rows_move_project(
    tmp_path: Path, store: Store
) -> None:
    v1 = read("claude-mem", database(tmp_path)).items
    v2 = read("claude-mem", database(tmp_path, "v2")).items
    assert len(import_items(store, v1)[0]) == 7
    assert import_items(store, v1)[0] == []
    writes, skips = import_items(store, v2)
    new = sorted(w.item.locator.rsplit("#", 1)[1] for w in writes if not w.correction)
    assert new == ["observations/6", "session_summaries/3"]
    moved = {w.item.locator.rsplit("#", 1)[1]: w for w in writes if w.correction}
    assert sorted(moved) == ["observations/3", "session_summaries/2"]
    for write in moved.values():
        assert write.item.scope == "project:webapp"
        old = store.read(queries.get, write.draft.supersedes or "")
        assert old.trace.scope == "project:webapp/feat-login" and old.status == "superseded"
    assert len(skips) == 5 and {s.reason for s in skips} == {"already"}
    # The v1 database again, after v2: its rows are not newer, so nothing flips back.
    assert import_items(store, v1)[0] == []


def test_a_locked_database_is_an_error_after_the_timeout_not_a_hang(tmp_path: Path) -> None:
    path = database(tmp_path)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = DELETE")
    # Another process (as claude-mem's worker would be) holds an exclusive lock.
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(30)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            started = time.monotonic()
            with pytest.raises(ImportSourceError, match=rf"^{path} is locked by another program"):
                claude_mem.read(path, timeout=0.2)
            assert time.monotonic() - started < 10
        finally:
            holder.kill()


def test_corrupt_and_truncated_databases_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 2\0" + b"\x07" * 4096)
    with pytest.raises(ImportSourceError, match="is not an SQLite database, or it is damaged"):
        read("claude-mem", garbage)
    path = database(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ImportSourceError, match="is not an SQLite database, or it is damaged"):
        read("claude-mem", path)


def test_the_wrong_input_for_the_source_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportSourceError, match="is a directory: give the file of a claude-mem"):
        read("claude-mem", tmp_path)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with pytest.raises(ImportSourceError, match="has no observations table"):
        read("claude-mem", other)
    text = copy("mcp-memory", "memory-v1.jsonl", tmp_path)
    with pytest.raises(ImportSourceError, match="is not an SQLite database"):
        read("claude-mem", text)


def test_a_malformed_row_is_named_by_table_and_id_without_its_text(tmp_path: Path) -> None:
    path = database(tmp_path)
    secret = "AKIAIOSFODNN7EXAMPLE"
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE observations SET facts = ? WHERE id = 2", (f"[{secret}",))
    with pytest.raises(
        ImportSourceError, match=r"#observations/2: facts is not a JSON list"
    ) as caught:
        read("claude-mem", path)
    assert secret not in str(caught.value)
