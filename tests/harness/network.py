"""Running Python where there is no network at all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def run_without_network(body: str, args: list[str], home: Path, timeout: float = 120) -> Any:
    """Run the Python ``body`` in a child in a network namespace of its own (``unshare
    -n``: no interface but a downed loopback), with ``args`` as ``sys.argv[1:]``; what it
    prints as JSON. The child first shows that the namespace really has no network.
    Skips, saying why, where such a namespace cannot be made."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here (unshare -n needs CAP_SYS_ADMIN)")
    probe = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 443), timeout=2)\n"
        "except OSError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('the namespace has a network')\n"
    )
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", probe + body, *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
