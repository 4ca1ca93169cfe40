"""Fixtures of the reliability tests: a seeded RNG (the real daemon is tests/conftest.py's)."""

from __future__ import annotations

import os
import random

import pytest


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A seeded RNG; the seed is printed (shown with a failure) and ``HIKMAH_SEED`` replays it."""
    seed = int(os.environ.get("HIKMAH_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"{request.node.name}: HIKMAH_SEED={seed}")
    return random.Random(seed)
