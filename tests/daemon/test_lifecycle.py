"""Starting, stopping, reloading: autostart, socket activation, stale sockets, policy."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.sockets import Conn, wait_for_socket


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


def test_hikmah_stop_commits_the_queued_writes_and_waits_for_the_exit(daemon: Running) -> None:
    acknowledged: list[str] = []
    enough = threading.Event()

    def write(writer: int) -> None:
        """Write until the daemon stops answering; keep the ids it acknowledged."""
        with Conn(daemon.socket) as conn:
            for number in range(100_000):
                try:
                    reply = conn.request(
                        "memory.remember", content=f"writer {writer} note {number}"
                    )
                except (EOFError, OSError):
                    return
                if "error" in reply:
                    assert reply["error"]["data"]["reason"] == "unavailable", reply
                    return
                acknowledged.append(reply["result"]["trace"]["id"])
                if len(acknowledged) >= 64:
                    enough.set()

    writers = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in writers:
        thread.start()
    assert enough.wait(30)
    stopped = daemon.cli("stop", env=clean_env())
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("hikmahd stopped (pid "), stopped.stdout
    assert "socket unit" not in stopped.stdout  # it made its own socket
    process = daemon.process
    assert process is not None
    assert process.poll() == 0  # gone when the CLI said so, and cleanly
    assert not daemon.socket.exists()
    assert "stopping at the request of pid" in daemon.log.read_text()
    for thread in writers:
        thread.join(30)
    written = len(acknowledged)
    daemon.start()
    with daemon.connect() as conn:
        for trace_id in acknowledged:
            assert conn.call("memory.show", id=trace_id)["trace"]["id"] == trace_id
        assert conn.call("ledger.verify")["ok"]
    assert written > 64  # writes were still coming when it stopped


def test_hikmah_stop_without_a_daemon_says_so_and_starts_none(short_tmp: Path) -> None:
    running = Running(short_tmp)
    command = [sys.executable, "-m", "hikmah_cli", *running.flags(), "stop"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"no hikmahd runs at {running.socket}\n"
    assert not running.socket.exists() and not running.data.exists()  # none was started
    as_json = subprocess.run(
        [*command[:-1], "--json", "stop"], capture_output=True, text=True, timeout=60
    )
    assert (as_json.returncode, as_json.stdout) == (0, '{"was_running": false}\n')


def test_agent_sessions_may_not_stop_the_daemon(daemon: Running) -> None:
    detected = daemon.cli("stop", env=clean_env(CLAUDECODE="1"))
    assert detected.returncode == 3
    assert "stop the daemon needs a person" in detected.stderr
    assert "detected claude-code agent session" in detected.stderr
    as_json = daemon.cli("--json", "stop", env=clean_env(CODEX_THREAD_ID="t-1"))
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["error"]["reason"] == "agent_restricted"
    with daemon.connect() as conn:
        conn.call("session.restrict", host="claude-code", session_id="abc-1")
        refused = conn.request("daemon.stop")
    assert refused["error"]["data"]["reason"] == "agent_restricted"
    assert "stop the daemon needs a person" in refused["error"]["message"]
    assert daemon.process is not None and daemon.process.poll() is None
    assert daemon.call("daemon.status")["pid"] == daemon.process.pid


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
            "-E",
            "PYTHONPATH",  # the daemon under test, as this process imports it
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
        # hikmah stop says what brings it back: systemd's socket, not the CLI.
        stopped = running.cli("stop", env=clean_env())
        assert stopped.returncode == 0, stopped.stderr
        assert "systemctl --user stop hikmahd.socket hikmahd.service" in stopped.stdout
        assert activator.wait(timeout=20) == 0  # the daemon it became exited cleanly
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


def test_an_autostarted_daemon_belongs_to_no_client_tree(short_tmp: Path) -> None:
    # A host that ends its MCP servers' whole process tree when it exits (OpenCode)
    # must not take the daemon its server started with it.
    data, socket_path = short_tmp / "data", short_tmp / "run" / "hikmahd.sock"
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from hikmah_client.connection import connect\n"
            "args = ['--data-dir', sys.argv[2]]\n"
            "connect(Path(sys.argv[1]), autostart=True, daemon_args=args).close()\n"
            "print('started', flush=True)\n"
            "time.sleep(60)\n",
            str(socket_path), str(data),
        ],
        stdout=subprocess.PIPE, text=True, env=clean_env(),
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "started\n"
        pid = int((data / "hikmahd.lock").read_text())
        below = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(holder.pid)], capture_output=True, text=True
        ).stdout.split()
        assert str(pid) not in below  # not the client's child: init's
        holder.kill()  # what a host does to its server's tree
        holder.wait()
        with Conn(socket_path) as conn:
            assert conn.call("daemon.status")["pid"] == pid
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
        subprocess.run(["kill", str(int((data / "hikmahd.lock").read_text()))], check=False)
        eventually(lambda: not socket_path.exists())
