"""Crash loop, the long version of tests/reliability/test_crash_loop.py.

    .venv/bin/python bench/stress/crash_loop.py [--kills 30] [--maintenance-kills 10]
                                                [--seed N] [--keep]

1. 16 writers through the socket (remember with every kind of field, purges,
   fulfilments), ``kill -9`` after a random 0.05-0.8 s, ``--kills`` times; after
   each kill the data directory is checked against what every writer was told
   (tests/reliability/harness.py): the ledger verifies, every acknowledged write is
   there exactly as acknowledged, refused ones are absent, the ones in flight are
   whole or absent, and the derived indexes equal a rebuild from the ledger. Then
   the daemon restarts and a person's write must be accepted at once.
2. The same checks after ``kill -9`` in the middle of ``ledger.compact`` (with the
   writers running), of ``hikmahd --rebuild-index``, of a 1,500-message
   ``replay.ingest`` and of a 3,000-line ``memory.import`` (six calls, as the CLI
   sends a file), ``--maintenance-kills`` times each. Purges are among the
   writers' requests in 1.

The seed is printed; ``--seed`` replays the same kill times (the machine's timing
still varies). Results go to ``bench/stress/results-crash.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.harness.daemon import Running  # noqa: E402
from tests.reliability.crashes import (  # noqa: E402
    crash_loop,
    fill,
    kill_during_compaction,
    kill_during_import,
    kill_during_ingest,
    kill_during_rebuild,
)
from tests.reliability.harness import Book  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=30, help="kill -9 under the writers (30)")
    p.add_argument("--maintenance-kills", type=int, default=10, help="per maintenance kind")
    p.add_argument("--seed", type=int, help="replay a run (printed at the start)")
    p.add_argument("--keep", action="store_true", help="keep the data directories")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"seed {seed}", flush=True)
    rng = random.Random(seed)
    results: dict[str, object] = {"seed": seed, "machine": platform.platform()}
    roots: list[Path] = []
    daemons: list[Running] = []

    def fresh() -> Running:
        root = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
        roots.append(root)
        daemons.append(Running(root).start())
        return daemons[-1]

    started = time.monotonic()
    try:
        daemon = fresh()
        book = Book()
        tally = crash_loop(daemon, book, rng, args.kills, say=lambda s: print(s, flush=True))
        daemon.stop()
        results["writers"] = {
            "kills": tally.kills,
            **book.summary(),
            "in flight at a kill, then found whole": tally.unacked_present,
            "in flight at a kill, then absent": tally.unacked_absent,
            "ledger records at the end": tally.records,
        }
        if args.maintenance_kills:
            daemon = fresh()
            book = Book()
            fill(daemon, book, 6000, "compaction")
            tally = kill_during_compaction(daemon, book, rng, args.maintenance_kills)
            daemon.stop()
            results["compaction"] = {"kills": tally.kills, "before it answered": tally.interrupted}
            daemon = fresh()
            book = Book()
            fill(daemon, book, 20000, "rebuild")
            tally = kill_during_rebuild(daemon, book, rng, args.maintenance_kills)
            daemon.stop()
            results["rebuild"] = {"kills": tally.kills, "mid-run": tally.interrupted}
            daemon = fresh()
            book = Book()
            tally = kill_during_ingest(
                daemon, book, rng, args.maintenance_kills, roots[-1], messages=1500
            )
            results["ingest"] = {"kills": tally.kills, "before it answered": tally.interrupted}
            tally = kill_during_import(daemon, book, rng, args.maintenance_kills, count=3000)
            daemon.stop()
            results["import"] = {"kills": tally.kills, "before the last call answered":
                                 tally.interrupted}  # fmt: skip
    finally:
        for running in daemons:
            running.stop()  # a no-op for those already stopped
        if not args.keep:
            for root in roots:
                shutil.rmtree(root, ignore_errors=True)
    results["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(results, indent=2))
    out = Path(__file__).with_name("results-crash.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"every check passed; results in {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
