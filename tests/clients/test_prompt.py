"""Where the passphrase comes from: pinentry over Assuan in a desktop session (the real
Debian ``pinentry-tty``, the flavour that needs no display server to be tested), the
terminal otherwise, and never standard input."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.terminals import PtyShell

PASSPHRASE = "correct horse battery"


def test_in_a_desktop_session_pinentry_asks_over_assuan(daemon: Running) -> None:
    found = shutil.which("pinentry-tty")
    if found is None:
        pytest.skip("pinentry-tty (Debian's pinentry-tty) is not installed")
    pins = daemon.root / "pins"
    pins.mkdir()
    (pins / "pinentry").symlink_to(found)  # as Debian's alternatives link it
    bin_dir = Path(sys.executable).parent
    env = clean_env(PATH=f"{pins}:{bin_dir}:/usr/bin:/bin", HIKMAH_SOCKET=str(daemon.socket),
                    DISPLAY=":99")  # fmt: skip
    shell = PtyShell(env, daemon.root)
    try:
        answers = [("New passphrase:", PASSPHRASE), ("Repeat the new passphrase:", PASSPHRASE)]
        status, shown = shell.run("hikmah --no-autostart passphrase set", answers)
    finally:
        shell.close()
    assert status == 0, shown
    # pinentry showed the description hikmah gave it (SETDESC), then its prompt.
    assert "A new passphrase for Hikmah's person presence." in shown
    assert PASSPHRASE not in shown
    assert daemon.call("presence.status")["on"]


def test_the_passphrase_is_never_read_from_standard_input(daemon: Running) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "--socket", str(daemon.socket), "--no-autostart",
         "passphrase", "set"],
        input=f"{PASSPHRASE}\n{PASSPHRASE}\n", capture_output=True, text=True, timeout=60,
        env=clean_env(), start_new_session=True,  # no controlling terminal
    )  # fmt: skip
    assert done.returncode == 3, done
    assert "no terminal of its own" in done.stderr
    assert not daemon.call("presence.status")["on"]
