"""A link planted in the sync folder (git and Syncthing both carry them) by someone who
wants a device to write its memory elsewhere: the daemon writes nothing through it and
``sync status`` says so."""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness.sync_daemons import make_device, started


def test_a_linked_device_directory_gets_nothing_and_is_reported(
    short_tmp: Path,
) -> None:
    folder, outside = short_tmp / "folder", short_tmp / "outside"
    folder.mkdir()
    outside.mkdir()
    lap = make_device(short_tmp, "lap", folder, watch=False)
    with started(lap):
        lap.remember("the ocelot sleeps at noon")
        lap.sync()
        own = folder / "devices" / lap.id
        os.rename(own, outside / "copy")
        own.symlink_to(outside / "copy")
        before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        lap.remember("the quasar is far: a secret plan in plain text")
        done = lap.cli("sync", "--json")
        assert done.returncode != 0
        assert "symbolic link" in done.stderr
        status = lap.call("sync.status")
        assert "symbolic link" in (status["error"] or "")
        after = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        assert after == before  # nothing written through the link
        assert not any(b"quasar" in data for data in after.values())
