"""``hikmah import --from SOURCE PATH`` end to end: the peers' own exports
(tests/fixtures/peers, each made by the peer's npm or PyPI package; MANIFEST.json names
the version) through the real CLI into a real daemon, which reads them itself.

Each source: a dry run writes nothing and says what would be written; the import makes
traces of the right kinds with the peer's provenance, never verified; importing again
writes nothing; the peer's next export corrects what it changed instead of copying it;
a credential is refused by record and never echoed; a restatement of what memory holds
is reported and kept; bad input is one clear error and writes nothing. Then: an import
from inside an agent session is the agent's, a person verifies what they checked in one
confirmed step, and a long import pages with a progress bar."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hikmah import migration
from hikmah.migration.items import item_trace_id
from tests.clients.peer_exports import PEERS, PEERS_BY_SOURCE, place
from tests.harness.daemon import Running, own_daemon
from tests.harness.environment import clean_env

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id
SOURCES = list(PEERS_BY_SOURCE)
V1_KINDS = {
    "mcp-memory": {"belief": 10, "observation": 10},
    "claude-mem": {"episode": 2, "observation": 5},
    "mem0": {"observation": 5},
    "basic-memory": {"belief": 3, "observation": 9},
    "claude-md": {"constraint": 5, "observation": 1, "preference": 3, "procedure": 3},
}
# What v2 writes over v1: new records, corrections of changed ones, unchanged ones.
V2_COUNTS = {
    "mcp-memory": (8, 3, 9),
    "claude-mem": (2, 2, 5),
    "mem0": (1, 1, 3),
    "basic-memory": (2, 3, 5),
    "claude-md": (1, 1, 10),
}
AGENT = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s-import-1"}


def import_from(
    daemon: Running, source: str, path: Path, *flags: str, code: int = 0, env: Any = None
) -> Any:
    result = daemon.cli("import", "--from", source, str(path), "--json", *flags,
                        env=env or clean_env())  # fmt: skip
    assert result.returncode == code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def exported(daemon: Running) -> list[dict[str, Any]]:
    result = daemon.cli("export", "--include-superseded", env=clean_env())
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def of(lines: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["provenance"]["source"] == f"tool:{source}"]


def reading(source: str, path: Path) -> migration.Reading:
    """The items the daemon reads from ``path`` (the kernel's reader, same arguments)."""
    return migration.read(source, path, home=Path.home())


@pytest.mark.parametrize("source", SOURCES)
def test_round_trip(daemon: Running, tmp_path: Path, source: str) -> None:
    path = place(tmp_path, source, "v1")
    items = reading(source, path).items

    dry = import_from(daemon, source, path, "--dry-run")
    assert dry["dry_run"] and dry["total"] == len(items) == dry["written"]
    assert [p["id"] for p in dry["planned"]] == [item_trace_id(i, 1) for i in items]
    assert {p["action"] for p in dry["planned"]} == {"new"}
    assert exported(daemon) == []

    first = import_from(daemon, source, path)
    assert (first["written"], first["corrected"], first["refused"]) == (len(items), 0, [])
    lines = exported(daemon)
    assert dict(Counter(line["kind"] for line in of(lines, source))) == V1_KINDS[source]
    assert len(lines) == len(items)
    for item in items[:3]:
        found = daemon.call("memory.recall", query=item.content, limit=3)["results"]
        (trace,) = [r["trace"] for r in found if r["trace"]["id"] == item_trace_id(item, 1)]
        assert (trace["kind"], trace["scope"], trace["created_at"]) == (
            item.kind,
            item.scope,
            item.created_at,
        )
        assert trace["provenance"] | {"authority": None, "observed_at": None} == {
            "source": f"tool:{source}",
            "locator": item.locator,
            "verified": False,
            "authority": None,
            "observed_at": None,
            "evidence": [],
        }

    again = import_from(daemon, source, path)
    assert (again["written"], again["corrected"], again["already"]) == (0, 0, len(items))
    assert exported(daemon) == lines

    place(tmp_path, source, "v2")
    later = import_from(daemon, source, path)
    assert (later["written"], later["corrected"], later["already"]) == V2_COUNTS[source]
    after = of(exported(daemon), source)
    superseded = [line for line in after if line["status"] == "superseded"]
    corrections = [line for line in after if line["supersedes"] is not None]
    # Each changed record is a correction of its import, not a second copy beside it.
    assert len(superseded) == len(corrections) == later["corrected"]
    assert {c["supersedes"] for c in corrections} == {s["id"] for s in superseded}
    assert len(after) == len(items) + later["written"] + later["corrected"]
    assert all(not line["provenance"]["verified"] for line in after)


def test_the_dry_run_says_what_it_would_write_for_a_person(daemon: Running, tmp_path: Path) -> None:
    path = place(tmp_path, "mem0", "v1")
    result = daemon.cli("import", "--from", "mem0", str(path), "--dry-run", env=clean_env())
    assert result.returncode == 0, result.stderr
    assert f"dry run of mem0 {path}:" in result.stdout
    assert "new        observation" in result.stdout and "Lives in Porto" in result.stdout
    assert "5 records, would be: 5 new, 0 corrected, 0 already imported" in result.stdout
    assert "nothing was written (--dry-run)" in result.stdout
    assert daemon.call("daemon.status")["counts"]["active"] == 0


def leak(source: str, path: Path) -> None:
    """Put the credential into one record of the export, as a person's notes might."""
    if source == "mcp-memory":
        lines = path.read_text().splitlines()
        entity = json.loads(lines[0])
        entity["observations"].append(f"deploy key {KEY}")
        path.write_text("\n".join([json.dumps(entity), *lines[1:]]) + "\n")
    elif source == "claude-mem":
        with sqlite3.connect(path) as db:
            db.execute("UPDATE observations SET narrative = ? WHERE id = 2", (f"key {KEY}",))
        db.close()
    elif source == "mem0":
        export = json.loads(path.read_text())
        export["results"][1]["memory"] = f"The deploy key is {KEY}"
        path.write_text(json.dumps(export))
    elif source == "basic-memory":
        note = path / "notes" / "Coffee Beans.md"
        text = note.read_text().replace("## Observations\n", f"## Observations\n- [ops] {KEY}\n")
        note.write_text(text)
    else:
        text = path.read_text().replace("## Rules\n\n", f"## Rules\n\n- Deploy with {KEY}\n", 1)
        assert KEY in text
        path.write_text(text)


@pytest.mark.parametrize("source", SOURCES)
def test_a_credential_is_refused_by_record_and_a_restatement_is_reported(
    daemon: Running, tmp_path: Path, source: str
) -> None:
    path = place(tmp_path, source, "v1")
    leak(source, path)
    items = reading(source, path).items
    said = items[-1]  # the person wrote this down already, in their own words' spacing
    mine = daemon.call("memory.remember", content=f"  {said.content.upper()} ")["trace"]["id"]

    for flags in (("--dry-run",), ()):
        result = daemon.cli("import", "--from", source, str(path), "--json", *flags,
                            env=clean_env())  # fmt: skip
        assert result.returncode == 3, result.stderr
        assert KEY not in result.stdout + result.stderr
        report = json.loads(result.stdout)
        (refused,) = report["refused"]
        assert refused["locator"].startswith(str(path))
        assert "credential" in refused["reason"]
        assert report["written"] == len(items) - 1
        assert report["duplicates"] == [{"locator": said.locator, "of": mine}]
    # Kept all the same: the store keeps every write, and recall folds the two.
    assert daemon.call("memory.show", id=item_trace_id(said, 1))["status"] == "active"
    results = daemon.call("memory.recall", query=said.content, limit=8)["results"]
    (hit,) = [r for r in results if r["trace"]["id"] in (mine, item_trace_id(said, 1))]
    assert hit["duplicates"] >= 1
    assert KEY not in json.dumps(exported(daemon))
    on_disk = b"".join(p.read_bytes() for p in daemon.data.rglob("*") if p.is_file())
    assert KEY.encode() not in on_disk


# --- bad input: one daemon for every case, since none may write ------------------------


@pytest.fixture(scope="module")
def quiet() -> Iterator[Running]:
    with own_daemon() as running:
        yield running


def truncated(root: Path, source: str) -> Path:
    path = place(root, source, "v1")
    if source == "basic-memory":  # a copy cut short inside a character
        note = path / "notes" / "Coffee Beans.md"
        note.write_bytes(note.read_bytes() + "caf\u00e9".encode()[:-1])
    elif source == "claude-md":  # cut inside Hikmah's block: it never closes
        text = path.read_text()
        path.write_text(text[: text.index("<!-- hikmah:end -->")])
    else:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) * 2 // 3])
    return path


