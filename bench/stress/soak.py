"""Soak and abuse, the long version of tests/reliability/test_abuse.py.

    .venv/bin/python bench/stress/soak.py [--minutes 3] [--stallers 120] [--silent 40]
                                          [--churners 20] [--big 20] [--notes 20000]

A daemon with ``--notes`` notes; a well-behaved client recalls (3-word query,
limit 10) idle, then for the whole run while ``--stallers + --silent + --churners +
--big`` hostile connections (200 by default) do their worst
(tests/reliability/abusers.py: half frames that stall, requests never read,
connect/hang-up loops, 1 MiB frames). Printed every ``--every`` seconds: the
daemon's RSS and open file descriptors, and the client's recall latency in that
window (p50/p99/max; a recall that takes over 30 s is counted as a timeout and
the client reconnects). At the end: how long the descriptors took to return to their
baseline, and the RSS before, at peak and after.

Results go to ``bench/stress/results-soak.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.harness.daemon import Running  # noqa: E402
from tests.harness.stats import percentile  # noqa: E402
from tests.reliability.crashes import fill  # noqa: E402
from tests.reliability.harness import (  # noqa: E402
    Book,
    fds_back_to,
    open_fds,
    rss_kib,
    steady_fds,
)
from tests.reliability.soak import Recaller, merged, start_abusers  # noqa: E402


def ms(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (seconds), in milliseconds to 0.01."""
    return round(1000 * percentile(values, q), 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--stallers", type=int, default=120)
    p.add_argument("--silent", type=int, default=40)
    p.add_argument("--churners", type=int, default=20)
    p.add_argument("--big", type=int, default=20)
    p.add_argument("--notes", type=int, default=20_000)
    p.add_argument("--every", type=float, default=10.0, help="seconds between report lines")
    args = p.parse_args()
    seconds = args.minutes * 60
    root = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
    daemon = Running(root).start()
    rows: list[dict[str, object]] = []
    try:
        fill(daemon, Book(), args.notes, "soak")
        pid = daemon.call("daemon.status")["pid"]
        with Recaller(daemon.socket) as client:
            client.latencies(20)
            idle = client.latencies(300)
            base_rss, base_fds = rss_kib(pid), steady_fds(pid)
            print(f"idle recall p50 {ms(idle, 50)} ms, p99 {ms(idle, 99)} ms;"
                  f" RSS {base_rss >> 10} MiB, {base_fds} fds", flush=True)  # fmt: skip
            kinds = ["--stallers", str(args.stallers), "--silent", str(args.silent),
                     "--churners", str(args.churners), "--big", str(args.big)]  # fmt: skip
            abusers = start_abusers(daemon.socket, seconds, kinds)
            out: list[dict[str, object]] = []
            reader = threading.Thread(target=lambda: out.append(merged(abusers, seconds + 120)))
            reader.start()
            started = time.monotonic()
            loaded: list[float] = []
            peak_rss, peak_fds = base_rss, base_fds
            while time.monotonic() - started < seconds:
                window = client.latencies(10**9, until=time.monotonic() + args.every)
                loaded += window
                rss, fds = rss_kib(pid), open_fds(pid)
                peak_rss, peak_fds = max(peak_rss, rss), max(peak_fds, fds)
                row = {"t_s": round(time.monotonic() - started), "rss_mib": rss >> 10,
                       "fds": fds, "recalls": len(window), "p50_ms": ms(window, 50),
                       "p99_ms": ms(window, 99), "max_ms": ms(window, 100),
                       "timeouts so far": client.timeouts}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
            reader.join(timeout=180)
            settle_started = time.monotonic()
            after_fds = fds_back_to(pid, base_fds, timeout=120)
            settled = time.monotonic() - settle_started
            after_rss = rss_kib(pid)
            after = client.latencies(300)
            timeouts = client.timeouts
        report = {
            "machine": platform.platform(),
            "notes": args.notes,
            "minutes": args.minutes,
            "connections": args.stallers + args.silent + args.churners + args.big,
            "idle recall ms p50/p99": [ms(idle, 50), ms(idle, 99)],
            "loaded recall ms p50/p99": [ms(loaded, 50), ms(loaded, 99)],
            "after recall ms p50/p99": [ms(after, 50), ms(after, 99)],
            "recalls over 30 s (timed out)": timeouts,
            "loaded/idle p50": round(ms(loaded, 50) / max(ms(idle, 50), 0.001), 1),
            "rss MiB base/peak/after": [base_rss >> 10, peak_rss >> 10, after_rss >> 10],
            "fds base/peak/after": [base_fds, peak_fds, after_fds],
            "fds back to baseline after s": round(settled, 1),
            "abusers": out[0] if out else None,
            "over time": rows,
        }
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({k: v for k, v in report.items() if k != "over time"}, indent=2))
    path = Path(__file__).with_name("results-soak.json")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
