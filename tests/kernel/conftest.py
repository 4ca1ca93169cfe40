"""Fixtures of the kernel tests: a real LMDB store in a temp dir, and a process without
network."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hikmah.store.core import Store


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
