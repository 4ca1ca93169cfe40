"""Real hikmahd daemons syncing through a folder an engine keeps: one data directory, socket
and policy each (``[sync] folder`` names that device's copy of the folder), driven by the
real CLI and JSON-RPC like a person's shell."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.sync_engines import wait_until


@dataclass
class Device:
    """One machine: a daemon, its data directory, and its copy of the sync folder."""

    name: str
    running: Running
    folder: Path

    @property
    def id(self) -> str:
        return str(self.call("sync.status")["device"])

    def start(self) -> Device:
        self.running.start()
        return self

    def stop(self) -> None:
        self.running.stop()

    def kill(self) -> None:
        self.running.kill()

    def call(self, method: str, **params: Any) -> Any:
        return self.running.call(method, **params)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real ``hikmah`` CLI, from a person's shell (no agent variables)."""
        return self.running.cli(*args, env=clean_env())

    def sync(self) -> dict[str, Any]:
        done = self.cli("sync", "--json")
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    def remember(self, content: str, **params: Any) -> str:
        return str(self.call("memory.remember", content=content, **params)["trace"]["id"])

    def burst(
        self, count: int, prefix: str, window: int = 64, into: list[str] | None = None
    ) -> list[str]:
        """``count`` writes pipelined on one connection, ``window`` at a time (they share
        commits); the ids acknowledged, also appended to ``into`` as they come (a daemon
        killed meanwhile ends the burst: what was acknowledged so far is there)."""
        ids: list[str] = [] if into is None else into
        try:
            with self.running.connect() as conn:
                for start in range(0, count, window):
                    for i in range(start, min(start + window, count)):
                        conn.send(
                            {
                                "jsonrpc": "2.0",
                                "method": "memory.remember",
                                "params": {"content": f"{prefix} {i} of the burst"},
                                "id": i,
                            }
                        )
                    for _ in range(start, min(start + window, count)):
                        ids.append(str(conn.read()["result"]["trace"]["id"]))
        except (OSError, EOFError):
            if into is None:
                raise
        return ids

    def burst_killed(self, count: int, prefix: str, after_s: float) -> list[str]:
        """A burst during which the daemon is killed with SIGKILL after ``after_s``; the
        ids acknowledged before (then the daemon is started again)."""
        acknowledged: list[str] = []
        writer = threading.Thread(
            target=self.burst, args=(count, prefix), kwargs={"into": acknowledged}
        )
        writer.start()
        time.sleep(after_s)
        self.kill()
        writer.join(timeout=30)
        self.start()
        return acknowledged

    def memory(self) -> tuple[dict[str, tuple[str, str]], Any, list[str]]:
        """What a person sees: every trace (status, content), the conflicts, the queue."""
        traces: dict[str, tuple[str, str]] = {}
        after = None
        while True:
            page = self.call("memory.export", after=after, include_superseded=True)
            for trace in page["traces"]:
                traces[trace["id"]] = (trace["status"], trace["content"])
            after = page["next"]
            if after is None:
                break
        conflicts = self.call("memory.conflicts")["conflicts"]
        queue = [e["trace"]["id"] for e in self.call("promises.list")["commitments"]]
        return traces, conflicts, queue

    def verified(self) -> tuple[bool, list[str]]:
        report = self.call("ledger.verify")
        return bool(report["ok"]), list(report["errors"])


def make_device(
    root: Path,
    name: str,
    folder: Path,
    *,
    watch: bool,
    interval_s: int = 60,
    env: dict[str, str] | None = None,
    extra_policy: str = "",
) -> Device:
    running = Running(root / name, env=clean_env() if env is None else env)
    running.root.mkdir(parents=True, exist_ok=True)
    running.policy.write_text(
        extra_policy
        + "\n[sync]\n"
        + f'folder = "{folder}"\nname = "{name}"\n'
        + f"interval_seconds = {interval_s}\nwatch = {'true' if watch else 'false'}\n"
    )
    return Device(name, running, folder)


@contextmanager
def started(*devices: Device) -> Iterator[tuple[Device, ...]]:
    try:
        for device in devices:
            device.start()
        yield devices
    finally:
        for device in devices:
            device.stop()


def pair(inviter: Device, joiner: Device, carry: Callable[[], None] = lambda: None) -> None:
    """A person pairs two devices: ``sync invite`` on one, ``sync join CODE`` on the other,
    the engine carrying the files between them (``carry``: a git round trip)."""
    invited = inviter.cli("sync", "invite", "--json")
    assert invited.returncode == 0, invited.stderr
    code = json.loads(invited.stdout)["code"]

    def joined() -> bool:
        carry()
        done = joiner.cli("sync", "join", code)
        assert done.returncode in (0, 4), done.stderr  # 4: the invitation has not arrived
        return done.returncode == 0

    wait_until(joined, 30, f"{joiner.name} to find {inviter.name}'s invitation", step=0.2)


def converged(devices: tuple[Device, ...], step: Callable[[], None] = lambda: None) -> bool:
    step()
    first = devices[0].memory()
    return all(device.memory() == first for device in devices[1:])


def settle(devices: tuple[Device, ...], step: Callable[[], None], timeout: float = 60) -> float:
    """Wait until every device shows the same memory (``step``: one round of the engine);
    when they never do, the failure says what each one shows and logged."""
    began = time.monotonic()
    wait_until(
        lambda: converged(devices, step),
        timeout,
        "the devices to converge",
        step=0.1,
        explain=lambda: "\n".join(_state(device) for device in devices),
    )
    return time.monotonic() - began


def _state(device: Device, lines: int = 20) -> str:
    """A device's traces, sync status and the end of its daemon's log, for a failure."""
    try:
        shown = f"{len(device.memory()[0])} traces; sync.status {device.call('sync.status')}"
    except Exception as exc:  # a daemon that stopped answering says so here
        shown = f"no answer: {exc!r}"
    log = device.running.log
    tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []
    return "\n".join([f"--- {device.name}: {shown}", *tail])
