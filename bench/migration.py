"""How fast ``hikmah import --from`` imports a large export: 10k items per source by default.

    .venv/bin/python bench/migration.py [--items 10000] [--runs 3] [--json PATH]

For each source it generates an export of about ``--items`` items in the peer's
own format, grown from the peer-made fixture in tests/fixtures/peers (the same
records, renamed: claude-mem rows inserted into a copy of the database
claude-mem's schema code made, notes shaped like basic-memory's, and so on),
then measures (medians of ``--runs``; the end-to-end figures once per run, each
into a fresh durable daemon):

* import: the real CLI, ``hikmah import --from SOURCE PATH``, from its start to
  its exit, against a running ``hikmahd`` with an empty store (the daemon reads
  the export, plans each page, checks near-duplicates, writes durably);
* baseline: ``hikmah import FILE`` of the very traces that import wrote (its
  export, as JSON Lines) into another fresh daemon: the same writes through the
  JSON Lines path, so the ratio is what reading the peer's format and planning
  against the store cost over importing Hikmah's own format;
* re-import: the same ``import --from`` again (every item found, nothing written);
* read and parse-only, in-process: ``hikmah.migration.read`` of the whole
  export against only parsing the same bytes (json per line, json of the file,
  ``SELECT *`` of the two tables, reading and splitting the Markdown files).

bench/run runs it (``suite.py``, 10k items per source; 50 with ``--quick``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from servers import Server, hikmahd_argv  # noqa: E402

from hikmah.migration import read  # noqa: E402

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
    rules = [100] * (items // 100) + ([items % 100] if items % 100 else [])  # per section
    sections = [
        f"## Section {s}\n\n"
        + "".join(f"- Rule {s}.{k}: prefer option {k} in area {s}\n" for k in range(count))
        for s, count in enumerate(rules)
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


@dataclass(frozen=True)
class Row:
    """One source's figures (times in ms, medians)."""

    source: str
    items: int
    import_ms: float
    baseline_ms: float
    reimport_ms: float
    read_ms: float
    parse_only_ms: float

    @property
    def ratio(self) -> float:
        return self.import_ms / self.baseline_ms

    @property
    def items_per_s(self) -> float:
        return self.items / self.import_ms * 1000


COLUMNS = (
    ("source", "source", 14),
    ("items", "items", 7),
    ("import_ms", "import ms", 11),
    ("baseline_ms", "JSONL ms", 10),
    ("ratio", "ratio", 7),
    ("items_per_s", "items/s", 9),
    ("reimport_ms", "re-import ms", 14),
    ("read_ms", "read ms", 9),
    ("parse_only_ms", "parse ms", 10),
)


def cli(server: Server, *args: str) -> tuple[float, dict[str, object]]:
    """Wall time (ms) of one ``hikmah`` run against ``server``, and its JSON report."""
    argv = [sys.executable, "-m", "hikmah_cli", "--socket", str(server.socket), "--no-autostart",
            *args, "--json"]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    took = (time.perf_counter() - began) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"hikmah {' '.join(args[:3])} exited {done.returncode}: {done.stderr}")
    report: dict[str, object] = json.loads(done.stdout)
    return took, report


def end_to_end(name: str, path: Path, folder: Path, count: int) -> tuple[float, float, float]:
    """One run: import, re-import and the JSON Lines baseline (ms), each daemon fresh."""
    with contextlib.ExitStack() as stack:
        daemon = Server("import", folder / "import", hikmahd_argv(folder / "import"))
        stack.callback(shutil.rmtree, daemon.directory, True)
        stack.callback(daemon.stop)
        daemon.start()
        import_ms, report = cli(daemon, "import", "--from", name, str(path))
        if report["written"] != count or report["refused"]:
            raise RuntimeError(f"{name}: wrote {report['written']} of {count}")
        reimport_ms, again = cli(daemon, "import", "--from", name, str(path))
        if again["already"] != count:
            raise RuntimeError(f"{name}: a re-import found {again['already']} of {count}")
        lines = folder / "traces.jsonl"
        argv = [sys.executable, "-m", "hikmah_cli", "--socket", str(daemon.socket),
                "--no-autostart", "export", "--output", str(lines)]  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)
        plain = Server("jsonl", folder / "jsonl", hikmahd_argv(folder / "jsonl"))
        stack.callback(shutil.rmtree, plain.directory, True)
        stack.callback(plain.stop)
        plain.start()
        baseline_ms, copied = cli(plain, "import", str(lines))
        if copied["written"] != count:
            raise RuntimeError(f"{name}: the JSON Lines baseline wrote {copied['written']}")
    return import_ms, reimport_ms, baseline_ms


def measure(name: str, folder: Path, items: int, runs: int) -> Row:
    """One source's row."""
    path, baseline = SOURCES[name](folder, items)
    count = len(read(name, path, home=Path.home()).items)
    if count == 0:
        raise RuntimeError(f"{name}: the generated export of {items} items reads as none")
    read_ms = median_ms(lambda: read(name, path, home=Path.home()), runs)
    parse_ms = median_ms(baseline, runs)
    done = [end_to_end(name, path, folder, count) for _ in range(runs)]
    import_ms, reimport_ms, baseline_ms = (
        statistics.median(column) for column in zip(*done, strict=True)
    )
    return Row(name, count, round(import_ms, 1), round(baseline_ms, 1), round(reimport_ms, 1),
               round(read_ms, 1), round(parse_ms, 1))  # fmt: skip


def measure_all(root: Path, items: int, runs: int) -> list[Row]:
    """Every source's row, in a folder of its own under ``root``."""
    rows = []
    for name in SOURCES:
        folder = root / name
        folder.mkdir(mode=0o700)
        rows.append(measure(name, folder, items, runs))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["".join(f"{title:>{width}}" for _, title, width in COLUMNS)]
    for row in rows:
        values = {**asdict(row), "ratio": f"{row.ratio:.2f}", "items_per_s": round(row.items_per_s)}
        lines.append("".join(f"{values[key]!s:>{width}}" for key, _, width in COLUMNS))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hkm-") as tmp:
        rows = measure_all(Path(tmp), args.items, args.runs)
    print(table(rows))
    if args.json:
        found = [asdict(r) | {"ratio": r.ratio, "items_per_s": r.items_per_s} for r in rows]
        args.json.write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
