"""Shared fixtures for kernel tests: a real LMDB store in a temp dir."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hikmah import queries
from hikmah.errors import HikmahError
from hikmah.policy import KernelPolicy
from hikmah.rules import Operation, Remember, Written
from hikmah.sealing import HeldKeys
from hikmah.store import Store
from hikmah.trace import Draft, Trace

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


def all_traces(store: Store) -> list[queries.StoredTrace]:
    """Every trace but the purged ones, in write order."""
    return store.read(lambda snapshot: list(queries.traces(snapshot)))
