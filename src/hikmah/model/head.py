"""A ledger's head: the last record a write confirmed, by its sequence number and hash.

The store keeps it beside the ledger (:mod:`hikmah.ledger.headfile`), sync publishes it,
and replies name it; ``SEQ:HASH`` is its text (:mod:`hikmah.model.headtext`).
"""

from __future__ import annotations

import msgspec


class Head(msgspec.Struct, frozen=True):
    """An acknowledged position in the ledger: the last record a write confirmed."""

    seq: int
    hash: str
