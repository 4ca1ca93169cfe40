"""Where a bulk import's page spends its time in the daemon, step by step.

``hikmah import`` of N notes (an export file, ids and times kept) into a fresh durable
daemon (the semantic channel off) that is wrapped to stamp each step of every page on
one clock: the frame handed to the connection, the dispatcher's call, the writer's
submission, its turn, ``Store.apply`` in the writer's thread, the answers, the reply.
Prints the median of each gap over the pages after the first 10 (those with the steps
of an ordinary page: not the settle pass), and the import's traces/s::

    .venv/bin/python bench/import_steps.py --notes 100000
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bulk_import import write_export
from servers import CHANNEL_OFF, hikmahd_argv
from workload import make_notes
from write_steps import STEPS as WRITE_STEPS
from write_steps import Steps, gaps, serve_wrapped, serving_parser, split_at, stamping

from tests.harness.sockets import wait_for_socket

WARM = 10  # pages left out of the figures
# A write's steps (bench/write_steps.py), with the page's submission to the writer.
STEPS: Steps = (
    *WRITE_STEPS[:2],
    ("hikmahd.writer.Writer", "submit_all", "submitted", "answered"),
    *WRITE_STEPS[2:],
)


def serve(argv: list[str], report: Path) -> None:
    """Run hikmahd with every step stamped; write the pages' steps to ``report`` when it
    stops."""
    steps: list[tuple[str, int]] = []
    serve_wrapped(argv, stamping(steps, STEPS), lambda: report.write_text(json.dumps(steps)))


def pages(steps: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """The steps split at each frame read; only the pages with the most common sequence
    of steps (an import page, not the settle pass or another call)."""
    split = split_at(steps, STEPS[0][2])
    shapes = Counter(tuple(step for step, _ in page) for page in split)
    usual = shapes.most_common(1)[0][0] if shapes else ()
    return [page for page in split if tuple(step for step, _ in page) == usual]


def measure(notes: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="hkimport"))
    (root / "policy.toml").write_text(CHANNEL_OFF)
    export = root / "traces.jsonl"
    write_export(make_notes(notes, 7, int(time.time() * 1000)), export)
    report = root / "steps.json"
    command = [sys.executable, __file__, "--serve", str(report), "--", *hikmahd_argv(root)[3:]]
    log = root / "log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_socket(root / "s", daemon, log)
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "hikmah_cli", "--socket", str(root / "s"), "--no-autostart",
             "import", str(export)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        took = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(f"hikmah import exited {done.returncode}: {done.stderr}")
    finally:
        daemon.terminate()
        daemon.wait()
    kept = pages(json.loads(report.read_text()))[WARM:]
    print(f"{notes / took:.0f} traces/s; steps of {len(kept)} pages (ms):")
    for gap, values in gaps(kept, 1e6).items():
        print(f"  {gap:50s} median {statistics.median(values):8.2f}")


def main() -> None:
    parser = serving_parser(__doc__)
    parser.add_argument("--notes", type=int, default=30_000, help="notes to import")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.daemon, args.serve)
    else:
        measure(args.notes)


if __name__ == "__main__":
    main()
