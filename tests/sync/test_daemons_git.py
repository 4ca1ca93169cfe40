"""Real daemons syncing through a real git repository: each device's folder is a clone of
a bare repository, and the test runs the hook docs/sync.md suggests around ``hikmah sync``
(pull, sync, commit, push)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.harness.environment import clean_env
from tests.harness.sync_daemons import Device, make_device, pair, settle, started
from tests.harness.sync_engines import GitRemote


class Git:
    """The engine: a bare repository and one clone per device."""

    def __init__(self, root: Path) -> None:
        (root / "git").mkdir()
        self.remote = GitRemote(root / "git")

    def device(self, root: Path, name: str) -> Device:
        return make_device(root, name, self.remote.clone(name), watch=False)

    def hook(self, device: Device) -> None:
        """What a person's timer runs on a machine: pull, sync, commit and push."""
        self.remote.pull(device.folder)
        device.sync()
        self.remote.push(device.folder, f"hikmah sync on {device.name}")

    def round(self, *devices: Device) -> None:
        for device in devices:
            self.hook(device)

    def carry(self, source: Device, target: Device) -> None:
        self.remote.push(source.folder)
        self.remote.pull(target.folder)

    @contextmanager
    def two(self, root: Path) -> Iterator[tuple[Device, Device]]:
        """A laptop and a desk, started and paired."""
        lap, desk = (self.device(root, name) for name in ("lap", "desk"))
        with started(lap, desk):
            self.paired(lap, desk)
            yield lap, desk

    def paired(self, first: Device, second: Device) -> None:
        """``second`` joins ``first`` by code, and both see each other's chain."""
        pair(first, second, carry=lambda: self.carry(first, second))
        self.round(second, first, second, first)


@pytest.fixture
def three(short_tmp: Path) -> Iterator[tuple[Git, tuple[Device, ...]]]:
    git = Git(short_tmp)
    devices = tuple(git.device(short_tmp, name) for name in ("lap", "desk", "box"))
    with started(*devices):
        lap, desk, box = devices
        for joiner in (desk, box):
            pair(lap, joiner, carry=lambda j=joiner: git.carry(lap, j))
            git.round(joiner, lap, joiner)
        git.round(*devices, *devices)
        yield git, devices


def test_three_daemons_share_one_memory_through_git(
    three: tuple[Git, tuple[Device, ...]],
) -> None:
    git, devices = three
    lap, desk, box = devices
    status = lap.call("sync.status")
    assert {d["name"] for d in status["devices"]} == {"lap", "desk", "box"}
    written = {
        d.name: [d.remember(f"{d.name} note {i} about lichen") for i in range(4)] for d in devices
    }
    promise = lap.remember("send the release notes", kind="commitment", deadline="+48h")
    deploy = box.remember("deploys go through staging first")
    git.round(*devices, *devices)
    # At once, on different machines: a correction of the box's trace, conflicting
    # claims, the fulfilment of the laptop's commitment, a purge of a desk trace.
    fix = desk.remember("deploys go through canary first", supersedes=deploy)
    lap.remember("region is eu-west-1", claim_key="region", claim_value="eu-west-1")
    box.remember("region is us-east-1", claim_key="region", claim_value="us-east-1")
    box.call("memory.fulfill", id=promise)
    agent = box.running.cli(
        "remember", "the agent thinks the cache is warm", "--json", env=clean_env(CLAUDECODE="1")
    )
    assert agent.returncode == 0, agent.stderr
    by_agent = json.loads(agent.stdout)["trace"]["id"]
    gone = written["desk"][0]
    purged = lap.cli("purge", "--id", gone, "--reason", "asked to forget")
    assert purged.returncode == 0, purged.stderr
    settle(devices, lambda: git.round(*devices))
    traces, conflicts, queue = lap.memory()
    assert traces[deploy][0] == "superseded" and traces[fix][0] == "active"
    assert traces[promise][0] == "fulfilled" and queue == []
    assert [c["key"] for c in conflicts] == ["region"]
    assert gone not in traces
    every = {t for ids in written.values() for t in ids} - {gone}
    for device in devices:
        assert every <= set(device.memory()[0])  # no acknowledged write lost
        ok, errors = device.verified()
        assert ok, errors
    # An agent's trace from the box is an agent's trace on every device.
    for device in devices:
        seen = device.call("memory.show", id=by_agent)["trace"]["provenance"]
        assert not seen["verified"] and seen["locator"].startswith("agent-session:")
    # A trace carries the device it came from.
    shown = desk.call("memory.show", id=deploy)
    assert shown["origin"]["name"] == "box" and not shown["origin"]["this_device"]
    assert "from box" in desk.cli("recall", "box note 2 lichen").stdout
    # git never merged anything: every device wrote only its own directory.
    log = git.remote.git(lap.folder, "log", "--merges", "--oneline")
    assert log.strip() == ""


