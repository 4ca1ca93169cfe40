"""How fast ``hikmah import --from`` imports a large export: 10k items per source by default.

    .venv/bin/python bench/migration.py [--items 10000] [--runs 3] [--json PATH]

For each source it generates an export of about ``--items`` items in the peer's
own format, grown from the peer-made fixture in tests/fixtures/peers (the same
records, renamed: claude-mem rows inserted into a copy of the database
claude-mem's schema code made, notes shaped like basic-memory's, and so on),
then measures (medians of ``--runs``; the end-to-end figures once per run, each
into a fresh durable daemon, its model loaded; ``bench/run --quick`` gives every
source of a run the same two daemons):

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
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from servers import Server, cli, hikmahd_argv, wait_semantic_ready  # noqa: E402

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


@contextlib.contextmanager
def daemons(folder: Path) -> Iterator[tuple[Server, Server]]:
    """A durable daemon to import into and one for the JSON Lines baseline, both on
    empty stores, their models loaded; stopped and removed after."""
    with contextlib.ExitStack() as stack:
        pair = []
        for name in ("import", "jsonl"):
            server = Server(name, folder / name, hikmahd_argv(folder / name))
            stack.callback(shutil.rmtree, server.directory, True)
            stack.callback(server.stop)
            server.start()
            pair.append(server)
        idle(pair)
        yield pair[0], pair[1]


def idle(servers: list[Server]) -> None:
    """Until none of ``servers`` is loading its model or embedding what it wrote."""
    for server in servers:
        wait_semantic_ready(server.socket)


def end_to_end(
    name: str, path: Path, folder: Path, count: int, pair: tuple[Server, Server]
) -> tuple[float, float, float]:
    """One run: import, re-import and the JSON Lines baseline (ms) on ``pair``."""
    daemon, plain = pair
    import_ms, report = cli(daemon, "import", "--from", name, str(path))
    if report["written"] != count or report["refused"]:
        raise RuntimeError(f"{name}: wrote {report['written']} of {count}")
    reimport_ms, again = cli(daemon, "import", "--from", name, str(path))
    if again["already"] != count:
        raise RuntimeError(f"{name}: a re-import found {again['already']} of {count}")
    exported = folder / "export.jsonl"
    argv = [sys.executable, "-m", "hikmah_cli", "--socket", str(daemon.socket),
            "--no-autostart", "export", "--output", str(exported)]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True)
    # This source's traces only: the daemon may hold those of the sources before.
    source = f"tool:{name}"
    lines = folder / "traces.jsonl"
    lines.write_text(
        "".join(
            line
            for line in exported.read_text().splitlines(keepends=True)
            if json.loads(line)["provenance"]["source"] == source
        )
    )
    baseline_ms, copied = cli(plain, "import", str(lines))
    if copied["written"] != count:
        raise RuntimeError(f"{name}: the JSON Lines baseline wrote {copied['written']}")
    return import_ms, reimport_ms, baseline_ms


def measure_all(root: Path, items: int, runs: int, *, shared: bool = False) -> list[Row]:
    """Every source's row, each in a folder of its own under ``root``. Each run of a
    source imports into a fresh pair of daemons; with ``shared``, the sources of a run
    share one pair (``bench/run --quick``: ten daemon starts fewer), so each imports
    beside the traces of the sources before it, in both daemons alike."""
    exports = {}
    for name, generate in SOURCES.items():
        folder = root / name
        folder.mkdir(mode=0o700)
        path, parse = generate(folder, items)
        count = len(read(name, path, home=Path.home()).items)
        if count == 0:
            raise RuntimeError(f"{name}: the generated export of {items} items reads as none")
        read_ms = median_ms(lambda name=name, path=path: read(name, path, home=Path.home()), runs)
        exports[name] = (folder, path, count, read_ms, median_ms(parse, runs))
    done: dict[str, list[tuple[float, float, float]]] = {name: [] for name in SOURCES}
    for _ in range(runs):
        with contextlib.ExitStack() as stack:
            pair = stack.enter_context(daemons(root)) if shared else None
            for name, (folder, path, count, _read, _parse) in exports.items():
                if pair is not None:
                    idle(list(pair))  # the source before's vectors made
                with daemons(folder) if pair is None else contextlib.nullcontext(pair) as own:
                    done[name].append(end_to_end(name, path, folder, count, own))
    rows = []
    for name, (_folder, _path, count, read_ms, parse_ms) in exports.items():
        import_ms, reimport_ms, baseline_ms = (
            statistics.median(column) for column in zip(*done[name], strict=True)
        )
        rows.append(Row(name, count, round(import_ms, 1), round(baseline_ms, 1),
                        round(reimport_ms, 1), round(read_ms, 1), round(parse_ms, 1)))  # fmt: skip
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
