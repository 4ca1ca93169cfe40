"""A purge reaches every device: without the vault the text leaves every store (git's
history keeps it, as docs/sync.md says); with the vault (keys in a real Secret Service)
the folder and its history only ever hold ciphertext, and the key dies everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from tests.daemon.test_vault import VAULT_POLICY, vault_env
from tests.harness.secret_service import SecretServiceSession, needs_secret_service
from tests.harness.sync_daemons import Device, make_device, settle, started

from .test_daemons_git import Git, two  # noqa: F401 -- the fixture


def every_byte(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def prekeys(device: Device) -> set[str]:
    """The prekey ids a device announces in its manifest in the folder."""
    body = (device.folder / "devices" / device.id / "manifest").read_bytes().split(b"\n")[0]
    return {p["id"] for p in json.loads(body)["prekeys"]}


def history(git: Git, clone: Path) -> str:
    """Every version of every file git keeps."""
    return git.remote.git(clone, "log", "-p", "--all", "--text")


def test_a_purge_without_the_vault_leaves_the_stores_but_not_git_history(
    two: tuple[Git, Device, Device],  # noqa: F811
) -> None:
    git, lap, desk = two
    secret = lap.remember("the door code is tamarind fjord")
    lap.remember("the plant wants water on fridays")
    settle((lap, desk), lambda: git.round(lap, desk))
    done = desk.cli("purge", "--id", secret, "--reason", "asked to forget")
    assert done.returncode == 0, done.stderr
    settle((lap, desk), lambda: git.round(desk, lap))
    compacted = lap.cli("compact")  # the origin rewrites its chain without the text
    assert compacted.returncode == 0, compacted.stderr
    settle((lap, desk), lambda: git.round(lap, desk))
    for device in (lap, desk):
        assert secret not in device.memory()[0]
        assert device.verified()[0], device.verified()[1]
    assert b"tamarind" not in every_byte(lap.folder / "devices")
    # What git keeps: the published text stays in its history, on every clone.
    assert "tamarind" in history(git, desk.folder)
    for device in (lap, desk):
        device.stop()  # the stores are whole files now
        assert b"tamarind" not in every_byte(device.running.data)


@needs_secret_service
def test_with_the_vault_keys_go_device_to_device_and_a_purge_leaves_nothing_readable(
    short_tmp: Path,
    secret_service: SecretServiceSession,
) -> None:
    git = Git(short_tmp)
    env = vault_env(secret_service)
    lap, desk = (
        make_device(short_tmp, name, git.remote.clone(name), watch=False, env=env,
                    extra_policy=VAULT_POLICY)
        for name in ("lap", "desk")
    )  # fmt: skip
    with started(lap, desk):
        git.paired(lap, desk)
        notes = [lap.remember(f"the ocelot note {i} bramblezz{i}") for i in range(4)]
        sensitive = desk.remember("diagnosis: lichenzz syndrome", privacy="sensitive")
        settle((lap, desk), lambda: git.round(lap, desk))
        # Each device reads the other's text: the data keys came in envelopes.
        assert (
            desk.call("memory.show", id=notes[2])["trace"]["content"]
            == "the ocelot note 2 bramblezz2"
        )
        assert (
            lap.call("memory.show", id=sensitive)["trace"]["content"]
            == "diagnosis: lichenzz syndrome"
        )
        lap.cli("purge", "--id", notes[1], "--reason", "forget it")
        lap.cli("purge", "--id", sensitive, "--reason", "forget it")
        settle((lap, desk), lambda: git.round(lap, desk))
        for device in (lap, desk):
            with device.running.connect() as conn:
                for gone in (notes[1], sensitive):
                    reply = conn.request("memory.show", id=gone)
                    assert reply["error"]["data"]["reason"] == "not_found"
            assert device.verified()[0], device.verified()[1]
        # The folder and every version git keeps of it: ciphertext only, never text.
        kept = history(git, lap.folder)
        for word in ("bramblezz", "lichenzz", "ocelot"):
            assert word not in kept
        status = desk.call("sync.status")
        assert all(d["vault"] for d in status["devices"])
        # Spent prekeys are destroyed, and the envelopes addressed to them leave the folder.
        git.round(lap, desk, lap, desk, lap)
        late = lap.remember("the ocelot note after the rotation")
        git.round(lap, desk)
        assert desk.call("memory.show", id=late)["trace"]["content"].endswith("rotation")
        announced = prekeys(desk)
        assert 1 <= len(announced) <= 2
        sent = list((lap.folder / "devices").glob(f"*/keys/{desk.id}/*/*.keys"))
        assert sent and {p.parent.name for p in sent} <= announced
    for device in (lap, desk):
        data = every_byte(device.running.data)
        for word in (b"bramblezz", b"lichenzz", b"ocelot"):
            assert word not in data
