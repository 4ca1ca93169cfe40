"""The systemd user units are valid, and name a daemon that exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = Path(__file__).resolve().parents[2] / "systemd"


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd tools not installed")
def test_units_verify(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    hikmahd = Path(sys.executable).with_name("hikmahd")
    assert hikmahd.exists()
    service = (UNITS / "hikmahd.service").read_text().replace("%h/.local/bin/hikmahd", str(hikmahd))
    (tmp_path / "hikmahd.service").write_text(service)
    shutil.copy(UNITS / "hikmahd.socket", tmp_path / "hikmahd.socket")
    result = subprocess.run(
        [
            "systemd-analyze",
            "--user",
            "verify",
            str(tmp_path / "hikmahd.socket"),
            str(tmp_path / "hikmahd.service"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    assert result.returncode == 0, result.stderr
    assert "Unknown" not in result.stderr, result.stderr
    assert (
        "Type=notify" in service
        and "ListenStream=%t/hikmah/hikmahd.sock" in (UNITS / "hikmahd.socket").read_text()
    )
