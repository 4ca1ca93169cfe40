"""Person presence is each device's own: a passphrase set on one device is a ledger record
that reaches the other devices with the rest, and changes nothing there (real daemons
syncing through git; the passphrase typed in a real pty)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.harness.environment import clean_env
from tests.harness.sync_daemons import Device, settle
from tests.harness.terminals import PtyShell

from .test_daemons_git import Git, two  # noqa: F401 -- the fixture

PASSPHRASE = "a passphrase for the laptop"


def set_passphrase(device: Device) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(
        PATH=f"{bin_dir}:{os.environ['PATH']}", HIKMAH_SOCKET=str(device.running.socket)
    )
    shell = PtyShell(env, device.running.root)
    try:
        shell.set_passphrase(PASSPHRASE, end=False)
    finally:
        shell.close()


def test_a_passphrase_set_on_one_device_turns_presence_on_there_only(
    two: tuple[Git, Device, Device],  # noqa: F811
) -> None:
    git, lap, desk = two
    set_passphrase(lap)
    after = lap.remember("written on the laptop after its passphrase")
    settle((lap, desk), lambda: git.round(lap, desk))
    assert desk.call("memory.show", id=after)["status"] == "active"  # the records arrived
    assert lap.call("presence.status")["on"]
    assert not desk.call("presence.status")["on"]
    # The desk's person acts without a proof; the laptop's is asked for one.
    rule = "Sign every release tag"
    written = desk.cli("remember", "--verified", "--kind", "constraint", rule)
    assert written.returncode == 0, written.stderr
    refused = lap.cli("remember", "--verified", "--kind", "constraint", rule)
    assert refused.returncode == 3 and "presence" in refused.stderr, refused.stderr
