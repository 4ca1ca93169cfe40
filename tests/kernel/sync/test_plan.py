"""The planner over a real folder: publish, apply, crashes, rollbacks, tampering, strangers."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from hikmah.ledger.chain import decode_record
from hikmah.model.errors import HikmahError
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmah.store.core import Store
from hikmah.sync.device import DeviceKey, Untrusted
from hikmah.sync.folder import DEVICES, read_file, scan, write_own
from hikmah.sync.manifest import decode_manifest
from hikmah.sync.plan import Announce, plan_publish
from tests.harness.sync_chains import NOW, Device


def devices(folder: Path, *names: str) -> list[Device]:
    made = [Device(folder, name, segment_bytes=700) for name in names]
    for device in made:
        device.pair(*(other for other in made if other is not device))
    return made


def test_two_devices_exchange_their_chains_both_ways(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(9)
    desk.write(4)
    assert laptop.publish() and desk.publish()
    assert laptop.apply() == [] and desk.apply() == []
    assert desk.lines_of(laptop) == [r.line for r in laptop.records]
    assert laptop.lines_of(desk) == [r.line for r in desk.records]
    assert len(scan(tmp_path)[laptop.id].segments[1]) > 1  # the tail rolled
    # Nothing new: nothing written, nothing applied.
    assert not laptop.publish()
    before = dict(desk.peers)
    desk.apply()
    assert desk.peers == before
    laptop.write(3)
    laptop.publish()
    desk.apply()
    assert desk.lines_of(laptop) == [r.line for r in laptop.records]


def test_three_devices_converge_whatever_order_they_look_in(tmp_path: Path) -> None:
    a, b, c = devices(tmp_path, "a", "b", "c")
    for round_ in range(3):
        for device in (a, b, c)[round_:] + (a, b, c)[:round_]:
            device.write(round_ + 1)
            device.publish()
            device.apply()
    for device in (a, b, c):
        device.apply()
    for device in (a, b, c):
        for other in (a, b, c):
            if other is not device:
                assert device.lines_of(other) == [r.line for r in other.records]


def test_a_publish_killed_before_its_manifest_is_repaired_and_never_applied_early(
    tmp_path: Path,
) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(3)
    laptop.publish()
    desk.apply()
    laptop.write(2)
    own = scan(tmp_path)[laptop.id]
    plan = plan_publish(
        laptop.key,
        epoch=1,
        head=laptop.head(),
        announce=Announce(name="laptop"),
        published=laptop.published,
        own=own,
        folder_generation=laptop.published.generation if laptop.published else 0,
        records_from=lambda seq: laptop.records[seq - 1 :],
        segment_bytes=laptop.segment_bytes,
    )
    assert plan is not None
    laptop.published = plan.published
    # kill -9 after the segments, before the manifest (and a temporary file left behind).
    write_own(tmp_path, laptop.id, [w for w in plan.writes if w[0] != "manifest"])
    (laptop.root / ".tmp-manifest").write_bytes(b"half")
    assert desk.apply() == []
    assert desk.applied(laptop).seq == 3  # past the signed head: not applied
    # The next publish finds its manifest behind and writes a new generation.
    assert laptop.publish()
    assert not (laptop.root / ".tmp-manifest").exists()
    desk.apply()
    assert desk.applied(laptop).seq == 5
    generation = decode_manifest(read_file(tmp_path, laptop.id, "manifest") or b"", laptop.id)
    assert generation.manifest.generation == 3


def test_a_generation_is_never_reused_after_a_crash_or_a_lost_store(tmp_path: Path) -> None:
    (laptop,) = devices(tmp_path, "laptop")
    laptop.write(2)
    laptop.publish()
    laptop.publish()
    first = decode_manifest(read_file(tmp_path, laptop.id, "manifest") or b"", laptop.id)
    laptop.published = None  # the store forgot what it published
    laptop.write(1)
    laptop.publish()
    again = decode_manifest(read_file(tmp_path, laptop.id, "manifest") or b"", laptop.id)
    assert again.manifest.generation > first.manifest.generation


def test_segments_deleted_from_the_folder_are_written_again(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(12)
    laptop.publish()
    for path in sorted((laptop.root / "e1").iterdir())[:2]:
        path.unlink()
    assert desk.apply()[0].endswith("has not arrived")
    assert laptop.publish()
    assert desk.apply() == [] and desk.applied(laptop).seq == 12


def test_a_rolled_back_manifest_is_reported_and_loses_nothing(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(2)
    laptop.publish()
    old = (laptop.root / "manifest").read_bytes()
    laptop.write(2)
    laptop.publish()
    desk.apply()
    (laptop.root / "manifest").write_bytes(old)
    (finding,) = desk.apply()
    assert "rolled_back" in finding and desk.applied(laptop).seq == 4


def test_a_tampered_segment_is_refused_and_named(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(3)
    laptop.publish()
    (segment,) = (laptop.root / "e1").iterdir()
    data = segment.read_bytes().replace(b"laptop-1", b"laptop-X")
    segment.write_bytes(data)
    (finding,) = desk.apply()
    assert "refused" in finding and "record 2" in finding
    assert desk.lines_of(laptop) == []


def test_a_stranger_in_the_folder_is_reported_never_applied(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    stranger = Device(tmp_path, "stranger")
    stranger.write(2)
    stranger.publish()
    laptop.publish()
    findings = desk.apply()
    assert any(stranger.id in f and "not paired" in f for f in findings)
    # A stranger's manifest copied into a paired device's directory is refused.
    (laptop.root / "manifest").write_bytes((stranger.root / "manifest").read_bytes())
    assert any("refused" in f and "another device" in f for f in desk.apply())


def test_a_manifest_signed_by_another_key_than_the_paired_one_is_refused(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(1)
    laptop.publish()
    desk.peers[laptop.id] = msgspec.structs.replace(
        desk.peers[laptop.id], key=DeviceKey.generate().public.raw
    )
    assert any("another key" in f for f in desk.apply())


def test_the_folder_is_read_as_regular_files_only(tmp_path: Path) -> None:
    laptop = Device(tmp_path, "laptop")
    laptop.write(1)
    laptop.publish()
    secret = tmp_path / "secret"
    secret.write_text("not for the folder")
    manifest = laptop.root / "manifest"
    manifest.unlink()
    manifest.symlink_to(secret)
    with pytest.raises(Untrusted, match="symbolic link"):
        read_file(tmp_path, laptop.id, "manifest")
    manifest.unlink()
    os.mkfifo(manifest)
    with pytest.raises(Untrusted, match="not a regular file"):
        read_file(tmp_path, laptop.id, "manifest")
    manifest.unlink()
    manifest.write_bytes(b"x" * 11)
    with pytest.raises(Untrusted, match="larger"):
        read_file(tmp_path, laptop.id, "manifest", limit=10)
    with pytest.raises(ValueError, match="inside a device"):
        read_file(tmp_path, laptop.id, "../other")
    (tmp_path / DEVICES / "not-a-device").mkdir()
    (tmp_path / DEVICES / DeviceKey.generate().device_id).symlink_to(laptop.root)
    assert set(scan(tmp_path)) == {laptop.id}
    assert scan(tmp_path / "absent") == {}


@pytest.mark.parametrize("linked", ["devices", "own", "segments", "manifest"])
def test_nothing_is_written_through_a_link_in_the_folder(tmp_path: Path, linked: str) -> None:
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    laptop = Device(folder, "laptop", segment_bytes=700)
    laptop.write(3)
    laptop.publish()
    outside.mkdir()
    place = {
        "devices": folder / DEVICES,
        "own": laptop.root,
        "segments": next(p for p in laptop.root.iterdir() if p.is_dir()),
        "manifest": laptop.root / "manifest",
    }[linked]
    os.rename(place, outside / "moved")
    place.symlink_to(outside / "moved")  # git and Syncthing both carry links
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    laptop.write(40)  # new segments, a new manifest
    with pytest.raises(Untrusted, match="symbolic link"):
        laptop.publish()
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before
    assert place.is_symlink()  # refused, not replaced: sync status names it


def test_a_real_stores_ledger_is_published_and_followed_byte_for_byte(tmp_path: Path) -> None:
    laptop, desk = devices(tmp_path / "folder", "laptop", "desk")
    with Store(tmp_path / "data", map_size=1 << 24) as store:
        drafts = [Draft(content=f"the build uses tool {i}", kind="procedure") for i in range(5)]
        outcomes = store.apply(
            [Remember(draft=d) for d in drafts], now_ms=NOW, policy=KernelPolicy()
        )
        assert not any(isinstance(o, HikmahError) for o in outcomes)
        with store.snapshot() as snapshot:
            laptop.records = [decode_record(line) for _seq, line in snapshot.records()]
    laptop.publish()
    desk.apply()
    assert desk.lines_of(laptop) == [r.line for r in laptop.records] and len(laptop.records) == 5


def test_an_audit_finds_damage_behind_what_was_applied_and_the_owner_repairs_its_own(
    tmp_path: Path,
) -> None:
    laptop, desk = devices(tmp_path, "laptop", "desk")
    laptop.write(12)
    laptop.publish()
    desk.apply()
    assert desk.audit() == [] and laptop.audit() == []
    first = sorted((laptop.root / "e1").iterdir())[0]
    first.write_bytes(first.read_bytes().replace(b"laptop-0", b"laptop-Z"))
    assert desk.apply() == []  # a routine look reads only what is new
    (finding,) = desk.audit()
    assert finding.startswith(f"{laptop.id}: refused:")
    (own,) = laptop.audit()
    assert "publishes its chain again" in own
    laptop.published = None
    laptop.publish()
    assert desk.audit() == [] and laptop.audit() == []