def corrupt_database(root: Path) -> Path:
    path = place(root, "claude-mem", "v1")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\x07" * (4096 - 100)  # the schema's page overwritten
    path.write_bytes(bytes(data))
    return path


CUT_SHORT = {
    "mcp-memory": "is not a JSON object: the file is cut short or damaged",
    "claude-mem": "is not an SQLite database, or it is damaged",
    "mem0": "is cut short: not a mem0 export",
    "basic-memory": "is not UTF-8 text",
    "claude-md": "do not form one block",
}
BAD: list[tuple[str, str, Any, str]] = [
    *((f"truncated {s}", s, lambda r, s=s: truncated(r, s), CUT_SHORT[s]) for s in SOURCES),
    ("corrupt database", "claude-mem", corrupt_database, "is not an SQLite database"),
    ("mem0 as mcp-memory", "mcp-memory", lambda r: place(r, "mem0"), "is not a JSON object"),
    ("graph as mem0", "mem0", lambda r: place(r, "mcp-memory"), "not a mem0 export"),
    ("markdown as claude-mem", "claude-mem", lambda r: place(r, "claude-md"), "not an SQLite"),
    ("database as claude-md", "claude-md", lambda r: place(r, "claude-mem"), "not a Markdown"),
    ("a file as basic-memory", "basic-memory", lambda r: place(r, "mem0"), "is not a directory"),
    *(
        (f"a folder as {s}", s, lambda r: PEERS, "is a directory")
        for s in ("mcp-memory", "claude-mem", "mem0", "claude-md")
    ),
    ("nothing there", "mem0", lambda r: r / "missing.json", "does not exist"),
    ("nested 100,000 deep (mem0)", "mem0", lambda r: deep(r, "memories.json"), "nests JSON deeper"),
    ("nested 100,000 deep (mcp-memory)", "mcp-memory", lambda r: deep(r, "memory.jsonl"), "nests"),
]


