"""Real file-sync engines for the sync tests: Syncthing instances on loopback, and git.

:func:`syncthing_cluster` starts N Syncthing instances (Debian's ``syncthing``),
each with its own home, its GUI/REST and its sync protocol on 127.0.0.1 only,
and global and local discovery, relays, NAT traversal, STUN, usage and crash
reporting and upgrades off. Those options are written into each generated
``config.xml`` before the first start, so an instance never tries to reach
beyond loopback; the devices are then introduced to each other and the shared
folder configured through the REST API, as a person's GUI would do it.

:class:`GitRemote` is a bare repository and clones of it, driven with real
``git`` commits, pushes and pulls.

Both skip the test with the reason when the engine is missing or cannot start.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FOLDER_ID = "hikmah"
START_TIMEOUT = 30.0
# Options a person would turn off for a loopback-only test: nothing leaves 127.0.0.1.
_OFF = {
    "globalAnnounceEnabled": "false",
    "localAnnounceEnabled": "false",
    "relaysEnabled": "false",
    "natEnabled": "false",
    "startBrowser": "false",
    "urAccepted": "-1",
    "autoUpgradeIntervalH": "0",
    "crashReportingEnabled": "false",
    "stunKeepaliveStartS": "0",
    "stunServer": "",
    "announceLANAddresses": "false",
    "globalAnnounceServer": "",
    "reconnectionIntervalS": "1",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    step: float = 0.05,
    explain: Callable[[], str] | None = None,
) -> float:
    """Poll ``check`` until it holds; the seconds it took. Fails the test after ``timeout``,
    with what ``explain`` says then."""
    start = time.monotonic()
    while True:
        if check():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            said = "" if explain is None else f":\n{explain()}"
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}{said}")
        time.sleep(step)


@dataclass
class Syncthing:
    """One Syncthing instance: its home, its ports, its process and its REST API."""

    home: Path
    folder: Path
    name: str
    gui_port: int = field(default_factory=free_port)
    sync_port: int = field(default_factory=free_port)
    api_key: str = field(default_factory=lambda: os.urandom(16).hex())
    process: subprocess.Popen[bytes] | None = None
    device_id: str = ""

    def generate(self) -> None:
        result = subprocess.run(
            ["syncthing", "generate", f"--home={self.home}", "--no-default-folder"],
            capture_output=True,
            env=self._env(),
            timeout=30,
        )
        if result.returncode != 0:
            pytest.skip(
                f"syncthing generate failed: {result.stderr.decode(errors='replace')[-300:]}"
            )
        config = self.home / "config.xml"
        tree = ET.parse(config)
        options = tree.getroot().find("options")
        assert options is not None
        for name, value in _OFF.items():
            element = options.find(name)
            if element is None:
                element = ET.SubElement(options, name)
            element.text = value
        for listen in options.findall("listenAddress"):
            options.remove(listen)
        ET.SubElement(options, "listenAddress").text = f"tcp://127.0.0.1:{self.sync_port}"
        gui = tree.getroot().find("gui")
        assert gui is not None
        address = gui.find("address")
        assert address is not None
        address.text = f"127.0.0.1:{self.gui_port}"
        tree.write(config)

    def start(self) -> None:
        """Start ``syncthing serve`` (then :meth:`wait_ready`)."""
        log = (self.home / "syncthing.log").open("wb")
        self.process = subprocess.Popen(
            [
                "syncthing",
                "serve",
                f"--home={self.home}",
                "--no-browser",
                "--no-restart",
                "--no-upgrade",
                f"--gui-address=http://127.0.0.1:{self.gui_port}",
                f"--gui-apikey={self.api_key}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self._env(),
            start_new_session=True,
        )
        log.close()

    def wait_ready(self) -> None:
        """Wait until the REST API answers (skip the test if it never does)."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = (self.home / "syncthing.log").read_text(errors="replace")[-500:]
                pytest.skip(f"syncthing exited at start ({self.process.returncode}): {tail}")
            with contextlib.suppress(OSError, ValueError):
                self.device_id = self.get("/rest/system/status")["myID"]
                return
            time.sleep(0.05)
        pytest.skip(f"syncthing's REST API did not answer within {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(HOME=str(self.home), STNOUPGRADE="1", STNORESTART="1", STNODEFAULTFOLDER="1")
        return env

    def request(self, method: str, path: str, body: object | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.gui_port}{path}",
            data=data,
            method=method,
            headers={"X-API-Key": self.api_key, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def introduce(self, other: Syncthing) -> None:
        """Add ``other`` as a device, not yet dialled (see :meth:`dial`)."""
        self.request(
            "POST",
            "/rest/config/devices",
            {"deviceID": other.device_id, "name": other.name, "addresses": ["dynamic"]},
        )

    def dial(self, other: Syncthing) -> None:
        """Give ``other``'s address, once it knows this device: a dial it refused as
        unknown would back off for up to half a minute."""
        self.request(
            "PATCH",
            f"/rest/config/devices/{other.device_id}",
            {"addresses": [f"tcp://127.0.0.1:{other.sync_port}"]},
        )

    def share(self, others: list[Syncthing], *, rescan_s: int, watch_delay_s: int) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        # As docs/sync.md says to set up: files being written never travel.
        (self.folder / ".stignore").write_text(".tmp-*\n")
        self.request(
            "POST",
            "/rest/config/folders",
            {
                "id": FOLDER_ID,
                "label": FOLDER_ID,
                "path": str(self.folder),
                "type": "sendreceive",
                "devices": [{"deviceID": d.device_id} for d in [self, *others]],
                "rescanIntervalS": rescan_s,
                "fsWatcherEnabled": True,
                "fsWatcherDelayS": watch_delay_s,
            },
        )

    def connected(self, others: list[Syncthing]) -> bool:
        connections = self.get("/rest/system/connections")["connections"]
        return all(connections.get(o.device_id, {}).get("connected") for o in others)

    def idle(self) -> bool:
        try:
            status = self.get(f"/rest/db/status?folder={FOLDER_ID}")
        except urllib.error.HTTPError:
            return False  # the folder is not running yet
        return bool(status["state"] == "idle" and status["needTotalItems"] == 0)

    def in_sync_with(self, others: list[Syncthing]) -> bool:
        for other in others:
            done = self.get(f"/rest/db/completion?folder={FOLDER_ID}&device={other.device_id}")
            if done["completion"] < 100 or done.get("needItems", 0):
                return False
        return self.idle()


@dataclass
class Cluster:
    """Syncthing instances sharing one folder; ``startup_s`` is how long setting them up took."""

    instances: list[Syncthing]
    startup_s: float

    def settle(self, timeout: float = 30.0) -> float:
        """Wait until every instance is idle and sees every other one complete."""
        return wait_until(
            lambda: all(
                i.in_sync_with([o for o in self.instances if o is not i]) for i in self.instances
            ),
            timeout,
            "the Syncthing instances to settle",
            step=0.1,
        )


@contextlib.contextmanager
def syncthing_cluster(
    root: Path, count: int, *, rescan_s: int = 2, watch_delay_s: int = 1
) -> Iterator[Cluster]:
    """Start ``count`` instances under ``root`` sharing the folder ``root/<name>/folder``.

    Skips the test when ``syncthing`` is not installed or cannot start.
    """
    if shutil.which("syncthing") is None:
        pytest.skip("syncthing is not installed (Debian package syncthing; .ci/run installs it)")
    began = time.monotonic()
    names = ["alpha", "beta", "gamma", "delta"][:count]
    instances = [
        Syncthing(home=root / n / "home", folder=root / n / "folder", name=n) for n in names
    ]
    try:
        for instance in instances:
            instance.home.mkdir(parents=True)
            instance.generate()
            instance.start()
        for instance in instances:
            instance.wait_ready()
        for instance in instances:
            others = [o for o in instances if o is not instance]
            for other in others:
                instance.introduce(other)
            instance.share(others, rescan_s=rescan_s, watch_delay_s=watch_delay_s)
        for number, instance in enumerate(instances):
            for other in instances[number + 1 :]:
                instance.dial(other)
        for instance in instances:
            others = [o for o in instances if o is not instance]
            wait_until(
                lambda i=instance, o=others: i.connected(o), 30, f"{instance.name} to connect"
            )
        cluster = Cluster(instances, 0.0)
        cluster.settle()
        cluster.startup_s = time.monotonic() - began
        yield cluster
    finally:
        for instance in instances:
            instance.stop()


def propagation_seconds(
    source: Path, target: Path, name: str, data: bytes, timeout: float = 30.0
) -> float:
    """Write a new file in one instance's folder; seconds until the other has it whole."""
    path = source / name
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    path.write_bytes(data)
    arrived = target / name

    def there() -> bool:
        try:
            return arrived.read_bytes() == data
        except FileNotFoundError:
            return False

    wait_until(there, timeout, f"{name} to reach {target}", step=0.01)
    return time.monotonic() - start


@dataclass
class GitRemote:
    """A bare repository and clones of it, one per device, driven with real git."""

    root: Path

    def __post_init__(self) -> None:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        self.bare = self.root / "remote.git"
        self.git(self.root, "init", "-q", "--bare", "-b", "main", str(self.bare))
        # The first commit: the ignore rule every clone needs (files being written).
        seed = self.root / ".seed"
        self.git(self.root, "clone", "-q", str(self.bare), str(seed))
        (seed / ".gitignore").write_text(".tmp-*\n")
        self.git(seed, "checkout", "-q", "-B", "main")
        self.git(seed, "add", ".gitignore")
        self.git(seed, "commit", "-q", "-m", "a sync folder for hikmah")
        self.git(seed, "push", "-q", "origin", "main")
        shutil.rmtree(seed)

    def git(self, cwd: Path, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "hikmah test",
            "GIT_AUTHOR_EMAIL": "test@localhost",
            "GIT_COMMITTER_NAME": "hikmah test",
            "GIT_COMMITTER_EMAIL": "test@localhost",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=60)
        if result.returncode != 0:
            raise AssertionError(
                f"git {' '.join(args)} failed: {result.stderr.decode(errors='replace')}"
            )
        return result.stdout.decode()

    def clone(self, name: str) -> Path:
        path = self.root / name
        self.git(self.root, "clone", "-q", "-b", "main", str(self.bare), str(path))
        return path

    def push(self, clone: Path, message: str = "hikmah sync") -> bool:
        """Commit everything in ``clone``, rebase on the remote and push; whether it committed."""
        self.git(clone, "add", "-A")
        committed = bool(self.git(clone, "status", "--porcelain").strip())
        if committed:
            self.git(clone, "commit", "-q", "-m", message)
        self.pull(clone)
        self.git(clone, "push", "-q", "origin", "main")
        return committed

    def pull(self, clone: Path) -> None:
        self.git(clone, "pull", "-q", "--rebase", "--autostash", "origin", "main")
