"""The fixture of the Neovim tests: drivers in the test's short temp dir (the drivers
themselves are tests/harness/nvim.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.nvim import Nvim


@pytest.fixture
def nvim(short_tmp: Path) -> Iterator[Nvim]:
    drivers = Nvim(short_tmp)
    try:
        yield drivers
    finally:
        drivers.close()