def deep(root: Path, name: str) -> Path:
    path = root / name
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    return path


@pytest.mark.parametrize(("source", "make", "says"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_clear_error_and_writes_nothing(
    quiet: Running, tmp_path: Path, source: str, make: Any, says: str
) -> None:
    path = make(tmp_path)
    for flags in ((), ("--dry-run",)):
        result = quiet.cli("import", "--from", source, str(path), *flags, env=clean_env())
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"hikmah import: {path}") and says in line
        assert KEY not in line
    assert quiet.call("daemon.status")["counts"]["active"] == 0


def test_a_locked_database_is_an_error_after_a_short_wait(quiet: Running, tmp_path: Path) -> None:
    path = place(tmp_path, "claude-mem", "v1")
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    holding = "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
    holding += " c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(30)"
    with subprocess.Popen(
        [sys.executable, "-c", holding, str(path)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            result = quiet.cli("import", "--from", "claude-mem", str(path), env=clean_env())
        finally:
            holder.kill()
    assert result.returncode == 2
    assert f"{path} is locked by another program" in result.stderr
    assert quiet.call("daemon.status")["counts"]["active"] == 0


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--dry-run",), "--dry-run is for --from SOURCE"),
        (("--project", "a=/b"), "--project is for --from SOURCE"),
        (("--from", "mem0", "--expect-head", "1:ab"), "are for ledgers"),
        (("--from", "claude-mem", "--project", "webapp"), "--project takes NAME=DIR"),
        (("--from", "memos"), "invalid choice: 'memos'"),
    ],
)
def test_flags_that_do_not_go_together_are_usage_errors(
    quiet: Running, tmp_path: Path, flags: tuple[str, ...], says: str
) -> None:
    path = place(tmp_path, "mem0", "v1")
    result = quiet.cli("import", str(path), *flags, env=clean_env())
    assert result.returncode == 2 and says in result.stderr


# --- who imports, and who verifies --------------------------------------------------------


def test_a_person_verifies_what_they_checked_in_one_confirmed_step(
    daemon: Running, tmp_path: Path
) -> None:
    path = place(tmp_path, "mem0", "v1")
    import_from(daemon, "mem0", path)
    verify = ("verify", "--source", "tool:mem0")
    piped = daemon.cli(*verify, env=clean_env())
    assert piped.returncode == 2 and "at a terminal to confirm" in piped.stderr
    code, _, shown = daemon.cli_on_terminal(*verify, env=clean_env(), typed="n\n")
    assert code == 0, shown
    assert "5 unverified active traces of tool:mem0" in shown and "Lives in Porto" in shown
    assert not any(line["provenance"]["verified"] for line in exported(daemon))

    code, out, shown = daemon.cli_on_terminal(*verify, env=clean_env(), typed="y\n")
    assert code == 0 and "verified 5 traces" in out, shown
    lines = exported(daemon)
    active = [line for line in lines if line["status"] == "active"]
    items = {item_trace_id(i, 1): i for i in reading("mem0", path).items}
    assert len(active) == 5 and all(line["provenance"]["verified"] for line in active)
    for line in active:  # each a verified copy of an import, the record's locator kept
        item = items[line["supersedes"]]
        assert (line["content"], line["kind"], line["created_at"]) == (
            item.content,
            item.kind,
            item.created_at,
        )
        assert line["provenance"]["locator"] == item.locator
        assert line["provenance"]["source"] == "tool:mem0"
    assert "nothing to verify" in daemon.cli_on_terminal(*verify, env=clean_env(), typed="y\n")[1]

    # The next export: the unchanged records are there already, the record mem0 changed
    # leaves the person's verified trace alone, and only the new one awaits verifying.
    assert import_from(daemon, "mem0", path)["already"] == 5
    place(tmp_path, "mem0", "v2")
    later = import_from(daemon, "mem0", path)
    assert (later["written"], later["corrected"], later["kept_correction"]) == (1, 0, 1)
    preview = daemon.call("memory.verify", source="tool:mem0")
    assert preview["matched"] == 1 and preview["verified"] == 0
    with daemon.connect() as conn:
        stale = conn.request("memory.verify", source="tool:mem0", confirm="0" * 16)
    assert stale["error"]["data"]["reason"] == "conflict"
    confirmed = daemon.call("memory.verify", source="tool:mem0", confirm=preview["selection"])
    assert confirmed["verified"] == 1


def test_an_import_in_an_agent_session_is_the_agent_s_and_never_verified(
    daemon: Running, tmp_path: Path
) -> None:
    path = place(tmp_path, "claude-md", "v1")
    agent = clean_env(**AGENT)
    report = import_from(daemon, "claude-md", path, env=agent)
    assert report["written"] == 12
    lines = exported(daemon)
    stamp = "agent-session:claude-code:s-import-1; "
    assert all(line["provenance"]["locator"].startswith(stamp + str(path)) for line in lines)
    assert not any(line["provenance"]["verified"] for line in lines)
    # The same records, whoever imports them again.
    assert import_from(daemon, "claude-md", path)["already"] == 12

    code, _, shown = daemon.cli_on_terminal(
        "verify", "--source", "tool:claude-md", env=agent, typed="y\n"
    )
    assert code == 3 and "needs a person" in shown
    assert not any(line["provenance"]["verified"] for line in exported(daemon))
    # A person vouches for the record, not for the agent's stamp.
    code, out, shown = daemon.cli_on_terminal(
        "verify", "--source", "tool:claude-md", "--kind", "constraint", env=clean_env(),
        typed="y\n",
    )  # fmt: skip
    assert code == 0 and "verified 5 traces" in out, shown
    verified = [line for line in exported(daemon) if line["provenance"]["verified"]]
    assert len(verified) == 5 and {line["kind"] for line in verified} == {"constraint"}
    assert all(line["provenance"]["locator"].startswith(str(path)) for line in verified)


def test_claude_mem_projects_take_the_folders_the_person_names(
    daemon: Running, tmp_path: Path
) -> None:
    path = place(tmp_path, "claude-mem", "v1")
    webapp = tmp_path / "src" / "webapp"
    (webapp / ".git").mkdir(parents=True)
    import_from(daemon, "claude-mem", path, "--project", f"webapp={webapp}")
    scopes = Counter(line["scope"] for line in exported(daemon))
    assert scopes == {f"project:{webapp}": 3, "project:webapp/feat-login": 2, "project:dotfiles": 2}


# --- a long import ------------------------------------------------------------------------


def mem0_export(path: Path, records: int, offset: int = 0) -> Path:
    """A mem0 get_all() export of ``records`` memories, grown from the peer-made one."""
    template = json.loads((PEERS / "mem0" / "mem0-v1.json").read_text())["results"][0]
    results = [
        {**template, "id": f"00000000-0000-4000-8000-{n:012d}", "memory": f"Memory {n} of many"}
        for n in range(offset, offset + records)
    ]
    path.write_text(json.dumps({"results": results}))
    return path


def test_a_long_import_pages_with_a_progress_bar(daemon: Running, tmp_path: Path) -> None:
    path = mem0_export(tmp_path / "mem0.json", 1200)
    code, out, shown = daemon.cli_on_terminal("import", "--from", "mem0", str(path),
                                              env=clean_env())  # fmt: skip
    assert code == 0, shown
    assert "imported 1200/1200 records" in shown and "100%" in shown
    assert "1200 records: 1200 new, 0 corrected" in out and "\r" not in out
    assert daemon.call("daemon.status")["counts"]["active"] == 1200


def test_pages_of_one_import_agree_even_if_the_export_changes(
    daemon: Running, tmp_path: Path
) -> None:
    path = mem0_export(tmp_path / "mem0.json", 700)
    params = {"source": "mem0", "path": str(path), "dry_run": True}
    with daemon.connect() as conn:
        first = conn.call("memory.import_source", **params)
        assert (first["total"], first["next"], len(first["planned"])) == (700, 500, 500)
        mem0_export(path, 900, offset=700)  # the tool exported again meanwhile
        second = conn.call("memory.import_source", **params, start=500)
    # The same connection's next page is read from the same reading of the file ...
    assert (second["total"], second["next"], len(second["planned"])) == (700, None, 200)
    assert second["planned"][-1]["preview"] == "Memory 699 of many"
    # ... and any other call reads the file as it is now.
    fresh = daemon.call("memory.import_source", **params, start=500)
    assert (fresh["total"], fresh["next"]) == (900, None)
    assert fresh["planned"][0]["preview"] == "Memory 1200 of many"
    with daemon.connect() as conn:
        relative = conn.request("memory.import_source", source="mem0", path="mem0.json")
    assert relative["error"]["data"]["reason"] == "invalid"
    assert "absolute path" in relative["error"]["message"]


def graph_with(path: Path, *observations: str) -> Path:
    """An MCP memory graph of one entity with these observations."""
    entity = {"type": "entity", "name": "notes", "entityType": "thing"}
    path.write_text(json.dumps({**entity, "observations": list(observations)}) + "\n")
    return path


def test_a_record_too_large_to_be_a_trace_is_refused_by_locator_and_the_rest_imported(
    daemon: Running, tmp_path: Path
) -> None:
    pasted = "a pasted build log line " * 150_000  # 3.4 MiB, over max_trace_bytes (256 KiB)
    path = graph_with(tmp_path / "memory.jsonl", "the build runs on Fridays", pasted)
    result = daemon.cli("import", "--from", "mcp-memory", str(path), "--json", env=clean_env())
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["written"] == 2  # the other observation and the entity's type
    (refused,) = report["refused"]
    assert refused["locator"] == f"{path}:1 observations[1]"
    assert "over the policy's max_trace_bytes (256 KiB)" in refused["reason"]
    assert "pasted build log" not in result.stdout + result.stderr
    assert all(len(t["content"]) < 1000 for t in exported(daemon))


def test_the_daemon_answers_while_an_export_with_a_huge_record_is_read(
    daemon: Running, tmp_path: Path
) -> None:
    path = graph_with(tmp_path / "memory.jsonl", "word " * 8_000_000)  # one 40 MB record
    importing = subprocess.Popen(
        [sys.executable, "-m", "hikmah_cli", "--socket", str(daemon.socket), "--no-autostart",
         "import", "--from", "mcp-memory", str(path), "--json"],
        stdout=subprocess.PIPE, env=clean_env(),
    )  # fmt: skip
    waits = []
    with daemon.connect() as conn:
        while importing.poll() is None:
            began = time.monotonic()
            conn.call("daemon.status")
            waits.append(time.monotonic() - began)
    out, _ = importing.communicate()
    assert importing.returncode == 3 and "max_trace_bytes" in out.decode()
    # Read in the daemon's own process, the record held it 12 s here; now it is parsed in
    # one of its own, and the daemon never waits for it (the bound is for a loaded CI).
    assert waits and max(waits) < 1.0, waits
