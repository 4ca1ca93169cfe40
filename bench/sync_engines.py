"""Sync through real engines: Syncthing start-up and propagation, git, and verifying 100k records.

    .venv/bin/python bench/sync_engines.py [--samples 20] [--records 100000]

- Syncthing: the wall time to set up two (and three) instances on loopback with
  tests/sync/engines.py (generate, start, introduce, share, connected, settled),
  and the time from writing a small new file in one instance's folder to the
  other having it whole (fsWatcher on with a 1 s delay, rescan every 2 s),
  median and 90th percentile over ``--samples`` files.
- git: one device's publish committed and pushed, and pulled by another clone
  (a bare repository on local disk).
- Verifying a remote chain: the planner's ``follow`` over ``--records`` ledger
  records published in 1 MiB segments, from nothing (a new device) and the
  last 100 of them (a routine look): the sync-side cost of applying them,
  before the store's own (which the integration adds).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hikmah.ledger import Head
from hikmah.sync.chain import START, Position, follow
from hikmah.sync.device import DeviceKey
from hikmah.sync.manifest import Manifest
from hikmah.sync.segment import cut, encode_segment
from tests.kernel.sync.devices import Device, notes
from tests.sync.engines import GitRemote, propagation_seconds, syncthing_cluster


@contextlib.contextmanager
def no_pytest_exits() -> Iterator[None]:
    """The harness skips or fails through pytest; outside it, an exception is enough."""

    def fail(reason: str, **_: object) -> None:
        raise SystemExit(reason)

    with mock.patch("pytest.skip", fail), mock.patch("pytest.fail", fail):
        yield


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def syncthing(samples: int) -> None:
    with tempfile.TemporaryDirectory(prefix="stb") as temp:
        root = Path(temp)
        with syncthing_cluster(root / "two", 2) as cluster:
            two_up = cluster.startup_s
            a, b = cluster.instances
            times = [
                propagation_seconds(a.folder, b.folder, f"devices/x/f{i}", b"x" * 300)
                for i in range(samples)
            ]
        with syncthing_cluster(root / "three", 3) as cluster:
            three_up = cluster.startup_s
    print(f"syncthing: two instances up and settled in {two_up:.2f} s, three in {three_up:.2f} s")
    print(
        f"syncthing: a 300-byte new file crosses in {statistics.median(times):.2f} s median,"
        f" {percentile(times, 0.9):.2f} s p90, {max(times):.2f} s max ({samples} files)"
    )


def git(samples: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gtb") as temp:
        remote = GitRemote(Path(temp))
        a, b = remote.clone("a"), remote.clone("b")
        device = Device(a, "a")
        times = []
        for _ in range(samples):
            device.write(1)
            start = time.monotonic()
            device.publish()
            remote.push(a)
            remote.pull(b)
            times.append(time.monotonic() - start)
    median, p90 = statistics.median(times) * 1000, percentile(times, 0.9) * 1000
    print(
        f"git: publish, commit, push and pull by another clone: {median:.0f} ms median,"
        f" {p90:.0f} ms p90 ({samples} publishes)"
    )


def verify(count: int) -> None:
    key = DeviceKey.generate()
    records = notes(count)
    files = {g[0].seq: encode_segment(key.device_id, 1, g) for g in cut(records)}
    head = Head(seq=records[-1].seq, hash=records[-1].hash)
    manifest = Manifest(
        device=key.device_id, key=key.public.raw, name="bench", epoch=1, generation=1,
        head=head, segments=tuple(files),
    )  # fmt: skip
    start = time.perf_counter()
    follow(manifest, files.get, START, lambda _s: None)
    whole = time.perf_counter() - start
    behind = records[-101]
    start = time.perf_counter()
    follow(manifest, files.get, Position(1, behind.seq, behind.hash), lambda _s: None)
    tail = time.perf_counter() - start
    size = sum(len(f) for f in files.values()) / (1 << 20)
    print(
        f"verify: {count} records ({size:.1f} MiB, {len(files)} segments) from nothing in"
        f" {whole:.2f} s ({whole / count * 1e6:.1f} us/record);"
        f" the last 100 in {tail * 1000:.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    with no_pytest_exits():
        syncthing(args.samples)
        git(args.samples)
    verify(args.records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
