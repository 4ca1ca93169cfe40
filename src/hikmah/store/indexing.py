"""The derived indexes kept up with the ledger: the records they do not reflect yet
applied to them, all of them again from empty (a rebuild), and at open a rebuild when
they were built with another layout or under another index key.

Every derived database is a function of the ledger and the paired devices' kept
records (docs/storage.md), so a rebuild replays both, each record where it arrived.
Document numbers may change in a rebuild, so the vectors are built again too
(:func:`hikmah.store.vectors.renumbered`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hikmah.index import derived
from hikmah.index.effects import effects
from hikmah.index.fates import LOCAL
from hikmah.index.layout import LAYOUT, SEQ
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import decode_record
from hikmah.ledger.payloads import decode_payload
from hikmah.store import receive, vectors
from hikmah.store.handle import StoreHandle

log = logging.getLogger(__name__)

INDEXED = b"indexed_seq"  # meta: the last ledger record the indexes reflect
_LAYOUT = b"layout"  # meta: layout.LAYOUT of the derived indexes
_BLIND_INDEX = b"blind_index"  # meta: key id of the index key the indexes are blind under


def indexed(snapshot: Snapshot) -> int:
    """The last ledger record the indexes reflect (0: none)."""
    raw = snapshot.txn.get(INDEXED, db=snapshot.dbs.meta)
    return 0 if raw is None else int(SEQ.unpack(raw)[0])


def reindex(
    store: StoreHandle,
    snapshot: Snapshot,
    *,
    rebuild: bool = False,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Apply the ledger records the indexes do not reflect yet to them (all of them,
    from empty indexes, when ``rebuild``, and then every paired device's kept
    records), in the write transaction of ``snapshot``; returns how many were
    applied. The caller syncs and forgets the columns."""
    txn, meta = snapshot.txn, snapshot.dbs.meta
    after = indexed(snapshot)
    if rebuild:
        vectors.renumbered(store.data_dir, store.semantic)
        snapshot.written = None
        derived.clear(snapshot)
        txn.delete(INDEXED, db=meta)
        after = 0
    count = 0
    cursor = txn.cursor(db=snapshot.dbs.ledger)
    dirty: set[int] = set()
    # A rebuild replays the paired devices' kept records among this ledger's own,
    # each after the record it arrived after: the same documents, in the same order.
    remote = iter(receive.arrived(snapshot) if rebuild else ())
    pending = next(remote, None)
    if cursor.set_range(SEQ.pack(after + 1)):
        for key, line in cursor:
            record = decode_record(bytes(line))
            while pending is not None and pending.seq <= record.seq:
                receive.replay(snapshot, pending, dirty)
                pending, count = next(remote, None), count + 1
            payload = decode_payload(record)
            derived.apply_payload(snapshot, record.seq, payload, dirty)
            effects(snapshot, payload, LOCAL)
            txn.put(INDEXED, bytes(key), db=meta)
            count += 1
            if progress is not None and count % 10_000 == 0:
                progress(count)
    while pending is not None:
        receive.replay(snapshot, pending, dirty)
        pending, count = next(remote, None), count + 1
    return count


def rebuild_index(store: StoreHandle, progress: Callable[[int], None] | None = None) -> int:
    """Recreate every derived index of ``store`` from the ledger; returns the records
    replayed (``progress`` hears the count every 10,000)."""

    def rebuild() -> int:
        with store.env.begin(write=True) as txn:
            return reindex(store, Snapshot(txn, store.dbs), rebuild=True, progress=progress)

    count = store.growing(rebuild)
    store.sync()
    store.columns.forget()
    return count


def check_layout(store: StoreHandle) -> None:
    """Rebuild the indexes from the ledger when they were built with another layout
    (an older version), or blind under another index key (or none)."""
    dbs = store.dbs
    blind = b"" if dbs.vault is None else dbs.vault.index_id.encode()
    with store.env.begin() as txn:
        raw = txn.get(_LAYOUT, db=dbs.meta)
        built_blind = bytes(txn.get(_BLIND_INDEX, b"", db=dbs.meta))
        empty = txn.stat(dbs.ledger)["entries"] == 0
    layout_ok = raw is not None and int(SEQ.unpack(raw)[0]) == LAYOUT
    if layout_ok and built_blind == blind:
        return
    if not empty:
        why = "an older layout" if not layout_ok else "another index key (or none)"
        log.warning("the indexes have %s: rebuilding them from the ledger", why)
        rebuild_index(store)
    with store.env.begin(write=True) as txn:
        txn.put(_LAYOUT, SEQ.pack(LAYOUT), db=dbs.meta)
        if blind:
            txn.put(_BLIND_INDEX, blind, db=dbs.meta)
        else:
            txn.delete(_BLIND_INDEX, db=dbs.meta)
    store.sync()