def test_tampering_a_replayed_directory_and_a_removed_device(
    three: tuple[Git, tuple[Device, ...]],
    short_tmp: Path,
) -> None:
    git, devices = three
    lap, desk, box = devices
    remote = git.remote
    lap.remember("the ocelot sleeps at noon")
    git.round(lap, desk)
    before = remote.git(lap.folder, "rev-parse", "HEAD").strip()
    quasar = lap.remember("the quasar is far")
    git.hook(lap)
    # Someone with push access rewrites the laptop's newest record in the repository.
    attacker = remote.clone("attacker")
    segment = max((attacker / "devices").glob(f"{lap.id}/e1/*.seg"))
    segment.write_bytes(segment.read_bytes().replace(b"quasar", b"QUASAR"))
    remote.push(attacker, "an innocent-looking commit")
    git.hook(desk)
    assert quasar not in desk.memory()[0]
    assert any(f["problem"] == "refused" for f in desk.call("sync.status")["findings"])
    ok, errors = desk.verified()
    assert not ok and any(lap.id in e for e in errors)
    # The laptop's own audit finds its directory damaged and publishes it again.
    remote.pull(lap.folder)
    assert not lap.verified()[0]
    git.round(lap, desk)
    assert quasar in desk.memory()[0] and desk.verified()[0]
    # A replayed old directory (someone checks out yesterday's files): rolled back, nothing lost.
    subprocess.run(
        ["git", "checkout", "-q", before, "--", f"devices/{lap.id}"], cwd=attacker, check=True
    )
    remote.pull(attacker)
    subprocess.run(
        ["git", "checkout", "-q", before, "--", f"devices/{lap.id}"], cwd=attacker, check=True
    )
    remote.push(attacker, "yesterday's files")
    git.hook(desk)
    assert quasar in desk.memory()[0]
    git.round(lap, desk, box)
    assert desk.verified()[0] and lap.verified()[0]
    # The box is lost: a person removes it; what it writes afterwards reaches nobody.
    kept = box.remember("written on the box before it was lost")
    git.round(box, lap, desk)
    removed = lap.cli("sync", "remove", box.id)
    assert removed.returncode == 0, removed.stderr
    late = box.remember("written on the box after its removal")
    settle((lap, desk), lambda: git.round(lap, desk, box))
    for device in (lap, desk):
        traces = device.memory()[0]
        assert kept in traces and late not in traces
    assert box.call("sync.status")["removed_by"] == lap.id
    assert box.cli("sync").returncode == 3  # it says it no longer syncs
    # Its writer gone, a person deletes its directory: the one file another device writes
    # (with git, after a pull: the deletion must not meet the box's last commits unpulled).
    remote.pull(lap.folder)
    deleted = lap.cli("sync", "remove", box.id, "--delete")
    assert deleted.returncode == 0, deleted.stderr
    git.round(lap, desk)
    assert not (desk.folder / "devices" / box.id).exists()
    assert not [f for f in desk.call("sync.status")["findings"] if f["device"] == box.id]
    del short_tmp


@pytest.fixture
def two(short_tmp: Path) -> Iterator[tuple[Git, Device, Device]]:
    git = Git(short_tmp)
    with git.two(short_tmp) as (lap, desk):
        yield git, lap, desk


def test_a_device_restored_from_a_backup_takes_its_published_records_back(
    two: tuple[Git, Device, Device],
    short_tmp: Path,
) -> None:
    import sys

    git, lap, desk = two
    before = lap.remember("written before the backup")
    backup = short_tmp / "backup"
    made = lap.cli("backup", str(backup))
    assert made.returncode == 0, made.stderr
    after = lap.remember("written after the backup, published, then lost")
    git.round(lap, desk)
    assert after in desk.memory()[0]
    lap.stop()
    restored = subprocess.run(
        [sys.executable, "-m", "hikmahd", *lap.running.flags(), "--restore", str(backup)],
        capture_output=True, text=True, env=lap.running.env, timeout=60,
    )  # fmt: skip
    assert restored.returncode == 0, restored.stderr
    lap.start()  # finds its own chain in the folder ahead of its ledger
    refused = lap.cli("remember", "a write before anyone looked")
    assert refused.returncode == 3 and "verify-ledger" in refused.stderr
    report = lap.call("ledger.verify")
    assert [u["trace_id"] for u in report["unacknowledged"]] == [after]
    accepted = lap.cli("verify-ledger", "--accept-tail")
    assert accepted.returncode == 0, accepted.stderr
    lap.remember("written once a person accepted them")
    settle((lap, desk), lambda: git.round(lap, desk))
    assert {before, after} <= set(lap.memory()[0])
    for device in (lap, desk):
        assert device.verified()[0], device.verified()[1]
