"""A pairing code pairs one device: typed again elsewhere it says it was used, and by
whom; typed again on the device that joined, it is no error."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.sync_daemons import make_device, started


def test_a_used_code_says_it_was_used(short_tmp: Path) -> None:
    folder = short_tmp / "folder"
    folder.mkdir()
    devices = [make_device(short_tmp, name, folder, watch=False) for name in ("lap", "desk", "box")]
    lap, desk, box = devices
    with started(*devices):
        invited = lap.cli("sync", "invite", "--json")
        assert invited.returncode == 0, invited.stderr
        code = json.loads(invited.stdout)["code"]
        joined = desk.cli("sync", "join", code)
        assert joined.returncode == 0, joined.stderr
        lap.sync()  # the inviter pairs desk, and marks the invitation used
        assert desk.id in {d["id"] for d in lap.call("sync.status")["devices"]}

        again = box.cli("sync", "join", code)
        assert again.returncode == 3, again.stderr
        assert f"already used: device {desk.id} joined with it" in again.stderr
        assert "run hikmah sync invite on lap" in again.stderr
        assert desk.cli("sync", "join", code).returncode == 0  # paired already
        lap.sync()
        paired = {d["id"] for d in lap.call("sync.status")["devices"]}
        assert box.id not in paired and desk.id in paired
