"""Real daemons syncing through real Syncthing instances on loopback: each daemon's
``[sync] folder`` is its own instance's folder, Syncthing carries the files, and the
daemons look when the folder changes (watchfiles) and on their timer."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.sync_daemons import Device, make_device, pair, settle, started
from tests.harness.sync_engines import Cluster, syncthing_cluster, wait_until


@pytest.fixture
def pair_of(short_tmp: Path) -> Iterator[tuple[Cluster, tuple[Device, ...]]]:
    with syncthing_cluster(short_tmp / "st", 2) as cluster:
        devices = tuple(
            make_device(short_tmp, name, instance.folder, watch=True, interval_s=2)
            for name, instance in zip(("lap", "desk"), cluster.instances, strict=True)
        )
        with started(*devices):
            pair(*devices)
            settle(devices, lambda: None)
            yield cluster, devices


def no_conflict_copies(cluster: Cluster) -> bool:
    return not any(
        ".sync-conflict-" in p.name for i in cluster.instances for p in i.folder.rglob("*")
    )


def test_two_daemons_share_one_memory_through_syncthing(
    pair_of: tuple[Cluster, tuple[Device, ...]],
) -> None:
    cluster, devices = pair_of
    lap, desk = devices
    ids = lap.burst(40, "lap writes") + desk.burst(40, "desk writes")  # at once
    promise = desk.remember("renew the certificate", kind="commitment", deadline="+72h")
    old = lap.remember("the cache lives in redis", claim_key="cache", claim_value="redis")
    settle(devices, lambda: None)
    lap.remember("cache is valkey", supersedes=old, claim_key="cache", claim_value="valkey")
    desk.remember("cache is memcached", claim_key="cache", claim_value="memcached")
    lap.call("memory.fulfill", id=promise)
    desk.cli("purge", "--id", ids[3], "--reason", "not worth keeping")
    took = settle(devices, lambda: None)
    traces, conflicts, queue = desk.memory()
    assert set(ids) - {ids[3]} <= set(traces) and ids[3] not in traces
    assert traces[old][0] == "superseded" and traces[promise][0] == "fulfilled"
    assert [c["key"] for c in conflicts] == ["cache"] and queue == []
    for device in devices:
        ok, errors = device.verified()
        assert ok, errors
    assert no_conflict_copies(cluster)
    assert took < 30


def test_kill_9_while_publishing_and_while_applying_loses_no_acknowledged_write(
    pair_of: tuple[Cluster, tuple[Device, ...]],
) -> None:
    _cluster, devices = pair_of
    lap, desk = devices
    rng = random.Random(21)
    acknowledged: list[str] = []
    for round_ in range(3):
        # The laptop is killed in the middle of a burst of writes, which it publishes as
        # their batches become durable: mid-commit and mid-publish.
        acknowledged += lap.burst_killed(900, f"lap round {round_}", rng.uniform(0.2, 0.8))
        # The desk is killed while it applies the laptop's records: mid-apply.
        desk.stop()
        acknowledged += lap.burst(600, f"round {round_} while the desk is down")
        time.sleep(1.5)  # Syncthing carries them meanwhile
        desk.start()
        time.sleep(rng.uniform(0.05, 0.4))
        desk.kill()
        desk.start()
    settle(devices, lambda: None, timeout=90)
    for device in devices:
        assert set(acknowledged) <= set(device.memory()[0])
        ok, errors = device.verified()
        assert ok, errors


def quiet(devices: tuple[Device, ...], window_s: float = 3.0) -> bool:
    """Whether no device rewrites its manifest for ``window_s`` (longer than the timer, so
    each looks at the folder meanwhile): an acknowledgement is not acknowledged back."""

    def manifests() -> list[bytes]:
        return [(d.folder / "devices" / d.id / "manifest").read_bytes() for d in devices]

    before = manifests()
    time.sleep(window_s)
    return manifests() == before


def test_three_daemons_converge_through_three_syncthing_instances(
    short_tmp: Path,
) -> None:
    with syncthing_cluster(short_tmp / "st", 3) as cluster:
        devices = tuple(
            make_device(short_tmp, name, instance.folder, watch=True, interval_s=2)
            for name, instance in zip(("a", "b", "c"), cluster.instances, strict=True)
        )
        with started(*devices):
            a, b, c = devices
            pair(a, b)
            pair(a, c)
            settle(devices, lambda: None)
            written = [i for d in devices for i in d.burst(30, f"{d.name} writes")]
            settle(devices, lambda: None)
            for device in devices:
                assert set(written) <= set(device.memory()[0])
                assert len(device.call("sync.status")["devices"]) == 3
            assert no_conflict_copies(cluster)
            # Idle devices stop publishing: a manifest rewritten for ever (two devices
            # acknowledging each other's acknowledgements) is one Syncthing keeps failing
            # to pull ("no such file": it changed meanwhile), retrying a minute later.
            wait_until(lambda: quiet(devices), 30, "the devices to stop publishing")
