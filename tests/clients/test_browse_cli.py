"""``hikmah browse`` from the CLI's side: without the extra, without a terminal, as
``python -m hikmah_browse``, and never loaded by other commands nor loading the store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from tests.harness.daemon import Running

REPO = Path(__file__).resolve().parents[2]


def _cli(
    *args: str, python: list[str] | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(python or [sys.executable]), "-m", "hikmah_cli", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_without_the_extra_browse_says_how_to_install_it(short_tmp: Path) -> None:
    # -S: no site-packages, so no textual (nor anything else): the CLI is stdlib only.
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'clients'}"}
    done = _cli("--socket", str(short_tmp / "s"), "browse", python=[sys.executable, "-S"], env=env)
    assert done.returncode == 1
    assert "pip install 'hikmah[browse]'" in done.stderr
    assert done.stdout == ""


def test_browse_needs_a_terminal(daemon: Running) -> None:
    done = _cli("--socket", str(daemon.socket), "--no-autostart", "browse")
    assert done.returncode == 2
    assert "needs a terminal" in done.stderr


@pytest.mark.parametrize(
    ("args", "python", "code"),
    [
        (["--help"], [sys.executable], 0),
        (["--socket", "none.sock", "--bogus"], [sys.executable], 2),
        (["--socket", "none.sock", "--no-autostart", "a query"], [sys.executable], 2),
        (["--socket", "none.sock"], [sys.executable, "-S"], 1),  # no textual
    ],
)
def test_python_m_hikmah_browse_is_hikmah_browse(
    short_tmp: Path, args: list[str], python: list[str], code: int
) -> None:
    # The browser starts itself, without the CLI, yet as `hikmah browse` does.
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'clients'}"}

    def run(*entry: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*python, "-m", *entry, *args], capture_output=True, text=True, timeout=60,
            cwd=short_tmp, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    cli, browse = run("hikmah_cli", "browse"), run("hikmah_browse")
    assert (browse.returncode, browse.stdout, browse.stderr) == (code, cli.stdout, cli.stderr)
    assert cli.returncode == code


def test_other_commands_never_load_the_browser(daemon: Running) -> None:
    done = _cli(
        "--socket", str(daemon.socket), "status", python=[sys.executable, "-X", "importtime"]
    )
    assert done.returncode == 0, done.stderr
    modules = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "hikmah_client.connection" in modules  # the measurement sees the CLI's own imports
    loaded = {
        m for m in modules if m.split(".")[0] in ("textual", "rich", "hikmah_browse", "msgspec")
    }
    assert loaded == set()


def test_the_browser_never_imports_the_kernels_store() -> None:
    # A thin client: the kernel's wire types only (trace, ledger, proposal), never LMDB.
    code = "import sys, hikmah_browse.app; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.split())
    assert "hikmah_browse.app" in modules and "hikmah.model.trace" in modules
    assert not modules & {
        "lmdb",
        "hikmah.store.core",
        "hikmah.index.snapshot",
        "hikmah.index.layout",
        "numpy",
    }
