"""``presence.*``: a person proving they are at the terminal."""

from __future__ import annotations

from typing import Annotated

import msgspec

from hikmah.model.wire.base import NoParams, Params, Result, Signature

MAX_PASSPHRASE = 1024  # characters


class PassphraseParams(Params, frozen=True):
    """``presence.prove``, ``presence.set`` and ``presence.change``."""

    passphrase: Annotated[str, msgspec.Meta(max_length=MAX_PASSPHRASE)]


# --- the objects of the replies ------------------------------------------------------


class Ticket(Result, frozen=True, kw_only=True):
    """What a proof gives: ``presence.prove``'s result, and a ticket as replies show it."""

    terminal: str  # the caller's terminal, e.g. /dev/pts/3
    expires_at: int | None  # epoch ms; None: a proof for this one command alone


class PresenceChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ledger record that last turned presence on or off, or changed the passphrase
    (a record changed behind the store's back says neither what nor when: ``damaged``)."""

    seq: int
    action: str | None  # set, change, remove or reset
    at: int | None  # when it was written, epoch ms


class Failures(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Wrong passphrases in a row, since the last right one."""

    count: int
    last_at: int | None  # when the last came, epoch ms


# --- the methods ---------------------------------------------------------------------


class PresenceStatusResult(Result, frozen=True, kw_only=True):
    """Whether presence is on, what last changed it, and this caller's ticket."""

    on: bool  # a passphrase is set: person-only actions need a proof
    changed: PresenceChange | None  # None: presence never changed
    damaged: str | None  # why no passphrase proves presence until it is reset
    missing: list[int]  # ledger records missing below the head (the first few)
    ticket: Ticket | None  # the caller's, if it holds one
    can_prove: bool  # whether this caller could ever prove presence
    why_not: str | None  # why it cannot (None: it can)
    ticket_seconds: float  # how long a ticket holds
    per_command: bool  # a proof holds for one command alone
    tiocsti: bool  # the kernel lets a process push keys into its terminal
    failures: Failures


class EndResult(Result, frozen=True, kw_only=True):
    ended: bool  # the caller held a ticket or a proof, and holds none now


class PassphraseSetResult(Result, frozen=True, kw_only=True):
    """``presence.set`` and ``presence.change``: the record written, and the ticket the
    caller now holds."""

    on: bool  # always true
    seq: int  # the ledger record
    ticket: Ticket


class PassphraseRemoveResult(Result, frozen=True, kw_only=True):
    on: bool  # always false
    seq: int  # the ledger record


METHODS = {
    "presence.status": Signature(NoParams, PresenceStatusResult),
    "presence.prove": Signature(PassphraseParams, Ticket),
    "presence.end": Signature(NoParams, EndResult),
    "presence.set": Signature(PassphraseParams, PassphraseSetResult),
    "presence.change": Signature(PassphraseParams, PassphraseSetResult),
    "presence.remove": Signature(NoParams, PassphraseRemoveResult),
}
