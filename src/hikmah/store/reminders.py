"""The reminder stages the daemon delivered, recorded in the store.

The ledger does not know them, so they live in the ``reminders`` database, which is
not derived from it (:mod:`hikmah.index.layout`); :func:`hikmah.index.queries.scheduled`
reads them back.
"""

from __future__ import annotations

from collections.abc import Sequence

from hikmah.index.layout import SEQ, reminder_key
from hikmah.store.core import Store
from hikmah.working.promises import Stage


def mark_reminded(store: Store, delivered: Sequence[tuple[str, Stage]], at_ms: int) -> None:
    """Record durably that these reminder stages (of these traces) were delivered."""
    with store.transaction() as snapshot:
        for trace_id, stage in delivered:
            snapshot.txn.put(
                reminder_key(trace_id, stage), SEQ.pack(at_ms), db=snapshot.dbs.reminders
            )
    store.sync()
