"""Person presence: the passphrase's Argon2id hash, and whether presence is on, as the
ledger says.

Presence is off until a person sets a passphrase; from then on every action only
a person may take needs a fresh proof that one is there (docs/security.md,
"Person presence"). Turning it on or off and changing the passphrase are
ledger records (:class:`~hikmah.ledger.payloads.PresencePayload`), so the state is
:func:`read_state` of the ledger up to its acknowledged head, and a presence
record changed behind the store's back leaves presence *damaged*: on, with no
passphrase that works, until a person resets it (``hikmahd --reset-passphrase``).
The passphrase itself is never stored: only its Argon2id hash (``argon2-cffi``),
checked here. Proofs and their tickets are the daemon's (``hikmahd.tickets``).
"""

from __future__ import annotations

from collections.abc import Iterable

import argon2
import msgspec

from hikmah.ledger.chain import GENESIS, Record, decode_record, link_problem
from hikmah.ledger.payloads import PresencePayload, decode_payload
from hikmah.model.errors import InvalidInput, LedgerError
from hikmah.model.wire.presence import MAX_PASSPHRASE

MIN_PASSPHRASE = 8
# argon2-cffi's defaults (RFC 9106's second recommendation, 64 MiB): about 0.1 s here.
_HASHER = argon2.PasswordHasher()
# How a presence record begins in a ledger line: a quick filter before decoding.
_MARKER = b'"payload":{"type":"presence"'


class PresenceState(msgspec.Struct, frozen=True, kw_only=True):
    """Person presence as the ledger says, up to its acknowledged head.

    Attributes:
        hash: The passphrase's Argon2id hash in force; None when presence is off.
        seq: The ledger record that last changed presence (None: never).
        action: What that record did (``set``, ``change``, ``remove``, ``reset``).
        at: When (epoch ms).
        damaged: Why presence cannot be checked (a presence record that no longer
            verifies); presence is then on and no passphrase proves it.
        missing: Ledger records missing below the head (their seq numbers, the
            first few): whatever they said, presence among it, was removed.
    """

    hash: str | None = None
    key: bytes | None = None  # the person key's public half (hikmah.access.person)
    salt: bytes | None = None  # what it is derived with, from the passphrase
    seq: int | None = None
    action: str | None = None
    at: int | None = None
    damaged: str | None = None
    missing: tuple[int, ...] = ()

    @property
    def on(self) -> bool:
        """Whether person-only actions need a proof of presence."""
        return self.hash is not None or self.damaged is not None


OFF = PresenceState()
_SHOWN_MISSING = 5


def after(payload: PresencePayload, seq: int) -> PresenceState:
    """The state a presence record leaves."""
    return PresenceState(
        hash=payload.hash,
        key=payload.key,
        salt=payload.salt,
        seq=seq,
        action=payload.action,
        at=payload.at,
    )


def read_state(records: Iterable[tuple[int, bytes]], head: int | None) -> PresenceState:
    """Presence as the records up to ``head`` (a seq; None: all of them) leave it.

    Each presence record must still continue the chain and carry its own hash, and so
    must the record after it: one that does not was changed behind the store's back,
    and presence is then damaged (on, and locked) rather than whatever it now says.

    Args:
        records: ``(seq, line)`` in key order, as the store holds them.
        head: The acknowledged head's seq; records past it are an unaccepted tail.
    """
    state = OFF
    missing: list[int] = []
    expected = 1
    previous: bytes | None = None
    check_next: Record | None = None
    for seq, line in records:
        if head is not None and seq > head:
            break
        missing.extend(range(expected, min(seq, expected + _SHOWN_MISSING)))
        expected = seq + 1
        if check_next is not None:
            state = _linked(state, check_next, line)
            check_next = None
        if _MARKER in line:
            state, check_next = _presence_record(state, seq, previous, line)
        previous = line
    if head is not None and expected <= head:
        missing.extend(range(expected, min(head + 1, expected + _SHOWN_MISSING)))
    if missing:
        state = msgspec.structs.replace(state, missing=tuple(missing[:_SHOWN_MISSING]))
    return state


def _presence_record(
    state: PresenceState, seq: int, previous: bytes | None, line: bytes
) -> tuple[PresenceState, Record | None]:
    """The state after the presence record ``line``, and the record the next one must
    continue (None when this one is already known to be damaged)."""
    try:
        record = decode_record(line)
        payload = decode_payload(record)
        prev_hash = GENESIS if previous is None else decode_record(previous).hash
        problem = link_problem(record, seq, prev_hash)
    except LedgerError as exc:
        return _damaged(seq, str(exc)), None
    if problem is not None:
        return _damaged(seq, problem), None
    if not isinstance(payload, PresencePayload):
        return state, None  # the marker inside another payload's text (cannot, but cheap)
    return after(payload, seq), record


def _linked(state: PresenceState, record: Record, line: bytes) -> PresenceState:
    """``state``, unless the record after a presence record does not continue from it."""
    try:
        following = decode_record(line)
    except LedgerError as exc:
        return _damaged(record.seq, f"the record after it cannot be read: {exc}")
    if following.prev_hash != record.hash:
        return _damaged(record.seq, f"seq {following.seq} no longer continues from it")
    return state


def _damaged(seq: int, problem: str) -> PresenceState:
    return PresenceState(
        seq=seq,
        damaged=f"the presence record at seq {seq} was changed behind hikmahd's back ({problem})",
    )


def hash_passphrase(passphrase: str) -> str:
    """The Argon2id hash of a new passphrase (a PHC string with its salt and costs).

    Raises:
        InvalidInput: it is shorter than :data:`MIN_PASSPHRASE` characters or longer
            than :data:`MAX_PASSPHRASE`.
    """
    if len(passphrase) < MIN_PASSPHRASE:
        raise InvalidInput(f"a passphrase has at least {MIN_PASSPHRASE} characters")
    if len(passphrase) > MAX_PASSPHRASE:
        raise InvalidInput(f"a passphrase has at most {MAX_PASSPHRASE} characters")
    return _HASHER.hash(passphrase)


def check_passphrase(hashed: str, passphrase: str) -> bool:
    """Whether ``passphrase`` is the one ``hashed`` was made from (constant work either
    way; a hash that does not parse proves nothing)."""
    try:
        return _HASHER.verify(hashed, passphrase)
    except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
        return False
