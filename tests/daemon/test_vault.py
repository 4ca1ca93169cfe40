"""hikmahd with the vault on: keys from a real Secret Service (GNOME Keyring on a
private bus, see secret_service.py), sealed text at rest, purge by key
destruction, rotation, and kill -9 in the middle of purge, compaction and rotation."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from keyring.backends import SecretService

from hikmahd.keys import SERVICE, Keyring
from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.secret_service import SecretServiceSession, needs_secret_service

pytestmark = needs_secret_service

VAULT_POLICY = "allow_sensitive_persistence = true\n\n[vault]\nenabled = true\n"
WORDS = ("ocelot", "tamarind", "fjord", "quasar", "bramble", "lichen", "cobalt", "sorrel")


def vault_env(session: SecretServiceSession) -> dict[str, str]:
    """What hikmahd needs to find the Secret Service: the bus, and no keyring config."""
    env = clean_env(
        DBUS_SESSION_BUS_ADDRESS=session.address, XDG_CONFIG_HOME=str(session.home / "config")
    )
    env.pop("PYTHON_KEYRING_BACKEND", None)
    return env


@pytest.fixture
def vaulted(short_tmp: Path, secret_service: SecretServiceSession) -> Iterator[Running]:
    running = Running(short_tmp, env=vault_env(secret_service))
    running.policy.write_text(VAULT_POLICY)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def note(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} note {i} about {WORDS[(i * 3 + 1) % len(WORDS)]}zz{i}"


def every_byte(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def remember(running: Running, content: str, **params: object) -> str:
    result = running.call("memory.remember", content=content, **params)
    return str(result["trace"]["id"])


def ledger_ok(running: Running) -> bool:
    return bool(running.call("ledger.verify")["ok"])


def test_sealed_round_trip_through_the_daemon_and_no_plaintext_on_disk(vaulted: Running) -> None:
    ids = [remember(vaulted, note(i), tags=[f"tag{i}zz"]) for i in range(20)]
    secret = remember(vaulted, "diagnosis: quasar syndrome", privacy="sensitive")
    shown = vaulted.call("memory.show", id=ids[3])
    assert shown["trace"]["content"] == note(3)
    assert shown["trace"]["tags"] == ["tag3zz"]
    found = vaulted.call("memory.recall", query=note(7))
    assert found["results"][0]["trace"]["id"] == ids[7]
    assert vaulted.call("memory.show", id=secret)["trace"]["privacy"] == "sensitive"

    assert "vault     on" in vaulted.cli("status", env=clean_env()).stdout
    status = vaulted.cli("vault", "status", env=clean_env())
    assert status.returncode == 0, status.stderr
    assert "vault: on" in status.stdout
    assert "SecretService" in status.stdout

    vaulted.stop()  # also flushes nothing plaintext: there is none to flush
    data = every_byte(vaulted.data)
    # Whole words and tags: a string of three or four bytes turns up by chance in
    # megabytes of ciphertext and hashes.
    for i in range(20):
        assert note(i).split()[-1].encode() not in data
        assert f"tag{i}zz".encode() not in data
    assert b"quasar syndrome" not in data


def test_purge_destroys_the_key_and_the_chain_still_verifies(vaulted: Running) -> None:
    ids = [remember(vaulted, note(i)) for i in range(5)]
    purged = vaulted.cli("purge", "--id", ids[2], "--reason", "asked to forget", env=clean_env())
    assert purged.returncode == 0, purged.stderr
    assert "data key was destroyed" in purged.stdout
    gone = vaulted.cli("show", ids[2], env=clean_env())
    assert gone.returncode != 0
    recalled = vaulted.call("memory.recall", query=note(2))
    assert ids[2] not in [r["trace"]["id"] for r in recalled["results"]]
    exported = vaulted.cli("export", env=clean_env())
    assert exported.returncode == 0, exported.stderr
    assert ids[2] not in exported.stdout and ids[3] in exported.stdout
    assert note(3) in exported.stdout  # export gives the caller plaintext
    assert ledger_ok(vaulted)


def test_rotation_rewraps_every_key_and_deletes_the_old_master(vaulted: Running) -> None:
    ids = [remember(vaulted, note(i)) for i in range(30)]
    before = vaulted.call("vault.status")
    rotated = vaulted.cli("vault", "rotate", env=clean_env())
    assert rotated.returncode == 0, rotated.stderr
    after = vaulted.call("vault.status")
    assert after["master_id"] != before["master_id"]
    assert after["index_id"] == before["index_id"]
    assert after["retiring"] == []
    assert "30 data key(s) re-wrapped" in rotated.stdout
    old_entry = f"master:{before['vault_id']}:{before['master_id']}"
    assert SecretService.Keyring().get_password(SERVICE, old_entry) is None

    vaulted.stop()
    vaulted.start()
    assert vaulted.call("memory.show", id=ids[11])["trace"]["content"] == note(11)
    assert ledger_ok(vaulted)


def test_an_agent_session_cannot_rotate(vaulted: Running) -> None:
    refused = vaulted.cli("vault", "rotate", env=clean_env(CLAUDECODE="1"))
    assert refused.returncode != 0
    assert "agent" in refused.stderr


def test_a_rotation_interrupted_after_the_keyring_moved_is_finished_at_start(
    vaulted: Running,
) -> None:
    ids = [remember(vaulted, note(i)) for i in range(10)]
    vault_id = vaulted.call("vault.status")["vault_id"]
    vaulted.kill()
    # The daemon died right after step 1: a new master is current, the old one retiring.
    keys = Keyring(vault_id, backend=SecretService.Keyring()).begin_rotation()
    assert keys.retiring
    vaulted.start()
    status = vaulted.call("vault.status")
    assert status["master_id"] == keys.master_id
    assert status["retiring"] == []
    assert vaulted.call("memory.show", id=ids[4])["trace"]["content"] == note(4)


def background(running: Running, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hikmah_cli",
            "--socket",
            str(running.socket),
            "--no-autostart",
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    )


def crash_work(running: Running, work: str, victims: list[str]) -> list[subprocess.Popen[bytes]]:
    """Start ``work`` from other processes, as a person's CLI would."""
    if work == "purge":
        return [background(running, "purge", "--id", v, "--reason", "crash") for v in victims]
    if work == "rotate":
        return [background(running, "vault", "rotate")]
    for victim in victims:
        running.call("memory.purge", id=victim, reason="before compaction")
    return [background(running, "compact")]


