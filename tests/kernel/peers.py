"""Helpers for the tests of the migration readers: the peers' fixtures and a real import.

The fixtures in tests/fixtures/peers were made by the peers themselves
(tests/fixtures/peers/make_fixtures.py; each folder's MANIFEST.json names the
peer and its version). Tests read copies in a temp dir, dated so that v2 is
newer than v1 (a checkout gives files the time of the checkout).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from hikmah.migration import Item, Skip, Write, plan_page
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, write

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
V1_TIME = NOW - 10 * DAY
V2_TIME = NOW - 2 * DAY


def copy(source: str, name: str, to: Path, at_ms: int = V1_TIME) -> Path:
    """A copy of ``fixtures/peers/<source>/<name>`` (a file or a folder), every file dated ``at_ms``."""
    origin = PEERS / source / name
    target = to / source / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if origin.is_dir():
        shutil.copytree(origin, target)
        files = [p for p in target.rglob("*") if p.is_file()]
    else:
        shutil.copyfile(origin, target)
        files = [target]
    for file in files:
        os.utime(file, ns=(at_ms * 1_000_000, at_ms * 1_000_000))
    return target


def kinds(items: Iterable[Item]) -> dict[str, int]:
    """How many items of each kind."""
    counted: dict[str, int] = {}
    for item in items:
        counted[item.kind] = counted.get(item.kind, 0) + 1
    return dict(sorted(counted.items()))


def import_items(store: Store, items: list[Item], now: int = NOW) -> tuple[list[Write], list[Skip]]:
    """Import as the daemon will: plan every item against the store, then write the plan."""
    writes, skips = store.read(plan_page, items)
    if writes:
        write(store, *(w.operation(None) for w in writes), now=now)
    return writes, skips
