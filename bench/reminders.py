"""Promise queue benchmark: rebuild at start, memory, and the reminder timer's lateness.

    .venv/bin/python bench/reminders.py [--commitments 100000] [--clients 16]
                                        [--seconds 10] [--reminders 200] [--keep]

What is measured, in one run (temp dirs under /tmp; daemons are subprocesses of
``python -m hikmahd`` stopped with SIGTERM; ``DBUS_SESSION_BUS_ADDRESS`` points at a
socket that does not exist, so the desktop notifier fails fast, logs once, and costs
the timer nothing):

1. Queue rebuild at start. A store (``durable=False``, for build speed only) gets
   ``--commitments`` active commitments, deadlines spread over the next year, written
   in batches of 1,000. Then, on the store reopened, what ``Reminders.run`` does at
   start: ``store.read(queries.scheduled)`` (a scan of the LMDB deadline index that decodes each
   trace and looks up its two delivered-stage keys), then one ``PromiseQueue.schedule``
   per entry, with the default lead (30 min: two heap entries per commitment) and with
   lead 0 (one). Times are the median of ``--rounds``; rates are commitments/s.
   Memory is measured with ``tracemalloc`` around ``scheduled()`` + the queue build,
   after the scheduled list is dropped: what the queue keeps alive, trace id strings
   included (the daemon drops the list too); ``peak`` is the high-water mark during
   the rebuild (list and queue both alive). The ``scheduled()`` row's memory is the
   list itself, which is transient.
   Baseline in the same run: a plain ``heapq`` of ``(deadline, id)`` tuples built
   from the same list (list + ``heapify``), the floor for any in-memory queue; the
   ``x heapq`` column is each row over it.
   Then the real thing: ``hikmahd`` started on that store and on an empty one, timed
   from ``Popen`` to its ``promise queue loaded`` log line, and its ``RssAnon`` (the
   process's anonymous memory, so not the LMDB mmap) read right after; the
   difference is the rebuild's cost at start as a user sees it (interpreter start-up
   and imports cancel out). RssAnon is an upper bound for the queue: the freed
   scheduled list's memory may not go back to the OS.

2. Timer lateness under load. A daemon on a fresh data dir with ``[reminders]
   lead_minutes = 0``, pre-filled with ``--notes`` short notes for recall to chew on.
   One connection sends ``events.subscribe``; a thread reads it and stamps each
   ``reminder.due`` with ``time.time()`` on arrival. Lateness = arrival -
   ``params.due_at`` (epoch ms; with lead 0, the deadline), so it covers the timer's
   wake-up, the delivery, the event's trip through the subscriber's connection task
   and the socket, and the subscriber thread's own wake-up. Each run writes
   ``--reminders`` commitments (exact epoch-ms deadlines, uniform over ``--seconds``,
   starting 2.5 s after the write) and waits for all of them to arrive.
   Baseline in the same run: the idle run, with no other client. Then the loaded run:
   ``--clients`` processes (one blocking socket each, one request in flight) call
   ``memory.recall`` (3-word queries) in a closed loop from before the first deadline
   to after the last. ``recall/s`` and the recall latencies count requests completed
   between the first and last deadline; ``cpu%`` is the daemon's CPU time over the run,
   of one core. The idle run's commitments are fulfilled before the loaded run, so
   both start with no overdue commitment (overdue ones join every recall's candidates).
   The subscriber competes for the 2 CPUs with the clients, so under load part of the
   lateness is its own scheduling delay: an upper bound on the daemon's.

How to read it: the rebuild rows say how long a start with N commitments keeps the
queue unavailable (``scheduled()`` runs in a worker thread; the ``schedule`` loop runs
on the event loop, so it also stalls every request for that long), and the ``x heapq``
ratios say how far the queue is from the floor. The lateness table's ``loaded / idle``
ratios say how much the recall load delays reminders; the KEY line compares the loaded
p99 with the later milestone's target (p99 under 50 ms). Recall runs on the daemon's
one event loop, so expect the loaded lateness to be on the order of one round of the
trio scheduler, i.e. up to ``--clients`` recalls, plus a round for the event's send.

Part 1 is ``queue_rebuild.py``, part 2 ``lateness.py``, the tables ``reminders_tables.py``;
this script runs them. Results go to ``bench/results-reminders.json`` next to this file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lateness import (
    LatenessRow,
    RecallPool,
    Subscriber,
    fulfill_all,
    lateness_run,
    prefill_notes,
)
from queue_rebuild import build_store, rebuild_rows, start_rows
from reminders_tables import lateness_table, rebuild_table, wrapped
from servers import hikmahd_daemon

from hikmah.store.core import Store

RESULTS = Path(__file__).with_name("results-reminders.json")
FIRST_DEADLINE_S = 2.5  # from the write of a run's commitments to its first deadline


@dataclass
class Options:
    commitments: int
    clients: int
    seconds: float
    reminders: int
    notes: int
    rounds: int
    keep: bool
    lead_s: float = FIRST_DEADLINE_S  # from writing a run's commitments to the first deadline


def lateness_rows(
    root: Path, opts: Options, stack: contextlib.ExitStack, data: Path | None = None
) -> list[LatenessRow]:
    """The idle run, then the loaded one, on one daemon with one subscriber.

    The daemon starts on a copy of the store ``data`` when given (its notes are what
    the clients recall over), else on a fresh store that gets ``opts.notes`` notes.
    """
    directory = root / "l"
    directory.mkdir(mode=0o700)
    (directory / "policy.toml").write_text("[reminders]\nlead_minutes = 0\n")
    if data is not None:
        shutil.copytree(data, directory / "data", ignore=shutil.ignore_patterns("hikmahd.lock"))
    daemon = hikmahd_daemon(root, directory)
    stack.callback(daemon.stop)
    daemon.start()
    if data is None:
        began = time.monotonic()
        prefill_notes(daemon.socket, opts.notes)
        print(f"pre-filled {opts.notes} notes in {time.monotonic() - began:.1f} s", file=sys.stderr)
    pool = RecallPool(daemon.socket, opts.clients)  # forked before the subscriber's thread
    stack.callback(pool.close)
    subscriber = Subscriber(daemon.socket)
    stack.callback(subscriber.close)
    runs = (opts.reminders, opts.seconds, opts.lead_s)
    idle = lateness_run(daemon, subscriber, None, "idle", *runs)
    progress_lateness(idle)
    fulfill_all(daemon.socket, list(subscriber.arrivals))
    loaded_label = f"{opts.clients} clients recalling"
    loaded = lateness_run(daemon, subscriber, pool, loaded_label, *runs)
    progress_lateness(loaded)
    subscriber.close()
    pool.close()
    daemon.stop()
    return [idle, loaded]


def progress_lateness(row: LatenessRow) -> None:
    print(
        f"  {row.load:<22} {row.received}/{row.expected} reminders  p50 {row.p50_ms:.1f} ms"
        f"  p99 {row.p99_ms:.1f} ms  max {row.max_ms:.1f} ms  cpu {row.daemon_cpu_pct:.0f}%",
        file=sys.stderr,
        flush=True,
    )


def run(opts: Options) -> int:
    root = Path(tempfile.mkdtemp(prefix="hkr", dir="/tmp"))
    began = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            queue_dir = root / "q"
            build_s = build_store(queue_dir / "data", opts.commitments, time.time_ns() // 1_000_000)
            print(f"built {opts.commitments:,} commitments in {build_s:.1f} s", file=sys.stderr)
            with Store(queue_dir / "data", durable=False) as store:
                rebuild = rebuild_rows(store, opts.rounds)
            starts = start_rows(root, queue_dir, stack)
            lateness = lateness_rows(root, opts, stack)
    finally:
        if not opts.keep:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - began
    lines = [
        *rebuild_table(rebuild, starts, opts.commitments, build_s, opts.rounds),
        "",
        *lateness_table(lateness, opts.reminders, opts.seconds),
        "",
        *wrapped(
            f"{opts.notes} notes pre-filled for recall; {opts.clients} client processes, one"
            f" request in flight each; whole run {elapsed:.0f} s"
            + (f"; kept {root}" if opts.keep else ".")
        ),
    ]
    print("\n".join(lines))
    RESULTS.write_text(
        json.dumps(
            {
                "options": asdict(opts),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "build_seconds": build_s,
                "rebuild": [asdict(row) for row in rebuild],
                "start": [asdict(row) for row in starts],
                "lateness": [asdict(row) for row in lateness],
                "seconds": elapsed,
            },
            indent=2,
        )
        + "\n"
    )
    failed = any(r.received < r.expected or r.recall_errors for r in lateness)
    return 1 if failed else 0


def parse_args(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--commitments", type=int, default=100_000, help="for the rebuild (100000)")
    p.add_argument("--clients", type=int, default=16, help="recalling clients (16)")
    p.add_argument("--seconds", type=float, default=10.0, help="deadline spread per run (10)")
    p.add_argument("--reminders", type=int, default=200, help="commitments per run (200)")
    p.add_argument("--notes", type=int, default=3000, help="notes for recall (3000)")
    p.add_argument("--rounds", type=int, default=3, help="timings per rebuild step (3)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, stores)")
    a = p.parse_args(argv)
    return Options(
        a.commitments, max(1, a.clients), a.seconds, a.reminders, a.notes, max(1, a.rounds), a.keep
    )


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
