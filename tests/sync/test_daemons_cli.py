"""What a person reads of a synced store in the CLI's text: who wrote each recalled trace,
whole, on a device's line of its own, and every paired device's chain in verify-ledger."""

from __future__ import annotations

import json

from tests.harness.sync_daemons import Device, settle

from .test_daemons_git import Git, two  # noqa: F401 -- the fixture


def test_recall_names_who_wrote_each_trace_whole_and_on_which_device(
    two: tuple[Git, Device, Device],  # noqa: F811
) -> None:
    git, lap, desk = two
    desk.remember("the ocelot eats at dusk", source="human:ana")
    lap.remember("the ocelot sleeps at noon", source="human:ana")
    settle((lap, desk), lambda: git.round(desk, lap))
    done = lap.cli("recall", "ocelot")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    # The desk's trace: where it was written and who wrote it, whole, on a line of their own
    # (beside the id, score and date they would not fit in 80 columns).
    dusk = lines.index(next(line for line in lines if "eats at dusk" in line))
    assert lines[dusk + 2] == "    from desk · human:ana, unverified"
    # This device's own trace keeps its writer on the line with its id.
    noon = lines.index(next(line for line in lines if "sleeps at noon" in line))
    assert lines[noon + 1].endswith(" · human:ana, unverified")


def test_verify_ledger_names_each_paired_devices_chain_and_its_head(
    two: tuple[Git, Device, Device],  # noqa: F811
) -> None:
    git, lap, desk = two
    for i in range(3):
        desk.remember(f"the desk's note {i} about lichen")
    settle((lap, desk), lambda: git.round(desk, lap))
    desk_own = desk.call("ledger.verify")
    report = json.loads(lap.cli("verify-ledger", "--json").stdout)
    assert report["ok"], report["errors"]
    (chain,) = report["devices"]
    assert (chain["device"], chain["name"], chain["ok"]) == (desk.id, "desk", True)
    # The desk's chain as the laptop keeps it ends where the desk's own ledger does.
    assert (chain["records"], chain["head"]) == (desk_own["records"], desk_own["head"])
    text = lap.cli("verify-ledger")
    assert text.returncode == 0, text.stderr
    head = desk_own["head"]
    assert f"  desk {desk.id}: ok, {desk_own['records']} records\n" in text.stdout
    assert f"    head {head['seq']}:{head['hash']}\n" in text.stdout + "\n"
    assert all(len(line) <= 80 for line in text.stdout.splitlines())
