"""What every read that may be made as of the past shares: its snapshot (a typed reply
says what it was read as of in an ``as_of`` field of its own: the snapshot's ``point``).

The ``as_of`` param itself is :data:`hikmah.model.moment.AsOf`, declared by each method's
params; docs/protocol.md, "Reading the past", says what it accepts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hikmah.index.past import as_of
from hikmah.index.snapshot import Snapshot
from hikmah.model.moment import AsOf

from ..services import Services


@contextlib.contextmanager
def reading(services: Services, point: AsOf | None) -> Iterator[Snapshot]:
    """A snapshot of the store as of ``point`` (the present one when None)."""
    with services.store.snapshot() as present:
        yield as_of(present, point, services.now_ms())
