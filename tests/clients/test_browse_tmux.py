"""``hikmah browse`` in a real terminal (tmux), as a person runs it: the installed CLI,
keys sent with ``send-keys``, the screen read with ``capture-pane``, and a correction
written in ``$EDITOR``, which needs a terminal to hand over (the headless pilot has none)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.browse_world import seed
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")
if shutil.which("tmux") is None:
    pytest.skip("tmux is not installed (apt-get install tmux)", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 20.0


class Terminal:
    """An 80×24 tmux session on a private server."""

    def __init__(self, root: Path) -> None:
        self.server = ["tmux", "-S", str(root / "tmux.sock")]

    def start(self, command: str, env: dict[str, str]) -> None:
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        shell = f"cd {shlex.quote(str(REPO))} && env {exports} {command}; echo EXIT $?; sleep 60"
        subprocess.run(
            [*self.server, "new-session", "-d", "-x", "80", "-y", "24", shell],
            check=True, env=clean_env(), timeout=20,
        )  # fmt: skip

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run([*self.server, "send-keys", key], check=True, timeout=10)
            time.sleep(0.15)  # an Escape followed at once by a key would read as Alt+key

    def screen(self) -> str:
        done = subprocess.run(
            [*self.server, "capture-pane", "-p"], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.server, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def terminal(short_tmp: Path) -> Iterator[Terminal]:
    term = Terminal(short_tmp)
    try:
        yield term
    finally:
        term.close()


def test_correct_in_editor_in_a_real_terminal(
    daemon: Running, terminal: Terminal, short_tmp: Path
) -> None:
    note = seed(daemon)["note"]
    editor = short_tmp / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "The office kettle is descaled every week\\n" > "$1"\n')
    editor.chmod(0o700)
    hikmah = Path(sys.executable).with_name("hikmah")
    cli = str(hikmah) if hikmah.exists() else f"{sys.executable} -m hikmah_cli"
    terminal.start(
        f"{cli} --socket {daemon.socket} --no-autostart browse kettle",
        {"EDITOR": str(editor), "TERM": "xterm-256color", "PATH": os.environ["PATH"]},
    )
    terminal.wait_for("● live")
    terminal.wait_for("The kettle in the office")
    terminal.keys("Down", "Enter")
    terminal.wait_for(note["id"])
    terminal.keys("e")  # the editor runs, then the dialog shows what it left
    terminal.wait_for("every week")
    terminal.keys("C-s")
    screen = terminal.wait_for("verified ✓")
    assert "The office kettle is descaled every week" in screen
    assert f"supersedes {note['id']}" in screen
    terminal.keys("q")
    terminal.wait_for("EXIT 0")
    old = daemon.call("memory.show", id=note["id"])
    assert old["status"] == "superseded"
    new = daemon.call("memory.show", id=old["superseded_by"])["trace"]
    assert new["content"] == "The office kettle is descaled every week"
    assert new["provenance"]["verified"] is True


def test_an_unreachable_daemon_is_reported_before_the_screen(
    terminal: Terminal, short_tmp: Path
) -> None:
    terminal.start(
        f"{sys.executable} -m hikmah_cli --socket {short_tmp / 'none.sock'} --no-autostart browse",
        {"TERM": "xterm-256color", "PATH": os.environ["PATH"]},
    )
    screen = terminal.wait_for("EXIT 5")
    assert "no hikmahd answers at" in screen
