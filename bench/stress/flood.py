"""Connection floods, the long version of tests/reliability/test_flood.py.

For each kind of flooding connection (idle, half frames, garbage, recalls never read),
``--processes`` processes each hold ``--per-process`` connections, with one runaway
process trying three times the per-process cap; meanwhile a well-behaved client
connects afresh for each of ``--visits`` recalls and never retries a connect. Prints,
per kind: the connections the daemon held, the runaway's refused ones, the good
client's refused connects, and its median recall latency against idle (measured in the
same run), then writes ``results-flood.json`` next to itself.

    .venv/bin/python bench/stress/flood.py --processes 20 --per-process 50 --visits 300
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from hikmahd.daemon import MAX_CONNECTIONS_PER_PROCESS  # noqa: E402
from tests.harness.daemon import Running  # noqa: E402
from tests.reliability.crashes import fill  # noqa: E402
from tests.reliability.flood import KINDS, Visits, flooded, plan_of  # noqa: E402
from tests.reliability.harness import Book, open_fds  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=int, default=20)
    p.add_argument("--per-process", type=int, default=50)
    p.add_argument("--visits", type=int, default=300)
    p.add_argument("--traces", type=int, default=2000)
    args = p.parse_args()
    print(f"settings: {vars(args)}, cap {MAX_CONNECTIONS_PER_PROCESS} per process", flush=True)
    root = Path(tempfile.mkdtemp(prefix="hkf", dir="/tmp"))
    daemon = Running(root).start()
    assert daemon.process is not None
    rows = []
    try:
        fill(daemon, Book(), args.traces, "flood")
        idle = Visits().run(daemon.socket, args.visits)
        print(f"idle: {idle.summary()}", flush=True)
        runaway = 3 * MAX_CONNECTIONS_PER_PROCESS
        for kind in KINDS:
            plan = [*plan_of(args.processes, args.per_process, (kind,)), ("idle", runaway)]
            with flooded(daemon.socket, plan) as flood:
                fds = open_fds(daemon.process.pid)
                loaded = Visits().run(daemon.socket, args.visits)
            row = {
                "kind": kind,
                "held": flood.total("held"),
                "connect_failures": flood.total("refused"),
                "runaway_capped": flood.reports[-1]["capped"],
                "daemon_fds": fds,
                "good_client": loaded.summary(),
                "latency_ratio": round(loaded.median / idle.median, 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        daemon.stop()
    out = Path(__file__).with_name("results-flood.json")
    out.write_text(json.dumps({"settings": vars(args), "idle": idle.summary(), "floods": rows},
                              indent=2) + "\n")  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
