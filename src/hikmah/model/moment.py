"""A point of the ledger: how a read names one in the past (:data:`AsOf`), and the
record and time the store answers with (:class:`Moment`).

Reading the past is :mod:`hikmah.index.past`; docs/protocol.md, "Reading the past",
says what ``as_of`` accepts.
"""

from __future__ import annotations

import msgspec

AsOf = int | str  # a ledger sequence number, or a time (hikmah.model.deadlines.parse_moment)


class Moment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A point of the ledger: a record's sequence number and when it was written."""

    seq: int
    at: int
