"""Every method's signature, by its wire name: the one table the daemon registers its
handlers by and the clients decode replies by."""

from __future__ import annotations

from hikmah.model.wire import (
    focus,
    learning,
    ledger,
    memory,
    presence,
    promises,
    replay,
    review,
    service,
    sync,
    transfer,
    vault,
)
from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {
    **memory.METHODS,
    **learning.METHODS,
    **promises.METHODS,
    **focus.METHODS,
    **review.METHODS,
    **replay.METHODS,
    **transfer.METHODS,
    **ledger.METHODS,
    **vault.METHODS,
    **sync.METHODS,
    **presence.METHODS,
    **service.METHODS,
}
