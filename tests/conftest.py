"""Settings for every test of the run, and the fixtures tests in several directories use:
a short temp dir, a real daemon in it, a private Secret Service. The helpers they are
made of live in ``tests.harness``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.daemon import Running
from tests.harness.secret_service import SecretServiceSession

# A model's built graph depends on its installed weights alone: one cache for the whole
# run (and the next), so that each store and daemon a test starts does not build its own
# (a few seconds each). Children (hikmahd, the CLI) inherit it.
os.environ.setdefault(
    "HIKMAH_MODEL_CACHE", str(Path(__file__).resolve().parents[1] / ".cache" / "models")
)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hk", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def daemon(short_tmp: Path) -> Iterator[Running]:
    running = Running(short_tmp).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def words_daemon(short_tmp: Path) -> Iterator[Running]:
    """A daemon whose recall is the words' alone (no vectors to wait for)."""
    running = Running(short_tmp)
    running.policy.write_text("[semantic]\nenabled = false\n")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def secret_service(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SecretServiceSession]:
    """GNOME Keyring's Secret Service on a private bus, named in this process's environment."""
    session = SecretServiceSession(short_tmp / "keyring")
    try:
        session.start()
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session.address)
        yield session
    finally:
        session.stop()