@pytest.mark.parametrize("work", ["purge", "rotate", "compact"])
def test_kill_9_in_the_middle_leaves_a_consistent_store(vaulted: Running, work: str) -> None:
    rng = random.Random(work)
    ids = [remember(vaulted, note(i)) for i in range(120)]
    purged: set[str] = set()
    for round_ in range(4):
        alive = [i for i in ids if i not in purged]
        jobs = crash_work(vaulted, work, alive[:3])
        time.sleep(rng.uniform(0.02, 0.3))
        vaulted.kill(signal.SIGKILL)
        for job in jobs:
            job.wait(timeout=30)
        vaulted.start()
        assert ledger_ok(vaulted), f"round {round_}"
        status = vaulted.call("vault.status")
        assert status["retiring"] == [] and status["missing"] == []
        with vaulted.connect() as conn:
            for position, trace_id in enumerate(ids):
                reply = conn.request("memory.show", id=trace_id)
                if "error" in reply:
                    assert reply["error"]["data"]["reason"] == "not_found", reply
                    purged.add(trace_id)
                else:
                    assert reply["result"]["trace"]["content"] == note(position)
        exported = vaulted.cli("export", env=clean_env())
        assert exported.returncode == 0, exported.stderr
        lines = [json.loads(line) for line in exported.stdout.splitlines()]
        assert {line["id"] for line in lines} == set(ids) - purged


def test_a_backup_restores_with_the_same_keys(vaulted: Running, short_tmp: Path) -> None:
    ids = [remember(vaulted, note(i)) for i in range(10)]
    backup = vaulted.cli("backup", str(short_tmp / "backup"), env=clean_env())
    assert backup.returncode == 0, backup.stderr
    vaulted.stop()
    restored = subprocess.run(
        [sys.executable, "-m", "hikmahd", *vaulted.flags(), "--restore", str(short_tmp / "backup")],
        capture_output=True,
        text=True,
        env=vaulted.env,
        timeout=60,
    )
    assert restored.returncode == 0, restored.stderr
    vaulted.start()
    assert vaulted.call("memory.show", id=ids[6])["trace"]["content"] == note(6)
    # Its last word, not "zz6": three bytes turn up by chance in 80 KB of ciphertext.
    assert note(6).split()[-1].encode() not in every_byte(short_tmp / "backup")
