"""Devices publishing their chains through real Syncthing instances on loopback.

Each device writes only its own directory of its own instance's folder;
Syncthing carries the files; every other device applies what verifies.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.sync_chains import Device
from tests.harness.sync_engines import Cluster, syncthing_cluster, wait_until


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with syncthing_cluster(tmp_path_factory.mktemp("st2"), 2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with syncthing_cluster(tmp_path_factory.mktemp("st3"), 3) as cluster:
        yield cluster


def paired(cluster: Cluster, *names: str) -> list[Device]:
    devices = [
        Device(i.folder, n, segment_bytes=2000)
        for i, n in zip(cluster.instances, names, strict=False)
    ]
    for device in devices:
        device.pair(*(other for other in devices if other is not device))
    return devices


def converged(devices: list[Device]) -> bool:
    for device in devices:
        device.apply()
    return all(
        device.lines_of(other) == [r.line for r in other.records]
        for device in devices
        for other in devices
        if other is not device
    )


def no_conflict_copies(cluster: Cluster) -> bool:
    return not any(
        ".sync-conflict-" in p.name for i in cluster.instances for p in i.folder.rglob("*")
    )


def test_two_devices_write_at_once_and_each_gets_the_others_chain(two: Cluster) -> None:
    laptop, desk = paired(two, "laptop", "desk")
    for _ in range(3):
        laptop.write(7)
        desk.write(5)
        laptop.publish()
        desk.publish()
    wait_until(lambda: converged([laptop, desk]), 30, "both chains to arrive")
    assert desk.applied(laptop).seq == 21 and laptop.applied(desk).seq == 15
    assert no_conflict_copies(two)


def test_a_segment_altered_in_one_folder_is_carried_and_refused(two: Cluster) -> None:
    laptop, desk = paired(two, "laptop2", "desk2")
    laptop.write(3)
    laptop.publish()
    wait_until(lambda: converged([laptop, desk]), 30, "the chain to arrive")
    laptop.write(2)
    laptop.publish()
    # Someone with the folder (not the device) rewrites the tail in the laptop's replica.
    (segment,) = (laptop.root / "e1").iterdir()
    segment.write_bytes(segment.read_bytes().replace(b"laptop2-4", b"laptop2-X"))

    def refused() -> bool:
        return any("refused" in finding for finding in desk.apply())

    wait_until(refused, 30, "the altered segment to reach the desk and be refused")
    assert desk.applied(laptop).seq == 3  # nothing of it applied


def test_three_devices_converge(three: Cluster) -> None:
    devices = paired(three, "a", "b", "c")
    for round_ in range(2):
        for device in devices:
            device.write(4 + round_)
            device.publish()
    wait_until(lambda: converged(devices), 30, "three chains to meet")
    assert all(d.applied(o).seq == 9 for d in devices for o in devices if o is not d)
    assert no_conflict_copies(three)


def test_a_republished_folder_after_loss_reaches_the_others(two: Cluster, tmp_path: Path) -> None:
    laptop, desk = paired(two, "laptop3", "desk3")
    laptop.write(4)
    laptop.publish()
    wait_until(lambda: converged([laptop, desk]), 30, "the chain to arrive")
    # The laptop's manifest is lost from its replica (a person cleaned the folder).
    (laptop.root / "manifest").unlink()
    assert laptop.publish()
    laptop.write(1)
    laptop.publish()
    wait_until(lambda: converged([laptop, desk]), 30, "the republished chain to arrive")
