"""Starting, stopping, reloading: autostart, socket activation, stale sockets, policy."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import Running, clean_env, wait_for_socket


def eventually(check, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def test_policy_hot_reload_valid_then_invalid(daemon: Running) -> None:
    assert daemon.call("daemon.status")["policy"]["error"] is None
    time.sleep(0.5)  # let the watcher start
    daemon.policy.write_text("recall_limit = 3\n")
    eventually(lambda: "recall_limit = 3" in daemon.call("policy.get")["toml"])
    for i in range(6):
        daemon.call("memory.remember", content=f"kafka lag note {i}")
    assert len(daemon.call("memory.recall", query="kafka lag")["results"]) == 3

    daemon.policy.write_text("recall_limit = 3\n[recall]\nmatch_flor = 0.2\n")
    eventually(lambda: daemon.call("daemon.status")["policy"]["error"] is not None)
    error = daemon.call("daemon.status")["policy"]["error"]
    assert "match_flor" in error
    assert "recall_limit = 3" in daemon.call("policy.get")["toml"]  # the previous one stays
    status = daemon.cli("status")
    assert "POLICY NOT APPLIED" in status.stdout and "match_flor" in status.stdout

    daemon.policy.write_text("recall_limit = 5\n")
    eventually(lambda: daemon.call("daemon.status")["policy"]["error"] is None)
    assert "recall_limit = 5" in daemon.call("policy.get")["toml"]


def test_sighup_reloads_the_policy(daemon: Running) -> None:
    daemon.policy.write_text("recall_limit = 4\n")
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGHUP)
    eventually(lambda: "recall_limit = 4" in daemon.call("policy.get")["toml"])


def test_an_invalid_policy_at_start_leaves_the_defaults_and_says_so(short_tmp: Path) -> None:
    running = Running(short_tmp)
    running.policy.write_text("bogus = true\n")
    running.start()
    try:
        status = running.call("daemon.status")
        assert "bogus" in status["policy"]["error"]
        assert "recall_limit = 8" in running.call("policy.get")["toml"]
    finally:
        running.stop()


def test_sigterm_stops_cleanly_and_removes_the_socket(daemon: Running) -> None:
    daemon.call("memory.remember", content="before the stop")
    assert daemon.kill(signal.SIGTERM) == 0
    assert not daemon.socket.exists()
    daemon.start()
    assert daemon.call("memory.recall", query="before the stop")["results"]


def test_a_stale_socket_file_is_replaced(short_tmp: Path) -> None:
    running = Running(short_tmp)
    running.socket.parent.mkdir(mode=0o700, parents=True)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(running.socket))
    stale.close()  # the file stays, nobody listens
    running.start()
    try:
        assert running.call("daemon.status")["pid"] > 0
    finally:
        running.stop()


def test_a_second_daemon_on_the_same_socket_refuses_to_start(daemon: Running) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "hikmahd", *daemon.flags()],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1
    assert "another hikmahd" in second.stderr
    assert daemon.call("daemon.status")["pid"] > 0


def test_the_cli_starts_a_daemon_when_none_answers(short_tmp: Path) -> None:
    socket_path = short_tmp / "auto" / "hikmahd.sock"
    data = short_tmp / "data"
    base = [
        sys.executable,
        "-m",
        "hikmah_cli",
        "--socket",
        str(socket_path),
        "--data-dir",
        str(data),
    ]
    refused = subprocess.run(
        [*base, "--no-autostart", "status"], capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 5
    assert "no hikmahd answers" in refused.stderr
    started = subprocess.run(
        [*base, "remember", "autostarted memory"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    try:
        assert started.returncode == 0, started.stderr
        recalled = subprocess.run(
            [*base, "recall", "autostarted"], capture_output=True, text=True, timeout=30
        )
        assert "autostarted memory" in recalled.stdout
        assert (data / "lmdb" / "data.mdb").exists()
    finally:
        subprocess.run([*base, "--no-autostart", "status"], capture_output=True, timeout=30)
        pid = int((data / "hikmahd.lock").read_text())
        subprocess.run(["kill", str(pid)], check=False)
        eventually(lambda: not socket_path.exists())


@pytest.mark.skipif(
    not shutil.which("systemd-socket-activate"), reason="systemd tools not installed"
)
def test_socket_activation(short_tmp: Path) -> None:
    running = Running(short_tmp)
    running.socket.parent.mkdir(mode=0o700, parents=True)
    notify = short_tmp / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify))
    listener.settimeout(30)
    log = (short_tmp / "activated.log").open("wb")
    activator = subprocess.Popen(
        [
            "systemd-socket-activate",
            "-l",
            str(running.socket),
            "-E",
            f"NOTIFY_SOCKET={notify}",
            sys.executable,
            "-m",
            "hikmahd",
            "--data-dir",
            str(running.data),
            "--policy",
            str(running.policy),
            "--socket",
            str(short_tmp / "unused.sock"),
        ],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        wait_for_socket(running.socket, activator, short_tmp / "activated.log")
        # The first connection starts the daemon on the inherited socket.
        assert running.call("memory.remember", content="activated")["trace"]["id"]
        assert listener.recv(100) == b"READY=1"
        assert not (short_tmp / "unused.sock").exists()
        assert running.call("daemon.status")["socket"] == str(running.socket)
    finally:
        activator.send_signal(signal.SIGTERM)
        activator.wait(timeout=20)
        listener.close()
        log.close()


def test_a_reload_the_moment_the_socket_appears_does_not_kill_the_daemon(
    short_tmp: Path,
) -> None:
    # Found as a flaky SIGHUP test: the socket existed a moment before the daemon caught
    # SIGHUP, whose default action ends the process.
    running = Running(short_tmp)
    with running.log.open("ab") as log:
        running.process = subprocess.Popen(
            [sys.executable, "-m", "hikmahd", *running.flags()],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while not running.socket.exists():
            assert running.process.poll() is None, running.log.read_text()
            assert time.monotonic() < deadline, "no socket"
            time.sleep(0.0002)
        running.process.send_signal(signal.SIGHUP)
        wait_for_socket(running.socket, running.process, running.log)
        assert running.call("daemon.status")["pid"] == running.process.pid
    finally:
        running.stop()


def test_the_vault_is_not_switched_on_by_a_reload(short_tmp: Path) -> None:
    """The keys are fetched when the store opens: a running daemon says so and keeps
    refusing sensitive traces, rather than claim a vault it does not have."""
    running = Running(short_tmp).start()
    try:
        running.policy.write_text("allow_sensitive_persistence = true\n[vault]\nenabled = true\n")
        assert running.process is not None
        running.process.send_signal(signal.SIGHUP)
        eventually(lambda: running.call("daemon.status")["policy"]["error"] is not None)
        assert (
            "takes effect when hikmahd restarts" in running.call("daemon.status")["policy"]["error"]
        )
        with running.connect() as conn:
            reply = conn.request("memory.remember", content="diagnosis", privacy="sensitive")
        assert reply["error"]["data"]["reason"] == "policy"
    finally:
        running.stop()


def test_the_vault_without_a_usable_keyring_stops_the_start_with_what_to_do(
    short_tmp: Path,
) -> None:
    """No D-Bus session and no backend named: keyring has only its failing backend here."""
    env = clean_env(XDG_CONFIG_HOME=str(short_tmp / "config"))
    for name in ("DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND"):
        env.pop(name, None)
    running = Running(short_tmp, env=env)
    running.policy.write_text("[vault]\nenabled = true\n")
    with pytest.raises(RuntimeError) as failed:
        running.start()
    message = str(failed.value)
    assert "hikmahd exited 1" in message
    assert "keyring" in message and "gnome-keyring-daemon" in message
