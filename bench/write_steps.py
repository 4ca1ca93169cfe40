"""Where a lone writer's ``memory.remember`` spends its time in the daemon, step by step.

One client writes one note at a time to a daemon (the semantic channel off) that is
wrapped to stamp each step of every write on one clock: the frame handed to the
connection, the dispatcher's call, the writer's turn, ``Store.apply`` in the writer's
thread and its return, the answer, the reply's send. Prints the median and mean of
each gap over the writes after the first 200::

    .venv/bin/python bench/write_steps.py --seconds 5 [--unsafe-no-sync]
"""

from __future__ import annotations

import argparse
import atexit
import functools
import inspect
import itertools
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from servers import CHANNEL_OFF, hikmahd_argv

from tests.harness.sockets import wait_for_socket

WARM = 200  # writes left out of the figures
# (class path, method, step stamped on entry, step stamped on return), in a write's order
Steps = tuple[tuple[str, str, str, str], ...]
# What replaces a method, given it.
Wrap = Callable[[Callable[..., Any]], Any]
STEPS: Steps = (
    ("hikmahd.connection.Connection", "_handle", "frame read", "handled"),
    ("hikmahd.rpc.Dispatcher", "_call", "dispatched", "handler returned"),
    ("hikmahd.writer.Writer", "_commit", "writer's turn", "committed"),
    ("hikmah.store.core.Store", "apply", "apply (writer's thread)", "applied"),
    ("hikmahd.writer.Writer", "_answer", "answer on the loop", "listeners told"),
    ("hikmahd.connection.Connection", "send", "reply sent", "on the socket"),
)


def stamped(steps: list[tuple[str, int]], method: Callable[..., Any], into: str, out: str) -> Any:
    """``method`` that appends ``(step, ns)`` on entry and on return."""
    clock = time.perf_counter_ns
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def waited(*args: Any, **kwargs: Any) -> Any:
            steps.append((into, clock()))
            try:
                return await method(*args, **kwargs)
            finally:
                steps.append((out, clock()))

        return waited

    @functools.wraps(method)
    def called(*args: Any, **kwargs: Any) -> Any:
        steps.append((into, clock()))
        try:
            return method(*args, **kwargs)
        finally:
            steps.append((out, clock()))

    return called


def serve_wrapped(
    argv: list[str], wrappers: list[tuple[str, str, Wrap]], done: Callable[[], None]
) -> None:
    """Run hikmahd with ``argv``, each method ``name`` of the class at ``path`` replaced by
    ``wrap(method)`` first; ``done()`` when it stops (SIGTERM)."""
    import importlib  # noqa: PLC0415 -- only the wrapped daemon needs these

    from hikmahd.__main__ import main  # noqa: PLC0415

    for path, name, wrap in wrappers:
        module, _, cls = path.rpartition(".")
        owner = getattr(importlib.import_module(module), cls)
        setattr(owner, name, wrap(getattr(owner, name)))
    atexit.register(done)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.argv = ["hikmahd", *argv]
    main()


def stamping(steps: list[tuple[str, int]], spec: Steps) -> list[tuple[str, str, Wrap]]:
    """The wrappers that stamp each method of ``spec`` into ``steps``."""
    return [
        (path, name, lambda method, into=into, out=out: stamped(steps, method, into, out))
        for path, name, into, out in spec
    ]


def split_at(steps: list[tuple[str, int]], first: str) -> list[list[tuple[str, int]]]:
    """``steps`` split at each ``first`` step: a list for each request."""
    split: list[list[tuple[str, int]]] = []
    for step, at in steps:
        if step == first:
            split.append([])
        if split:
            split[-1].append((step, at))
    return split


def gaps(requests: list[list[tuple[str, int]]], unit_ns: float) -> dict[str, list[float]]:
    """The time between each step of a request and the next (``a -> b``), in ``unit_ns``."""
    found: dict[str, list[float]] = {}
    for request in requests:
        for (a, at_a), (b, at_b) in itertools.pairwise(request):
            found.setdefault(f"{a} -> {b}", []).append((at_b - at_a) / unit_ns)
    return found


def serve(argv: list[str], report: Path) -> None:
    """Run hikmahd with every step stamped; write the gaps to ``report`` when it stops."""
    steps: list[tuple[str, int]] = []

    def write_report() -> None:
        writes = split_at(steps, STEPS[0][2])
        whole = [w for w in writes[WARM:] if len(w) == 2 * len(STEPS)]
        report.write_text(json.dumps({"writes": len(whole), "gaps_us": gaps(whole, 1e3)}))

    serve_wrapped(argv, stamping(steps, STEPS), write_report)


def measure(seconds: float, extra: list[str]) -> None:
    root = Path(tempfile.mkdtemp(prefix="hkwrites"))
    (root / "policy.toml").write_text(CHANNEL_OFF)
    report = root / "steps.json"
    argv = hikmahd_argv(root, *extra)[3:]  # the daemon's flags
    command = [sys.executable, __file__, "--serve", str(report), "--", *argv]
    log = root / "log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_socket(root / "s", daemon, log)
        written = 0
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(root / "s"))
            replies = sock.makefile("rb")
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                written += 1
                params = {"content": f"note number {written} about the build cache"}
                request = {"jsonrpc": "2.0", "id": written, "method": "memory.remember",
                           "params": params}  # fmt: skip
                sock.sendall(json.dumps(request).encode() + b"\n")
                if b'"result"' not in replies.readline():
                    raise RuntimeError(f"a write failed; see {log}")
    finally:
        daemon.terminate()
        daemon.wait()
    found = json.loads(report.read_text())
    print(f"{written / seconds:.0f} writes/s; steps of {found['writes']} writes (µs):")
    for gap, values in found["gaps_us"].items():
        median, mean = statistics.median(values), statistics.mean(values)
        print(f"  {gap:50s} median {median:8.1f}  mean {mean:8.1f}")


def serving_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a script that is also the daemon it wraps: run as
    ``SCRIPT --serve REPORT -- DAEMON-ARGS`` by itself."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("daemon", nargs="*", help=argparse.SUPPRESS)
    return parser


def main() -> None:
    parser = serving_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--unsafe-no-sync", action="store_true", help="the daemon's LMDB unsynced")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.daemon, args.serve)
    else:
        measure(args.seconds, ["--unsafe-no-sync"] if args.unsafe_no_sync else [])


if __name__ == "__main__":
    main()
