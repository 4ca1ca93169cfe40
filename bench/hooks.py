"""What a coding agent's turn pays for Hikmah's hooks: wall time of the hook commands.

    .venv/bin/python bench/hooks.py [--notes 10000] [--runs 20]

A daemon is started on a fresh store holding ``--notes`` short developer notes
(the Zipf-like workload of the other benchmarks) and 40 standing preferences
and constraints. Then each command below is
run ``--runs`` times as a whole process, the way an agent host runs a hook, and
the median wall time is compared with the baseline measured in the same run:
``python -c pass`` with the same interpreter (a process that starts and does
nothing).

- ``hikmah hook prompt``, fed a Claude Code UserPromptSubmit event whose prompt
  shares words with many notes (so recall does real work and context is printed);
- ``hikmah hook prompt`` with a slash command (skipped before any connection);
- ``hikmah hook session-start``;
- ``hikmah recall`` for the same words (the CLI's hot path, for reference).

Results: a table on stdout and ``bench/results-hooks.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from servers import Server, call_many, hikmahd_argv
from workload import note_lines, request_body, with_id

RESULTS = Path(__file__).with_name("results-hooks.json")
SEED = 7
RULES = 40  # standing preferences and constraints beside the notes
PROMPT = "The deploy cache is slow again on the staging cluster, can you check the worker retry?"


def standing_lines(count: int) -> list[bytes]:
    """Preferences and constraints, every third one verified: what session-start brings."""
    lines = []
    for i in range(count):
        kind = "constraint" if i % 2 else "preference"
        params = {"content": f"Standing rule {i}: {kind} about the build", "kind": kind}
        lines.append(
            with_id(request_body("memory.remember", {**params, "verified": i % 3 == 0}), i)
        )
    return lines


def event(prompt: str) -> str:
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": "/tmp/bench.jsonl",
            "cwd": os.getcwd(),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def run_ms(argv: list[str], stdin: str) -> tuple[float, str]:
    """Wall time of one whole-process run (ms), and its stdout."""
    began = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    return (time.perf_counter() - began) * 1000, done.stdout


def wall_ms(argv: list[str], stdin: str, runs: int) -> tuple[float, str]:
    """Median wall time of ``runs`` whole-process runs, and the last run's stdout."""
    times, out = [], ""
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        took, out = run_ms(argv, stdin)
        times.append(took)
    return statistics.median(times[1:]), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--notes", type=int, default=10_000, help="notes in the store")
    parser.add_argument("--runs", type=int, default=20, help="runs per command (median)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="hkh", dir="/tmp"))
    server = Server("hikmahd", root, hikmahd_argv(root, "--log-level", "warning"))
    try:
        server.start()
        call_many(server.socket, note_lines(args.notes, SEED) + standing_lines(RULES))
        cli = [sys.executable, "-m", "hikmah_cli", "--socket", str(server.socket)]
        script = Path(sys.executable).with_name("hikmah")
        if script.exists():  # the installed entry point, as a hook command runs it
            cli = [str(script), "--socket", str(server.socket)]
        commands = [
            ("python -c pass (baseline)", [sys.executable, "-c", "pass"], ""),
            ("hikmah hook prompt", [*cli, "hook", "prompt"], event(PROMPT)),
            ("hikmah hook prompt (slash)", [*cli, "hook", "prompt"], event("/compact")),
            ("hikmah hook session-start", [*cli, "hook", "session-start"], event("")),
            ("hikmah recall", [*cli, "recall", PROMPT], ""),
        ]
        rows = []
        for name, command, stdin in commands:
            median, out = wall_ms(command, stdin, args.runs)
            rows.append({"command": name, "median_ms": median, "output_bytes": len(out)})
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    baseline = rows[0]["median_ms"]
    print(f"Hook wall time, median of {args.runs} runs, {args.notes} notes in the store")
    print(f"{'command':32} {'median ms':>10} {'× baseline':>11} {'output B':>9}")
    for row in rows:
        row["ratio"] = row["median_ms"] / baseline
        print(
            f"{row['command']:32} {row['median_ms']:10.1f} {row['ratio']:10.2f}×"
            f" {row['output_bytes']:9d}"
        )
    RESULTS.write_text(
        json.dumps(
            {
                "notes": args.notes,
                "runs": args.runs,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
