"""Every method's signature, by its wire name: the one table the daemon registers its
handlers by and the clients decode replies by."""

from __future__ import annotations

from hikmah.model.wire import learning, memory, replay
from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {
    **memory.METHODS,
    **learning.METHODS,
    **replay.METHODS,
}
