"""The one exception hierarchy of Hikmah, and every reason it publishes.

Every error the kernel or the daemon raises on purpose is a
:class:`HikmahError` carrying a stable ``reason`` string, and each reason is
defined here with the :data:`Category` it belongs to (:data:`REASONS`). The
daemon's dispatcher maps reasons to JSON-RPC error codes and the CLI maps
categories to exit codes, so a reason, once published, never changes.
Messages are written for the person reading them: they say what was refused
and what to do instead, and never echo a secret.

Standard library only: the CLI imports this to turn an error's reason into
its exit code.
"""

from __future__ import annotations

from typing import ClassVar, Literal

# What kind of failure a reason is, for whoever must react to it: the caller's
# input is wrong, the operation was refused (a rule, a restriction, the policy),
# something named does not exist, the daemon cannot serve, or it failed.
Category = Literal["invalid", "refused", "not_found", "unavailable", "failed"]


class HikmahError(Exception):
    """Base of every error Hikmah raises on purpose."""

    reason: ClassVar[str] = "internal"


class InvalidInput(HikmahError):
    """A value is malformed or out of range (empty content, salience 1.5, a bad deadline)."""

    reason = "invalid"


class TooLarge(HikmahError):
    """A frame is over the size limit; it was skipped."""

    reason = "too_large"


class SecretDetected(HikmahError):
    """A writer-controlled field looks like a credential; nothing was written."""

    reason = "secret_detected"


class ProvenanceRefused(HikmahError):
    """A write breaks a provenance rule (a model verifying itself, an unverified trace
    superseding a verified one, ...)."""

    reason = "provenance"


class AgentRestricted(HikmahError):
    """The caller is a coding-agent session and the operation needs a person."""

    reason = "agent_restricted"


class PresenceRequired(HikmahError):
    """Person presence is on, and the caller holds no proof of it for this action."""

    reason = "presence_required"


class PresenceDenied(HikmahError):
    """A proof of presence was refused: a wrong passphrase, too many attempts, or a caller
    that cannot prove (no terminal of its own)."""

    reason = "presence_denied"


class Forbidden(HikmahError):
    """The peer is another user: the daemon serves only its own."""

    reason = "forbidden"


class PolicyError(HikmahError):
    """The policy forbids the operation, or a policy file is invalid."""

    reason = "policy"


class ConflictError(HikmahError):
    """The operation conflicts with current state (superseding a trace that is no
    longer active, writing while the ledger has an unacknowledged tail)."""

    reason = "conflict"


class NotFound(HikmahError):
    """No trace (or proposal, or record) has that id."""

    reason = "not_found"


class Unavailable(HikmahError):
    """The daemon cannot take the request (it is stopping); nothing was done."""

    reason = "unavailable"


class StoreFull(HikmahError):
    """The LMDB map or the disk is full; the write was not made."""

    reason = "store_full"


class LedgerError(HikmahError):
    """The ledger or its head cannot be read or does not verify."""

    reason = "ledger"


# Every published reason and its category. An error defined in another module
# subclasses one of the classes above and keeps or picks one of these reasons.
REASONS: dict[str, Category] = {
    "invalid": "invalid",
    "too_large": "invalid",
    "secret_detected": "refused",
    "provenance": "refused",
    "agent_restricted": "refused",
    "presence_required": "refused",
    "presence_denied": "refused",
    "forbidden": "refused",
    "policy": "refused",
    "conflict": "refused",
    "not_found": "not_found",
    "unavailable": "unavailable",
    "store_full": "failed",
    "ledger": "failed",
    "internal": "failed",
}
