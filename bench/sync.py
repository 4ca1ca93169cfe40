"""Sync: from a commit on one device to recallable on another, and applying 100k records.

    .venv/bin/python bench/sync.py [--samples 10] [--records 100000]

- Through git: two real daemons, each with a clone of a bare repository on
  local disk; a trace is remembered on one (timed from its acknowledgement),
  then the hook of docs/sync.md runs on each (pull, ``hikmah sync``, commit,
  push), and the other recalls it. Baseline: the same git round trip of one
  small file with no Hikmah in it (commit, push, pull).
- Through Syncthing: two real daemons watching the folders of two Syncthing
  instances on loopback (fsWatcher on with a 1 s delay); a trace remembered on
  one, until a recall on the other finds it (polled every 20 ms). Baseline: a
  300-byte file written into one instance's folder, until the other has it.
- Applying 100k remote records: one store's ``--records`` notes (bench/workload.py)
  published into a folder; a new paired store looks (the chain verified from
  its signed head) and applies them in one step. Baseline: the first store
  rebuilding its own indexes from its ledger (the same records, indexed
  locally). Both durable.

Medians and 90th percentiles over ``--samples``; the machines are shared and
noisy, so compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import iter_notes, remember

from hikmah.index import replicas
from hikmah.model.policy import KernelPolicy
from hikmah.rules.operations import Pair
from hikmah.store import exchange
from hikmah.store.core import Store
from hikmah.store.indexing import rebuild_index
from hikmah.sync.device import DeviceKey
from tests.harness.stats import percentile
from tests.harness.sync_daemons import Device, make_device, pair, started
from tests.harness.sync_engines import GitRemote, propagation_seconds, syncthing_cluster, wait_until

NOW_MS = 1_790_000_000_000
BUILD_BATCH = 1000


@dataclass(frozen=True)
class Route:
    """One engine's commit-to-recallable times, and its baseline's (seconds)."""

    recallable_s: list[float]
    baseline_s: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.recallable_s)

    @property
    def baseline(self) -> float:
        return statistics.median(self.baseline_s)


@dataclass(frozen=True)
class Apply:
    records: int
    look_s: float  # reading the folder and verifying the chain
    apply_s: float  # the store applying the step (checks, chains, indexes), durable
    rebuild_s: float  # baseline: the origin rebuilding its indexes from its ledger
    folder_mib: float


@dataclass(frozen=True)
class SyncResult:
    git: Route
    syncthing: Route | None  # None: Syncthing is not installed
    apply: Apply


@contextlib.contextmanager
def no_pytest_exits() -> Iterator[None]:
    """The harness skips or fails through pytest; outside it, an exception is enough."""

    def fail(reason: str, **_: object) -> None:
        raise SystemExit(reason)

    with mock.patch("pytest.skip", fail), mock.patch("pytest.fail", fail):
        yield


def recallable(source: Device, target: Device, word: str, step: Callable[[], None]) -> float:
    """Seconds from ``source`` acknowledging a trace with ``word`` to ``target`` recalling it
    (``step``: what the engine and the hooks do meanwhile)."""
    start = time.monotonic()
    source.remember(f"the benchmark note {word}")

    def found() -> bool:
        step()
        results = target.call("memory.recall", query=word)["results"]
        return any(word in r["trace"]["content"] for r in results)

    wait_until(found, 60, f"{word} to be recallable", step=0.02)
    return time.monotonic() - start


def through_git(root: Path, samples: int) -> Route:
    (root / "git").mkdir(parents=True)
    remote = GitRemote(root / "git")
    a, b = (make_device(root, name, remote.clone(name), watch=False) for name in ("a", "b"))

    def hook(device: Device) -> None:
        remote.pull(device.folder)
        device.sync()
        remote.push(device.folder)

    with started(a, b):
        pair(a, b, carry=lambda: (remote.push(a.folder), remote.pull(b.folder)))
        for device in (b, a, b, a):
            hook(device)
        times = [recallable(a, b, f"zqgit{i}", lambda: (hook(a), hook(b))) for i in range(samples)]
    base = []
    x, y = remote.clone("x"), remote.clone("y")
    for i in range(samples):
        start = time.monotonic()
        (x / f"f{i}").write_bytes(b"x" * 300)
        remote.push(x)
        remote.pull(y)
        base.append(time.monotonic() - start)
    return Route(times, base)


def through_syncthing(root: Path, samples: int) -> Route:
    with syncthing_cluster(root / "st", 2) as cluster:
        one, two = cluster.instances
        base = [
            propagation_seconds(one.folder, two.folder, f"devices/x/f{i}", b"x" * 300)
            for i in range(samples)
        ]
        a, b = (
            make_device(root, name, instance.folder, watch=True, interval_s=60)
            for name, instance in (("a", one), ("b", two))
        )
        with started(a, b):
            pair(a, b)
            wait_until(lambda: len(a.call("sync.status")["devices"]) == 2, 30, "pairing", 0.1)
            a.remember("a first note")
            times = [recallable(a, b, f"zqst{i}", lambda: None) for i in range(samples)]
    return Route(times, base)


def applying(root: Path, records: int) -> Apply:
    policy = KernelPolicy()
    folder = root / "folder"
    keys = {name: DeviceKey.generate() for name in ("origin", "new")}
    with Store(root / "origin") as origin, Store(root / "new") as new:
        for store, name, other in ((origin, "origin", "new"), (new, "new", "origin")):
            with store.transaction() as snapshot:
                replicas.set_device(snapshot, keys[name].device_id)
            key = keys[other]
            store.apply(
                [Pair(device=key.device_id, key=key.public.raw, name=other)],
                now_ms=NOW_MS,
                policy=policy,
            )
        notes = iter_notes(7, NOW_MS)
        written = 0
        while written < records:
            batch = [remember(n) for n in islice(notes, min(BUILD_BATCH, records - written))]
            origin.apply(batch, now_ms=NOW_MS, policy=policy)
            written += len(batch)
        me = exchange.Identity(keys["origin"], "origin")
        with origin.snapshot() as snapshot:
            made = exchange.publication(snapshot, folder, me, origin.durable_head, {}, NOW_MS)
        exchange.write(folder, me.key.device_id, made)
        them = exchange.Identity(keys["new"], "new")
        start = time.perf_counter()
        with new.snapshot() as snapshot:
            found = exchange.look(snapshot, folder, them, new.durable_head, NOW_MS)
        look_s = time.perf_counter() - start
        start = time.perf_counter()
        (outcome,) = new.apply(list(found.steps), now_ms=NOW_MS, policy=policy)
        apply_s = time.perf_counter() - start
        assert getattr(outcome, "records", 0) == written + 1, outcome  # and the device_added
        start = time.perf_counter()
        rebuild_index(origin)
        rebuild_s = time.perf_counter() - start
    size = sum(p.stat().st_size for p in folder.rglob("*.seg")) / (1 << 20)
    return Apply(written, look_s, apply_s, rebuild_s, size)


def measure(root: Path, samples: int, records: int) -> SyncResult:
    with no_pytest_exits():
        git = through_git(root / "g", samples)
        try:
            st: Route | None = through_syncthing(root / "s", samples)
        except SystemExit as exc:
            print(f"syncthing: not measured: {exc}", file=sys.stderr)
            st = None
    return SyncResult(git, st, applying(root / "apply", records))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hksb", dir="/tmp") as temp:
        found = measure(Path(temp), args.samples, args.records)
    for name, path in (("git", found.git), ("syncthing", found.syncthing)):
        if path is None:
            continue
        print(
            f"{name}: commit to recallable {path.median:.2f} s median,"
            f" {percentile(path.recallable_s, 90):.2f} s p90; the engine alone"
            f" {path.baseline:.2f} s median ({args.samples} samples)"
        )
    a = found.apply
    print(
        f"apply: {a.records} remote records ({a.folder_mib:.1f} MiB) looked at in"
        f" {a.look_s:.2f} s and applied in {a.apply_s:.2f} s"
        f" ({a.apply_s / a.records * 1e6:.0f} us/record); the origin rebuilds its own"
        f" indexes in {a.rebuild_s:.2f} s (apply / rebuild {a.apply_s / a.rebuild_s:.2f}x)"
    )
    print(asdict(found.apply))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
