"""Shared fixtures for kernel tests: a real LMDB store in a temp dir."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hikmah.index import queries
from hikmah.model.errors import HikmahError
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft, Trace
from hikmah.model.wire.memory import StoredTrace
from hikmah.rules.operations import Operation, Remember, Written
from hikmah.store.core import Store
from hikmah.vault.sealing import HeldKeys

__all__ = [
    "DAY", "NOW", "HeldKeys", "all_traces", "remember", "remember_forecast", "write",
]  # fmt: skip

NOW = 1_790_000_000_000
DAY = 86_400_000


class NetworkAttempt(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every connect and name lookup in this process fails and is recorded."""
    attempts: list[str] = []

    def refuse(name: str):  # type: ignore[no-untyped-def]
        def guard(*args: object, **kwargs: object) -> None:
            attempts.append(f"{name}{args[1:2]}")
            raise NetworkAttempt(f"network use: {name}")

        return guard

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    yield attempts


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "data", map_size=1 << 24) as opened:
        yield opened


def write(store: Store, *ops: Operation, now: int = NOW) -> list[Written]:
    """Apply operations that must all succeed."""
    outcomes = store.apply(ops, now_ms=now, policy=KernelPolicy())
    for outcome in outcomes:
        if isinstance(outcome, HikmahError):
            raise outcome
    return [o for o in outcomes if isinstance(o, Written)]


def remember(store: Store, content: str, now: int = NOW, **fields: object) -> Trace:
    """Write one trace and return it."""
    (written,) = write(store, Remember(draft=Draft(content=content, **fields)), now=now)  # type: ignore[arg-type]
    assert written.trace is not None
    return written.trace


def remember_forecast(store: Store, content: str, family: str = "cache") -> Trace:
    """Write one prediction (a yes/no forecast at 0.7) and return it."""
    (written,) = write(
        store,
        Remember(
            draft=Draft(
                content=content,
                kind="prediction",
                family=family,
                probability=0.7,
                prediction_type="noul",
            ),
            allow_prediction=True,
        ),
    )
    assert written.trace is not None
    return written.trace


def all_traces(store: Store) -> list[StoredTrace]:
    """Every trace but the purged ones, in write order."""
    return store.read(lambda snapshot: list(queries.traces(snapshot)))


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
