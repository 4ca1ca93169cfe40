"""Devices publishing their chains through a real git repository (commits, pushes, pulls)."""

from __future__ import annotations

from pathlib import Path

from tests.harness.sync_chains import Device
from tests.harness.sync_engines import GitRemote


def test_three_clones_exchange_chains_with_clean_rebases(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path)
    clones = [remote.clone(name) for name in ("a", "b", "c")]
    devices = [
        Device(clone, name, segment_bytes=1500) for clone, name in zip(clones, "abc", strict=True)
    ]
    for device in devices:
        device.pair(*(other for other in devices if other is not device))
    for round_ in range(3):
        for device, clone in zip(devices, clones, strict=True):
            device.write(3 + round_)
            device.publish()
            remote.push(clone, f"{device.name} round {round_}")
    for device, clone in zip(devices, clones, strict=True):
        remote.pull(clone)
        assert device.apply() == []
    for device in devices:
        for other in devices:
            if other is not device:
                assert device.lines_of(other) == [r.line for r in other.records]
    log = remote.git(clones[0], "log", "--oneline")
    assert len(log.splitlines()) == 10  # the seed and one commit per publish


def test_a_forged_commit_in_the_repository_is_refused(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path)
    laptop_clone, desk_clone, attacker = (remote.clone(n) for n in ("laptop", "desk", "attacker"))
    laptop, desk = Device(laptop_clone, "laptop"), Device(desk_clone, "desk")
    laptop.pair(desk)
    desk.pair(laptop)
    laptop.write(3)
    laptop.publish()
    remote.push(laptop_clone)
    remote.pull(desk_clone)
    desk.apply()
    assert desk.applied(laptop).seq == 3
    # Someone who can push to the repository rewrites the laptop's history there.
    remote.pull(attacker)
    segment = next((attacker / "devices" / laptop.id / "e1").iterdir())
    segment.write_bytes(segment.read_bytes().replace(b"laptop-0", b"laptop-X"))
    remote.push(attacker, "innocent-looking")
    remote.pull(desk_clone)
    # Behind what was applied, a routine look reads nothing of it, and changes nothing ...
    assert desk.apply() == []
    assert desk.lines_of(laptop) == [r.line for r in laptop.records]
    # ... an audit of the folder finds it, on the desk and on the laptop itself.
    (finding,) = desk.audit()
    assert finding.startswith(f"{laptop.id}: refused:") and "record 1" in finding
    remote.pull(laptop_clone)
    (own,) = laptop.audit()
    assert "publishes its chain again" in own
    laptop.published = None
    laptop.publish()
    remote.push(laptop_clone, "laptop republishes")
    remote.pull(desk_clone)
    assert desk.audit() == [] and desk.apply() == []
    # What git keeps: the altered blob and the original stay in its history.
    history = remote.git(desk_clone, "log", "-p", "--all")
    assert "laptop-X" in history and "laptop-0" in history
