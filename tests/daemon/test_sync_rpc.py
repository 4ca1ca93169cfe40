"""sync.* through a real daemon and the real CLI: off without a folder, a person's pairing,
refusals that say what to do (the engines are tests/sync)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.daemon import Running
from tests.harness.environment import clean_env


def with_folder(running: Running, folder: Path) -> Running:
    running.policy.write_text(f'[sync]\nfolder = "{folder}"\nname = "desk"\nwatch = false\n')
    return running


def test_sync_is_off_until_the_policy_names_a_folder(daemon: Running) -> None:
    status = daemon.cli("sync", "status", "--json", env=clean_env())
    assert status.returncode == 0 and json.loads(status.stdout)["enabled"] is False
    refused = daemon.cli("sync", env=clean_env())
    assert refused.returncode == 3 and "[sync] folder" in refused.stderr
    shown = daemon.call(
        "memory.show", id=daemon.call("memory.remember", content="x")["trace"]["id"]
    )
    assert shown["origin"] is None


def test_a_missing_folder_is_refused_not_made(short_tmp: Path) -> None:
    running = with_folder(Running(short_tmp), short_tmp / "not-mounted").start()
    try:
        refused = running.cli("sync", env=clean_env())
        assert refused.returncode == 3 and "does not exist" in refused.stderr
        assert not (short_tmp / "not-mounted").exists()
    finally:
        running.stop()


def test_pairing_is_a_persons_and_codes_are_checked(short_tmp: Path) -> None:
    (short_tmp / "folder").mkdir()
    running = with_folder(Running(short_tmp), short_tmp / "folder").start()
    try:
        agent = clean_env(CLAUDECODE="1")
        for args in (
            ("sync", "invite"),
            ("sync", "join", "HKS1-AAAAA"),
            ("sync", "remove", "hd" + "a" * 26),
        ):
            refused = running.cli(*args, env=agent)
            assert refused.returncode == 3, (args, refused.stderr)
            assert "agent" in refused.stderr and "CLAUDECODE" in refused.stderr
        invited = running.cli("sync", "invite", "--json", env=clean_env())
        assert invited.returncode == 0, invited.stderr
        code = json.loads(invited.stdout)["code"]
        assert code.startswith("HKS1-")
        assert code not in "".join(
            p.read_text() for p in (short_tmp / "folder").rglob("*") if p.is_file()
        )
        # One letter of the secret mistyped (not the last: its spare bits say "not whole").
        typo = code[:5] + ("A" if code[5] != "A" else "B") + code[6:]
        wrong = running.cli("sync", "join", typo, env=clean_env())
        assert wrong.returncode == 2 and "typo" in wrong.stderr
        own = running.cli("sync", "join", code, env=clean_env())  # its own invitation
        assert own.returncode == 3 and "itself" in own.stderr
        usage = running.cli("sync", "join", env=clean_env())
        assert usage.returncode == 2
        status = json.loads(running.cli("sync", "status", "--json", env=clean_env()).stdout)
        (me,) = status["devices"]
        assert me["this"] and me["name"] == "desk"
        written = running.call("memory.remember", content="the desk's note")
        shown = running.call("memory.show", id=written["trace"]["id"])
        assert shown["origin"] == {"device": me["id"], "name": "desk", "this_device": True}
        key = running.data / "sync" / "device.key"
        assert key.stat().st_mode & 0o777 == 0o600
    finally:
        running.stop()
