"""``hikmah setup systemd``: the user units it writes verify and run this install's
hikmahd; it replaces only what it wrote, and ``--remove`` takes out exactly that."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hikmah_cli.setup import SetupError, setup_systemd

HIKMAHD = Path(sys.executable).with_name("hikmahd").resolve()
ANALYZE = shutil.which("systemd-analyze")
UNITS = ("hikmahd.socket", "hikmahd.service")


def setup(home: Path, *flags: str, **moved: str) -> subprocess.CompletedProcess[str]:
    """The real CLI with this HOME and ``XDG_CONFIG_HOME`` under it (and ``moved``:
    HIKMAH_* variables of this shell)."""
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "cfg")}
    for name in ("HIKMAH_SOCKET", "HIKMAH_DATA_DIR", "HIKMAH_POLICY"):
        env.pop(name, None)
    env.update(moved)
    return subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "setup", "systemd", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def unit_dir(home: Path) -> Path:
    return home / "cfg" / "systemd" / "user"


def contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def verify(directory: Path, tmp_path: Path) -> None:
    """``systemd-analyze --user verify`` of the units in ``directory``: it also checks
    that the executable of ExecStart= exists and is one."""
    if ANALYZE is None:
        pytest.skip("systemd tools not installed")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    result = subprocess.run(
        [ANALYZE, "--user", "verify", *(str(directory / name) for name in UNITS)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    assert result.returncode == 0, result.stderr
    assert "Unknown" not in result.stderr, result.stderr


def test_setup_writes_units_that_run_this_installs_hikmahd(tmp_path: Path) -> None:
    assert HIKMAHD.is_file()
    done = setup(tmp_path)
    assert done.returncode == 0, done.stderr
    shown = "~/cfg/systemd/user"
    assert f"created {shown}/hikmahd.socket\ncreated {shown}/hikmahd.service\n" in done.stdout
    assert "systemctl --user daemon-reload" in done.stdout
    assert "stop && systemctl --user enable --now hikmahd.socket" in done.stdout
    service = (unit_dir(tmp_path) / "hikmahd.service").read_text()
    assert f"\nExecStart={HIKMAHD}\n" in service
    assert "\nType=notify\n" in service
    socket = (unit_dir(tmp_path) / "hikmahd.socket").read_text()
    assert "\nListenStream=%t/hikmah/hikmahd.sock\n" in socket
    verify(unit_dir(tmp_path), tmp_path)


def test_setup_again_changes_nothing_and_says_so(tmp_path: Path) -> None:
    assert setup(tmp_path).returncode == 0
    before = contents(unit_dir(tmp_path))
    again = setup(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already set up: ") == 2, again.stdout
    assert contents(unit_dir(tmp_path)) == before


def test_what_the_units_do_not_see_is_named(tmp_path: Path) -> None:
    done = setup(tmp_path, HIKMAH_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert "Note: HIKMAH_DATA_DIR set here is not seen by systemd's units" in done.stdout
    assert "--no-mcp is for an agent host, not systemd" in setup(tmp_path, "--no-mcp").stderr


def test_another_install_replaces_the_units_setup_wrote(tmp_path: Path) -> None:
    setup_systemd(unit_dir(tmp_path), home=tmp_path, hikmahd="/opt/old venv/bin/hikmahd")
    old = (unit_dir(tmp_path) / "hikmahd.service").read_text()
    assert '\nExecStart="/opt/old venv/bin/hikmahd"\n' in old  # quoted: the space
    done = setup(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "already set up: ~/cfg/systemd/user/hikmahd.socket" in done.stdout
    assert "updated ~/cfg/systemd/user/hikmahd.service" in done.stdout
    assert f"\nExecStart={HIKMAHD}\n" in (unit_dir(tmp_path) / "hikmahd.service").read_text()


def test_remove_takes_out_exactly_what_setup_wrote(tmp_path: Path) -> None:
    assert setup(tmp_path).returncode == 0
    mine = unit_dir(tmp_path) / "other.service"
    mine.write_text("[Service]\nExecStart=/bin/true\n")
    removed = setup(tmp_path, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.count("deleted ~/cfg/systemd/user/hikmahd.") == 2, removed.stdout
    assert "systemctl --user daemon-reload" in removed.stdout
    assert sorted(p.name for p in unit_dir(tmp_path).iterdir()) == ["other.service"]
    again = setup(tmp_path, "--remove")
    assert again.returncode == 0 and again.stdout.count("nothing to remove: ") == 2, again


def test_a_unit_copied_by_hand_is_neither_replaced_nor_removed(tmp_path: Path) -> None:
    unit_dir(tmp_path).mkdir(parents=True)
    copied = unit_dir(tmp_path) / "hikmahd.service"
    copied.write_text("[Service]\nExecStart=%h/.local/bin/hikmahd\n")
    before = contents(unit_dir(tmp_path))
    refused = setup(tmp_path)
    assert refused.returncode == 1
    assert "hikmahd.service: was not written by hikmah setup" in refused.stderr
    assert "nothing was changed" in refused.stderr
    assert contents(unit_dir(tmp_path)) == before  # the socket unit was not written either
    removed = setup(tmp_path, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert "it was not written by hikmah setup; left alone" in removed.stdout
    assert contents(unit_dir(tmp_path)) == before


def test_a_unit_edited_since_is_neither_replaced_nor_removed(tmp_path: Path) -> None:
    assert setup(tmp_path).returncode == 0
    service = unit_dir(tmp_path) / "hikmahd.service"
    service.write_text(service.read_text() + "Environment=HIKMAH_DATA_DIR=/data\n")
    before = contents(unit_dir(tmp_path))
    refused = setup(tmp_path)
    assert refused.returncode == 1
    assert "was edited since hikmah setup wrote it" in refused.stderr
    assert "systemctl --user edit hikmahd.service" in refused.stderr
    removed = setup(tmp_path, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert "deleted ~/cfg/systemd/user/hikmahd.socket" in removed.stdout
    assert "it was edited since hikmah setup wrote it; left alone" in removed.stdout
    assert contents(unit_dir(tmp_path)) == {"hikmahd.service": before["hikmahd.service"]}


def test_enabled_units_are_not_removed(tmp_path: Path) -> None:
    assert setup(tmp_path).returncode == 0
    wants = unit_dir(tmp_path) / "sockets.target.wants"
    wants.mkdir()
    (wants / "hikmahd.socket").symlink_to(unit_dir(tmp_path) / "hikmahd.socket")  # as enable does
    before = contents(unit_dir(tmp_path))
    refused = setup(tmp_path, "--remove")
    assert refused.returncode == 1
    assert "is enabled: first `systemctl --user disable --now" in refused.stderr
    assert contents(unit_dir(tmp_path)) == before


def test_a_path_systemd_would_refuse_is_refused_first(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="holds a quote"):
        setup_systemd(unit_dir(tmp_path), home=tmp_path, hikmahd='/opt/"odd"/hikmahd')
    assert not unit_dir(tmp_path).exists()


def test_a_path_with_a_space_and_a_percent_sign_verifies(tmp_path: Path) -> None:
    odd = tmp_path / "my venv" / "100%" / "hikmahd"
    odd.parent.mkdir(parents=True)
    odd.write_text("#!/bin/sh\n")
    odd.chmod(0o755)
    setup_systemd(unit_dir(tmp_path), home=tmp_path, hikmahd=str(odd))
    service = (unit_dir(tmp_path) / "hikmahd.service").read_text()
    assert f'\nExecStart="{tmp_path}/my venv/100%%/hikmahd"\n' in service
    verify(unit_dir(tmp_path), tmp_path)
