"""``ledger.*``: verifying the hash chain, and compacting it.

The reports are the ledger's own: :mod:`hikmah.ledger.chain` and
:mod:`hikmah.store.maintenance` build them and the daemon answers with them as they are.
"""

from __future__ import annotations

import msgspec

from hikmah.model.errors import InvalidInput
from hikmah.model.head import Head
from hikmah.model.wire.base import NoParams, Params, Result, Signature

# --- the objects of the replies ------------------------------------------------------


class Summary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One unacknowledged record, summarised for a person to inspect.

    Every text field is cut to a single line of at most 80 characters with
    credential-like text withheld, because the record may be a forgery
    written to smuggle something into a terminal.
    """

    seq: int
    event: str  # what the record does: remember, supersede, purge, presence, unreadable...
    trace_id: str | None = None
    kind: str | None = None
    source: str | None = None
    locator: str | None = None  # an agent session's stamp says who wrote it
    verified: bool | None = None
    claim: str | None = None
    preview: str | None = None


class ChainReport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A paired device's chain as this device keeps it, verified (docs/sync.md).

    Attributes:
        device: The device's id.
        name: Its name when it was paired.
        ok: True when its chain verifies whole and it is not halted.
        records: How many of its records are kept here, valid or not.
        head: The last record of the verified chain prefix (on the device itself,
            its ledger's record of that seq); None when no record verifies.
        stopped: Where and why the chain stops verifying; None when it verifies whole.
        halted: Why its records stopped being applied here until a person looks (a
            fork, a refused segment); None while they are applied.
        removed_at: It was removed: nothing of its chain past this seq is applied.
        redacted: Records kept as their redaction after a purge (their hashes still link).
    """

    device: str
    name: str
    ok: bool
    records: int
    head: Head | None
    stopped: str | None = None
    halted: str | None = None
    removed_at: int | None = None
    redacted: int = 0


# --- the methods ---------------------------------------------------------------------


class VerifyParams(Params, frozen=True):
    """``ledger.verify``: check the chain, and at most one way of moving the head."""

    expect_head: str | None = None  # SEQ:HASH pinned elsewhere
    accept_tail: bool = False  # acknowledge the records past the head
    reset_head: bool = False  # rewrite the head from the ledger's last record

    def check(self) -> None:
        chosen = [self.expect_head is not None, self.accept_tail, self.reset_head]
        if sum(chosen) > 1:
            raise InvalidInput("expect_head, accept_tail and reset_head exclude each other")


class VerifyResult(Result, frozen=True, kw_only=True):
    """The outcome of verifying the ledger (:func:`hikmah.ledger.chain.verify`).

    Attributes:
        ok: True when ``errors`` is empty.
        records: How many records were read, valid or not.
        head: The last record of the verified chain prefix (what a head reset
            would write); None when no record verifies.
        errors: Integrity findings, each a sentence naming the seq.
        warnings: Things that are fine but worth knowing.
        unacknowledged: The records past the acknowledged head.
        devices: Each paired device's chain as this device keeps it, by id (sync).
    """

    ok: bool
    records: int
    head: Head | None
    errors: list[str]
    warnings: list[str]
    unacknowledged: list[Summary]
    devices: list[ChainReport] = msgspec.field(default_factory=list)


class CompactResult(Result, frozen=True, kw_only=True):
    """What compaction did: the head it replaced, the new head, the redacted traces."""

    old_head: Head | None  # None: the ledger was empty
    head: Head | None  # the re-chained ledger's; its last record names the old head
    records: int  # in the ledger now
    redacted: list[str]  # the purged traces whose text was removed


METHODS = {
    "ledger.verify": Signature(VerifyParams, VerifyResult),
    "ledger.compact": Signature(NoParams, CompactResult),
}
