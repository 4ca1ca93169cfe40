"""Peer identity: same uid only, and agent sessions detected from the process tree."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys

import pytest

from hikmah.access.principal import USER_CONFIGURATION
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

NOBODY = 65534
PROBE = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"jsonrpc":"2.0","method":"daemon.status","id":1}\\n')
except (BrokenPipeError, ConnectionResetError):
    pass  # the refusal may have been sent and the connection closed already
data = b""
while not data.endswith(b"\\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode().strip())
"""


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another uid needs root")
def test_a_peer_of_another_uid_is_refused_even_with_open_permissions(daemon: Running) -> None:
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed for this test"
    for path in (daemon.root, daemon.socket.parent):
        os.chmod(path, 0o755)
    os.chmod(daemon.socket, 0o777)  # loosened on purpose: the uid check must still hold
    result = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            PROBE,
            str(daemon.socket),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert '"reason":"forbidden"' in result.stdout
    assert '"pid"' not in result.stdout
    assert daemon.call("daemon.status")["pid"] > 0


def test_socket_and_directory_modes(daemon: Running) -> None:
    assert daemon.socket.stat().st_mode & 0o777 == 0o600
    assert daemon.socket.parent.stat().st_mode & 0o777 == 0o700


# Each detected variable, with the host it names.
DETECTED = [
    ("CLAUDECODE", "1", "claude-code"),
    ("CLAUDE_CODE_ENTRYPOINT", "cli", "claude-code"),
    ("CLAUDE_CODE_SESSION_ID", "abc", "claude-code"),
    ("CODEX_SANDBOX", "seatbelt", "codex"),
    ("CODEX_SESSION_ID", "c-1", "codex"),
    ("CURSOR_TRACE_ID", "t-9", "cursor"),
    ("GEMINI_CLI", "1", "gemini-cli"),
    ("OPENCODE", "1", "opencode"),
    ("OPENCODE_PID", "4242", "opencode"),
    ("AI_AGENT", "my-bot", "ai-agent"),
]


@pytest.mark.parametrize(("name", "value", "host"), DETECTED)
def test_agent_sessions_are_stamped_and_cannot_verify(
    daemon: Running, name: str, value: str, host: str
) -> None:
    env = clean_env(**{name: value})
    written = daemon.cli("remember", "--json", "agent note", env=env)
    assert written.returncode == 0, written.stderr
    assert f'"locator": "agent-session:{host}:' in written.stdout
    refused = daemon.cli("remember", "agent says it is true", "--verified", env=env)
    assert refused.returncode == 3
    assert name in refused.stderr


@pytest.mark.parametrize("name", sorted(USER_CONFIGURATION))
def test_person_settings_do_not_count(daemon: Running, name: str) -> None:
    result = daemon.cli("remember", "a person's note", "--verified", env=clean_env(**{name: "x1"}))
    assert result.returncode == 0, result.stderr


def test_blank_values_do_not_count(daemon: Running) -> None:
    result = daemon.cli("remember", "blank", "--verified", env=clean_env(CLAUDECODE=" "))
    assert result.returncode == 0, result.stderr


def test_env_dash_i_inside_an_agent_session_is_still_an_agent(daemon: Running) -> None:
    # The agent's shell (the session leader here) has the variable; the client wipes its own.
    command = (
        f"env -i {sys.executable} -m hikmah_cli --socket {daemon.socket} --no-autostart"
        " remember 'I verified this myself' --verified; echo exit=$?"
    )
    result = subprocess.run(
        ["sh", "-c", command],
        env=clean_env(CLAUDECODE="1"),
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert "exit=3" in result.stdout, result.stdout + result.stderr
    assert "CLAUDECODE" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["verify-ledger", "--accept-tail"],
        ["verify-ledger", "--reset-head"],
    ],
)
def test_agents_cannot_move_the_head(daemon: Running, args: list[str]) -> None:
    result = daemon.cli(*args, env=clean_env(CODEX_SESSION_ID="s1"))
    assert result.returncode == 3
    assert "CODEX_SESSION_ID" in result.stderr


def test_agents_cannot_purge(daemon: Running) -> None:
    trace_id = daemon.call("memory.remember", content="to forget")["trace"]["id"]
    agent = daemon.cli(
        "purge", "--id", trace_id, "--reason", "cleanup", env=clean_env(AI_AGENT="x")
    )
    assert agent.returncode == 3
    person = daemon.cli("purge", "--id", trace_id, "--reason", "cleanup", env=clean_env())
    assert person.returncode == 0, person.stderr


HAND_OVER = """
import socket, sys
theirs = socket.socket(fileno=int(sys.argv[2]))
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
# Served once (accepted and identified while the child lives), then handed over.
s.sendall(b'{"jsonrpc":"2.0","method":"daemon.status","id":0}\\n')
assert b'"result"' in s.makefile("rb").readline()
socket.send_fds(theirs, [b"x"], [s.fileno()])
"""


def handed_over(daemon: Running) -> socket.socket:
    """A connection a child process opened, handed to this one (SCM_RIGHTS), and the
    child gone: what an agent does to wait for its pid to come back as the person's."""
    mine, theirs = socket.socketpair()
    with mine, theirs:
        child = subprocess.run(
            [sys.executable, "-c", HAND_OVER, str(daemon.socket), str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            timeout=30,
        )
        assert child.returncode == 0
        _, (fd,), _, _ = socket.recv_fds(mine, 16, 1)
    return socket.socket(fileno=fd)


def test_a_connection_outliving_the_process_that_opened_it_is_not_served(
    daemon: Running,
) -> None:
    conn = handed_over(daemon)
    with conn:
        conn.settimeout(10)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # closed already
            conn.sendall(
                b'{"jsonrpc":"2.0","method":"daemon.status","id":1}\n'
                b'{"jsonrpc":"2.0","method":"memory.remember","params":{"content":'
                b'"Always deploy on Fridays","verified":true},"id":2}\n'
            )
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := conn.recv(65536):
                data += chunk
    # Closed when its opener exited (or refused, if the exit is seen at the request).
    assert b'"result"' not in data
    assert data == b"" or b"has exited" in data
    found = daemon.call("memory.recall", query="deploy fridays")["results"]
    assert found == []  # nothing was written


def test_a_process_keeps_its_connection_while_it_lives(daemon: Running) -> None:
    # The same hand-over within one process's life: a long-lived client is served.
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(daemon.socket))
    with s:
        s.sendall(b'{"jsonrpc":"2.0","method":"daemon.status","id":1}\n')
        reply = s.makefile("rb").readline()
    assert b'"result"' in reply


def test_a_process_that_connects_again_and_again_is_always_served(daemon: Running) -> None:
    # A connection its client closed ends at once: it never counts against the process's
    # limit of connections held while the process lives on.
    for _ in range(200):
        with daemon.connect() as conn:
            assert conn.call("daemon.status")["pid"] > 0
