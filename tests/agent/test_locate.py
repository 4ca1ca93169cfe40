"""Where hikmah-agent looks for the person's daemon when its host passed it few variables
(Codex passes HOME, PATH, USER and a few more), and that it never starts a second daemon
for a data directory a running one holds."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from hikmah_agent.locate import agent_socket, lock_holder, login_runtime_dir
from tests.harness.daemon import Running

from .test_mcp_server import agent, error

UID = os.getuid()


def runtime(root: Path, mode: int = 0o700) -> Path:
    directory = root / str(UID)
    directory.mkdir(mode=mode)
    directory.chmod(mode)
    return directory


def listening(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    return listener


def test_what_the_host_passes_decides_as_for_the_cli(tmp_path: Path) -> None:
    runtime(tmp_path)
    found = {
        "flag": agent_socket("/s/flag.sock", {"HIKMAH_SOCKET": "/s/env.sock"}, tmp_path),
        "env": agent_socket(None, {"HIKMAH_SOCKET": "/s/env.sock"}, tmp_path),
        "xdg": agent_socket(None, {"XDG_RUNTIME_DIR": "/xdg"}, tmp_path),
    }
    assert found == {
        "flag": Path("/s/flag.sock"),
        "env": Path("/s/env.sock"),
        "xdg": Path("/xdg/hikmah/hikmahd.sock"),
    }


def test_without_xdg_runtime_dir_the_login_runtime_dir_is_used(tmp_path: Path) -> None:
    # Where the systemd socket unit and the CLI of a login session put the socket,
    # whether or not a daemon listens there yet (socket activation starts it on connect).
    login = runtime(tmp_path)
    fallback = tmp_path / "tmp" / "hikmahd.sock"
    assert agent_socket(None, {}, tmp_path, fallback) == login / "hikmah" / "hikmahd.sock"


def test_a_socket_only_at_the_tmp_fallback_is_the_one_used(tmp_path: Path) -> None:
    login = runtime(tmp_path)
    fallback = tmp_path / "tmp" / "hikmahd.sock"
    with listening(fallback):
        assert agent_socket(None, {}, tmp_path, fallback) == fallback
        with listening(login / "hikmah" / "hikmahd.sock"):
            assert agent_socket(None, {}, tmp_path, fallback) == login / "hikmah" / "hikmahd.sock"


@pytest.mark.parametrize("mode", [0o750, 0o755, 0o701])
def test_a_runtime_dir_others_can_enter_is_not_trusted(tmp_path: Path, mode: int) -> None:
    runtime(tmp_path, mode)
    fallback = tmp_path / "tmp" / "hikmahd.sock"
    assert login_runtime_dir(UID, tmp_path) is None
    assert agent_socket(None, {}, tmp_path, fallback) == fallback


def test_a_symlinked_or_missing_runtime_dir_is_not_trusted(tmp_path: Path) -> None:
    assert login_runtime_dir(UID, tmp_path) is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / str(UID)).symlink_to(elsewhere)
    assert login_runtime_dir(UID, tmp_path) is None


def test_the_lock_holder_is_the_running_daemon(daemon: Running, tmp_path: Path) -> None:
    assert daemon.process is not None
    assert lock_holder(daemon.data) == daemon.process.pid
    assert lock_holder(tmp_path) is None
    daemon.stop()
    assert lock_holder(daemon.data) is None


async def test_no_second_daemon_for_a_data_dir_in_use(daemon: Running, short_tmp: Path) -> None:
    """The issue's failing case: the agent does not find the socket the person's daemon
    listens on. It says so instead of starting a daemon that would fail on the lock."""
    elsewhere = short_tmp / "elsewhere" / "hikmahd.sock"
    args = ["--socket", str(elsewhere), "--data-dir", str(daemon.data)]
    async with agent(daemon, args=args) as client:
        refused = error(await client.call_tool("recall", {"query": "deploy"}))
    assert daemon.process is not None
    assert f"pid {daemon.process.pid}" in refused and "does not answer" in refused
    assert "hikmah setup" in refused
    assert not elsewhere.parent.exists()  # nothing was started there, not even its log
