"""Real headless Neovim running the plugin (clients/nvim) against a real hikmahd.

Each test writes a small Lua driver: ``tests/nvim/prelude.lua`` first (it captures
``vim.notify``, answers ``vim.ui.select``/``input`` and writes what the driver saw as JSON),
then the test's body. The Python side reads the JSON and asserts; for tests that need the
two sides to take turns (a daemon restart) they signal each other with files.

Neovim is ``$HIKMAH_NVIM`` or ``nvim`` on PATH (Debian's package; ``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.environment import clean_env

PLUGIN = Path(__file__).resolve().parents[2] / "clients" / "nvim"
PRELUDE = Path(__file__).resolve().parents[1] / "nvim" / "prelude.lua"
RUN_TIMEOUT_S = 30
QUIET_STDERR = {"", "Running healthchecks..."}  # what :checkhealth echoes


def nvim_binary() -> str:
    found = os.environ.get("HIKMAH_NVIM") or shutil.which("nvim")
    if not found:
        pytest.fail("nvim is not installed: apt-get install neovim (.ci/run installs it)")
    return found


class Driver:
    """One Neovim process running one driver script."""

    def __init__(self, process: subprocess.Popen[str], directory: Path, result: Path) -> None:
        self.process = process
        self.directory = directory
        self.result_path = result

    def wait_for(self, name: str, timeout: float = 20.0) -> None:
        """Until the driver calls ``T.signal(name)``."""
        deadline = time.monotonic() + timeout
        while not (self.directory / name).exists():
            if self.process.poll() is not None:
                self.result()  # fails with the driver's error and output
                pytest.fail(f"nvim exited before signalling {name!r}")
            if time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"nvim did not signal {name!r} within {timeout} s")
            time.sleep(0.01)

    def signal(self, name: str) -> None:
        """What the driver's ``T.await(name)`` waits for."""
        (self.directory / name).write_text("1")

    def result(self) -> dict[str, Any]:
        """Wait for Neovim to quit; what the driver recorded (``data``, ``notes``, ``prompts``)."""
        try:
            out, err = self.process.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
            pytest.fail(f"nvim did not finish within {RUN_TIMEOUT_S} s\n{out}\n{err}")
        if not self.result_path.exists():
            pytest.fail(f"nvim exited {self.process.returncode} without a result:\n{out}\n{err}")
        recorded: dict[str, Any] = json.loads(self.result_path.read_text())
        data = recorded.get("data")
        if isinstance(data, dict) and data.get("error"):
            pytest.fail(f"the Lua driver failed:\n{data['error']}\n{out}\n{err}")
        # An error in a callback, or a deprecation warning of a newer Neovim, lands here.
        written = [line for line in err.splitlines() if line.strip() not in QUIET_STDERR]
        if written:
            pytest.fail(f"nvim wrote to stderr:\n{err}")
        if not isinstance(data, dict):
            recorded["data"] = {}  # an empty Lua table encodes as []
        return recorded


class Nvim:
    """Starts drivers; files go to a directory of their own under the test's temp dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self.binary = nvim_binary()
        self.drivers: list[Driver] = []

    def start(
        self,
        body: str,
        *,
        socket: Path | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Driver:
        """Run ``body`` (Lua, inside a function, with ``T`` from prelude.lua) in a new nvim.

        Args:
            socket: becomes ``$HIKMAH_SOCKET``.
            env: more environment variables.
            cwd: Neovim's working directory (the project scope comes from it).
        """
        self.count += 1
        directory = self.root / f"nvim{self.count}"
        directory.mkdir()
        script = directory / "driver.lua"
        result = directory / "result.json"
        script.write_text(
            f"dofile({json.dumps(str(PRELUDE))})\nT.run(function()\n{body}\nend)\n",
            encoding="utf-8",
        )
        environment = clean_env(HIKMAH_TEST_DIR=str(directory), HIKMAH_TEST_RESULT=str(result))
        environment.pop("HIKMAH_SOCKET", None)
        if socket is not None:
            environment["HIKMAH_SOCKET"] = str(socket)
        environment.update(env or {})
        process = subprocess.Popen(
            [
                self.binary,
                "--headless",
                "-u",
                "NONE",
                "-i",
                "NONE",
                "--cmd",
                f"set rtp^={PLUGIN}",
                "-c",
                f"luafile {script}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
            cwd=cwd,
            # Its own session: the daemon reads the lineage up to the session leader, so a
            # test run from inside a coding agent still drives nvim as a person.
            start_new_session=True,
        )
        driver = Driver(process, directory, result)
        self.drivers.append(driver)
        return driver

    def close(self) -> None:
        """End the drivers a failed test left running."""
        for driver in self.drivers:
            if driver.process.poll() is None:
                driver.process.kill()
            driver.process.communicate(timeout=RUN_TIMEOUT_S)

    def run(self, body: str, **kwargs: Any) -> dict[str, Any]:
        """Run a driver to its end; what it recorded."""
        return self.start(body, **kwargs).result()


def lua(value: Any) -> str:
    """A Python value as a Lua literal (through JSON, which Lua's vim.json reads)."""
    return f"vim.json.decode({json.dumps(json.dumps(value))})"
