"""How fast the import readers read a large export: 10k items per source by default.

    .venv/bin/python bench/migration.py [--items 10000] [--runs 5] [--json PATH]

For each source it generates an export of about ``--items`` items in the peer's
own format, grown from the peer-made fixture in tests/fixtures/peers (the same
records, renamed: claude-mem rows inserted into a copy of the database
claude-mem's schema code made, notes shaped like basic-memory's, and so on),
then times, median of ``--runs``:

* read: ``hikmah.migration.read`` of the whole export;
* baseline: only parsing the same bytes (json per line, json of the file,
  ``SELECT *`` of the two tables, reading and splitting the Markdown files),
  so the ratio says what the mapping into items costs over the parse alone;
* plan: :func:`hikmah.migration.plan` of every item against a store that
  already holds them (a re-import: every item walks its chain and is skipped).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hikmah.migration import Write, plan, plan_page, read  # noqa: E402
from hikmah.policy import KernelPolicy  # noqa: E402
from hikmah.rules import Remember  # noqa: E402
from hikmah.store import Store  # noqa: E402

PEERS = ROOT / "tests" / "fixtures" / "peers"
NOW = 1_790_000_000_000


def mcp_memory(folder: Path, items: int) -> tuple[Path, Callable[[], object]]:
    path = folder / "memory.jsonl"
    entities = items // 10
    lines = []
    for n in range(entities):
        observations = [
            f"Observation {k} about entity {n}: prefers tool {k * n % 97}" for k in range(8)
        ]
        lines.append(
            json.dumps(
                {
                    "type": "entity",
                    "name": f"Entity {n}",
                    "entityType": "person",
                    "observations": observations,
                }
            )
        )
    for n in range(entities):
        lines.append(
            json.dumps(
                {
                    "type": "relation",
                    "from": f"Entity {n}",
                    "to": f"Entity {(n + 1) % entities}",
                    "relationType": "knows",
                }
            )
        )
    path.write_text("\n".join(lines))

    def baseline() -> object:
        with path.open("rb") as file:
            return [json.loads(line) for line in file if line.strip()]

    return path, baseline


def mem0(folder: Path, items: int) -> tuple[Path, Callable[[], object]]:
    path = folder / "mem0.json"
    (template, *_) = json.loads((PEERS / "mem0" / "mem0-v1.json").read_text())["results"]
    results = [
        {
            **template,
            "id": f"00000000-0000-4000-8000-{n:012d}",
            "memory": f"Memory {n}: likes topic {n % 211}",
        }
        for n in range(items)
    ]
    path.write_text(json.dumps({"results": results}))
    return path, lambda: json.loads(path.read_bytes())


def claude_mem(folder: Path, items: int) -> tuple[Path, Callable[[], object]]:
    path = folder / "claude-mem.db"
    shutil.copyfile(PEERS / "claude-mem" / "claude-mem-v1.db", path)
    observations, summaries = items * 4 // 5, items // 5
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM observations")
        db.execute("DELETE FROM session_summaries")
        db.executemany(
            "INSERT INTO observations (memory_session_id, project, type, title, narrative, facts,"
            " concepts, files_read, files_modified, content_hash, created_at, created_at_epoch)"
            " VALUES ('mem-s1', 'webapp', 'discovery', ?, ?, '[\"a fact\"]', '[\"gotcha\"]',"
            " '[\"a.py\"]', '[]', ?, '2026-10-01T09:00:00Z', ?)",
            (
                (f"Title {n}", f"Narrative {n} of the bug", f"h{n}", NOW + n)
                for n in range(observations)
            ),
        )
        db.executemany(
            "INSERT INTO session_summaries (memory_session_id, project, request, learned,"
            " completed, created_at, created_at_epoch) VALUES ('mem-s1', 'webapp', ?, ?, ?,"
            " '2026-10-01T09:00:00Z', ?)",
            ((f"Request {n}", f"Learned {n}", "Done", NOW + n) for n in range(summaries)),
        )

    def baseline() -> object:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return [
                db.execute("SELECT * FROM observations").fetchall(),
                db.execute("SELECT * FROM session_summaries").fetchall(),
            ]

    return path, baseline


def basic_memory(folder: Path, items: int) -> tuple[Path, Callable[[], object]]:
    root = folder / "kb"
    notes = items // 10
    for n in range(notes):
        observations = "".join(f"- [fact] Fact {k} of note {n} #topic{k}\n" for k in range(7))
        (root / f"folder{n % 20}").mkdir(parents=True, exist_ok=True)
        (root / f"folder{n % 20}" / f"Note {n}.md").write_text(
            f"---\ntitle: Note {n}\ntype: note\npermalink: kb/note-{n}\ntags:\n- bench\n---\n\n"
            f"# Note {n}\n\nSome text about note {n}.\n\n## Observations\n{observations}\n"
            f"## Relations\n- relates_to [[Note {n + 1}]]\n- part_of [[Index]]\n"
        )

    def baseline() -> object:
        return [p.read_text().splitlines() for p in sorted(root.rglob("*.md"))]

    return root, baseline


def claude_md(folder: Path, items: int) -> tuple[Path, Callable[[], object]]:
    path = folder / "CLAUDE.md"
    sections = [
        f"## Section {s}\n\n"
        + "".join(f"- Rule {s}.{k}: prefer option {k} in area {s}\n" for k in range(100))
        for s in range(items // 100)
    ]
    path.write_text("# CLAUDE.md\n\n" + "\n".join(sections))
    return path, lambda: path.read_text().splitlines()


SOURCES = {
    "mcp-memory": mcp_memory,
    "claude-mem": claude_mem,
    "mem0": mem0,
    "basic-memory": basic_memory,
    "claude-md": claude_md,
}


def median_ms(function: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


COLUMNS = (
    ("source", "source", 14),
    ("items", "items", 7),
    ("read_ms", "read ms", 10),
    ("parse_only_ms", "parse-only ms", 15),
    ("ratio", "ratio", 8),
    ("items_per_s", "items/s", 10),
    ("plan_reimport_ms", "plan (re-import) ms", 21),
)


def measure(name: str, folder: Path, items: int, runs: int) -> dict[str, object]:
    """One source's row: read, parse only and plan times (median ms)."""
    path, baseline = SOURCES[name](folder, items)
    reading = read(name, path)
    read_ms = median_ms(lambda: read(name, path), runs)
    parse_ms = median_ms(baseline, runs)
    with Store(folder / "data", durable=False) as store:
        planned = [store.read(plan, item) for item in reading.items]
        operations = [
            Remember(draft=w.draft, trace_id=w.trace_id, created_at=w.created_at)
            for w in planned
            if isinstance(w, Write)
        ]
        for start in range(0, len(operations), 1000):
            store.apply(operations[start : start + 1000], now_ms=NOW, policy=KernelPolicy())
        plan_ms = median_ms(lambda: store.read(plan_page, reading.items), runs)
    count = len(reading.items)
    return {
        "source": name,
        "items": count,
        "read_ms": round(read_ms, 1),
        "parse_only_ms": round(parse_ms, 1),
        "ratio": round(read_ms / parse_ms, 2),
        "items_per_s": round(count / read_ms * 1000),
        "plan_reimport_ms": round(plan_ms, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hikmah-bench-") as tmp:
        for name in SOURCES:
            folder = Path(tmp) / name
            folder.mkdir()
            rows.append(measure(name, folder, args.items, args.runs))
    print("".join(f"{title:>{width}}" for _, title, width in COLUMNS))
    for row in rows:
        print("".join(f"{row[key]!s:>{width}}" for key, _, width in COLUMNS))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
