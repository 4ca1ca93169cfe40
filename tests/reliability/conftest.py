"""Fixtures of the reliability tests: the daemon tests' real daemon, and a seeded RNG."""

from __future__ import annotations

import os
import random

import pytest

from tests.daemon.conftest import daemon, short_tmp

__all__ = ["daemon", "rng", "short_tmp"]


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A seeded RNG; the seed is printed (shown with a failure) and ``HIKMAH_SEED`` replays it."""
    seed = int(os.environ.get("HIKMAH_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"{request.node.name}: HIKMAH_SEED={seed}")
    return random.Random(seed)
