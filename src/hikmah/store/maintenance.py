"""Looking after the ledger: verify it, accept or reset its head, compact it, re-wrap its keys.

Each function works on an open :class:`~hikmah.store.core.Store` between the
writer's batches (the daemon runs them in the writer's turn). Which of them
need a person is decided where the daemon registers the methods that call
them; the kernel only says what each does to the ledger.
"""

from __future__ import annotations

import msgspec

from hikmah.index import replicas
from hikmah.index.layout import SEQ
from hikmah.index.snapshot import Snapshot
from hikmah.ledger import chain
from hikmah.ledger.chain import GENESIS, decode_record, encode_record
from hikmah.ledger.payloads import (
    PAYLOAD_ENCODER,
    CompactedPayload,
    RedactedPayload,
    RememberPayload,
    decode_payload,
)
from hikmah.model.errors import ConflictError, LedgerError
from hikmah.model.head import Head
from hikmah.model.wire.ledger import CompactResult, VerifyResult
from hikmah.store.core import Store
from hikmah.store.free_pages import drop_free_pages
from hikmah.store.indexing import reindex
from hikmah.vault.sealing import Keys, Sealed, rewrapped


def verify(store: Store, *, expect_head: Head | None = None) -> VerifyResult:
    """Check the hash chain and the head (docs/storage.md), and every paired
    device's chain as the store keeps it (docs/sync.md)."""
    with store.snapshot() as snapshot:
        report = chain.verify(
            snapshot.records(), store.head, expect_head=expect_head, head_error=store.head_error
        )
        devices, errors, warnings = replicas.verify_chains(snapshot)
    return msgspec.structs.replace(
        report,
        ok=report.ok and not errors,
        errors=[*report.errors, *errors],
        warnings=[*report.warnings, *warnings],
        devices=devices,
    )


def accept_tail(store: Store) -> VerifyResult:
    """Acknowledge records past the head, if everything up to the head verifies.

    Raises:
        LedgerError: the chain is broken before or inside the tail.
    """
    report = verify(store)
    other = [e for e in report.errors if "unacknowledged" not in e]
    if other:
        raise LedgerError(
            "the tail is not accepted: the ledger has other errors: " + "; ".join(other)
        )
    store.acknowledge_ledger()
    return verify(store)


def reset_head(store: Store) -> VerifyResult:
    """Rewrite the head from the ledger's last record."""
    store.acknowledge_ledger()
    return verify(store)


def compact(store: Store, now_ms: int) -> CompactResult:
    """Rewrite the ledger without the text of purged traces, and re-chain it.

    Each purged trace's remember record (purged here or by a paired device)
    becomes a ``redacted`` record (id,
    kind, time: no text); every other payload keeps its exact bytes. The
    chain is recomputed from genesis and ends with a ``compacted`` record
    naming the head it replaced, so the rewrite is itself in the audit
    trail (a head pinned before it no longer matches: compare it with that
    record). The indexes are rebuilt in the same transaction, then the file
    is copied without its free pages, so the old text is not left in
    unused pages either. Nothing is done when no purged text remains.

    Raises:
        ConflictError: the ledger has an unacknowledged tail.
    """
    old_head = store.head

    def rewrite() -> CompactResult:
        with store.transaction() as snapshot:
            last = snapshot.last_record()
            if store.head_error is not None or last != old_head or last is None:
                raise ConflictError(
                    "the ledger has records no write acknowledged: run hikmah verify-ledger"
                    " and accept or reset the head before compacting"
                )
            records = [decode_record(line) for _seq, line in snapshot.records()]
            payloads = [decode_payload(record) for record in records]
            bodies, redacted = [], []
            for record, payload in zip(records, payloads, strict=True):
                if isinstance(payload, RememberPayload | Sealed) and _purged(snapshot, payload):
                    trace = payload.trace
                    stub = RedactedPayload(
                        id=trace.id, kind=trace.kind, created_at=trace.created_at, at=payload.at
                    )
                    bodies.append(PAYLOAD_ENCODER.encode(stub))
                    redacted.append(trace.id)
                else:
                    bodies.append(record.payload)
            if not redacted:
                return CompactResult(
                    old_head=old_head, head=old_head, records=len(records), redacted=[]
                )
            final = CompactedPayload(
                old_seq=last.seq, old_hash=last.hash, redacted=len(redacted), at=now_ms
            )
            bodies.append(PAYLOAD_ENCODER.encode(final))
            prev = GENESIS
            for seq, body in enumerate(bodies, 1):
                record = encode_record(seq, prev, body)
                snapshot.txn.put(SEQ.pack(seq), record.line, db=snapshot.dbs.ledger)
                prev = record.hash
            new_head = Head(seq=len(bodies), hash=prev)
            reindex(store, snapshot, rebuild=True)
            # Synced devices receive the re-chained ledger as a new epoch of its chain.
            replicas.next_epoch(snapshot)
            store.set_head(old_head, pending=new_head)  # pending: see hikmah.store.core
        return CompactResult(
            old_head=old_head, head=new_head, records=len(bodies), redacted=redacted
        )

    # One transaction writes the ledger and every index again: grown as writes grow it.
    done = store.growing(rewrite)
    if not done.redacted:
        return done
    store.sync()
    store.set_head(done.head)
    store.presence = store.read_presence()  # its records moved to new seqs
    store.columns.forget()
    drop_free_pages(store)
    return done


def _purged(snapshot: Snapshot, payload: RememberPayload | Sealed) -> bool:
    """Whether the trace a remember wrote is purged, by a purge of any device's chain."""
    docno = snapshot.docno(payload.trace.id)
    return docno is not None and snapshot.status_of(docno) == "purged"


def rotate(store: Store, keys: Keys) -> int:
    """Re-wrap every data key not under ``keys.master`` under it, in one transaction.

    The sealed payloads do not change. Returns how many keys were re-wrapped;
    after it returns (durably), the retired masters open nothing and the
    keyring may forget them.
    """
    store.use_keys(keys)

    def rewrap() -> int:
        count = 0
        with store.transaction() as snapshot:
            cursor = snapshot.txn.cursor(db=snapshot.dbs.keys)
            for key, entry in cursor:
                new = rewrapped(keys, bytes(key).decode(), bytes(entry))
                if new is not None:
                    cursor.put(key, new)
                    count += 1
        return count

    count = store.growing(rewrap)  # every key rewritten in one transaction
    store.sync()
    return count
