"""Fixtures of the kernel's sync tests: real stores paired by code, sharing one folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .nodes import Node, pair_all


@pytest.fixture
def trio_of(tmp_path: Path) -> Iterator[tuple[Node, Node, Node]]:
    """A laptop, a desk and a box, paired by code, sharing one folder."""
    folder = tmp_path / "folder"
    nodes = tuple(Node(tmp_path / "data", folder, name) for name in ("laptop", "desk", "box"))
    pair_all(*nodes)
    try:
        yield nodes  # type: ignore[misc]
    finally:
        for node in nodes:
            node.close()


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    """A laptop and a desk, paired, sharing one folder."""
    folder = tmp_path / "folder"
    laptop = Node(tmp_path / "d", folder, "laptop")
    desk = Node(tmp_path / "d", folder, "desk")
    pair_all(laptop, desk)
    try:
        yield laptop, desk
    finally:
        laptop.close()
        desk.close()
