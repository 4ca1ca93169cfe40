"""``scripts/on-path`` (the end of ``scripts/start``): how to run ``hikmah`` by its name,
symlinks in ~/.local/bin only when a person at a terminal says yes, never over a file
it did not make, and the same answer when run again."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "on-path"


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A virtualenv's bin directory, as far as the script looks at it."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("hikmah", "hikmahd", "activate"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def env_of(home: Path, *path: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": ":".join([*map(str, path), "/usr/bin", "/bin"])}


def run(venv: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """No terminal, as in CI: stdin is /dev/null."""
    return subprocess.run(
        [str(SCRIPT), str(venv)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


def at_terminal(venv: Path, env: dict[str, str], typed: str) -> tuple[int, str]:
    """Run with stdin a pty where ``typed`` is typed; the exit code and what it printed."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [str(SCRIPT), str(venv)], stdin=follower, stdout=follower, stderr=follower, env=env
    ) as process:
        os.close(follower)
        os.write(leader, typed.encode())
        process.wait(timeout=30)
    shown = b""
    with contextlib.suppress(OSError):  # EIO: every end of the terminal is closed
        while chunk := os.read(leader, 4096):
            shown += chunk
    os.close(leader)
    return process.returncode, shown.decode()


def test_without_a_terminal_it_only_says_how(tmp_path: Path, venv: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run(venv, env_of(home))
    assert done.returncode == 0, done.stderr
    assert f"source {venv}/activate" in done.stdout
    assert f"ln -s {venv}/hikmah {venv}/hikmahd ~/.local/bin/" in done.stdout
    assert "[y/N]" not in done.stdout + done.stderr
    assert list(home.iterdir()) == []


def test_at_a_terminal_no_is_the_default(tmp_path: Path, venv: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    status, shown = at_terminal(venv, env_of(home), "\n")
    assert status == 0, shown
    assert "Link hikmah hikmahd into" in shown
    assert not (home / ".local").exists()


def test_yes_links_both_and_a_second_run_says_they_are(tmp_path: Path, venv: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    status, shown = at_terminal(venv, env_of(home), "y\n")
    assert status == 0, shown
    local_bin = home / ".local" / "bin"
    for name in ("hikmah", "hikmahd"):
        assert os.readlink(local_bin / name) == str(venv / name)
    assert f"{local_bin} is not on your PATH" in shown
    again = run(venv, env_of(home))
    assert again.returncode == 0 and "hikmah is linked into" in again.stdout, again
    on_path = run(venv, env_of(home, local_bin))
    assert on_path.stdout == f"hikmah is on your PATH: {local_bin}/hikmah\n"
    status, shown = at_terminal(venv, env_of(home, local_bin), "y\n")
    assert status == 0 and "[y/N]" not in shown, shown


def test_a_file_it_did_not_make_is_left_alone(tmp_path: Path, venv: Path) -> None:
    home = tmp_path / "home"
    local_bin = home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "hikmahd").write_text("#!/bin/sh\necho mine\n")
    status, shown = at_terminal(venv, env_of(home), "y\n")
    assert status == 0, shown
    assert "is not this install's: left alone" in shown and "[y/N]" not in shown
    assert (local_bin / "hikmahd").read_text() == "#!/bin/sh\necho mine\n"
    assert not (local_bin / "hikmah").exists()


def test_another_hikmah_on_path_is_named(tmp_path: Path, venv: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "hikmah").write_text("#!/bin/sh\n")
    (other / "hikmah").chmod(0o755)
    done = run(venv, env_of(home, other))
    assert f"The hikmah on your PATH is {other}/hikmah, not this install's." in done.stdout


def test_a_directory_without_hikmah_is_refused(tmp_path: Path) -> None:
    done = run(tmp_path, env_of(tmp_path))
    assert done.returncode == 1 and "run scripts/start first" in done.stderr
