"""The one exception hierarchy of Hikmah.

Every error the kernel raises is a :class:`HikmahError` carrying a stable
``reason`` string. The daemon's dispatcher maps reasons to JSON-RPC error
codes and the CLI maps them to exit codes, so a reason, once published, never
changes. Messages are written for the person reading them: they say what was
refused and what to do instead, and never echo a secret.
"""

from __future__ import annotations


class HikmahError(Exception):
    """Base of every error Hikmah raises on purpose."""

    reason = "internal"


class InvalidInput(HikmahError):
    """A value is malformed or out of range (empty content, salience 1.5, a bad deadline)."""

    reason = "invalid"


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


class NotFound(HikmahError):
    """No trace (or proposal, or record) has that id."""

    reason = "not_found"


class PolicyError(HikmahError):
    """The policy forbids the operation, or a policy file is invalid."""

    reason = "policy"


class ConflictError(HikmahError):
    """The operation conflicts with current state (superseding a trace that is no
    longer active, writing while the ledger has an unacknowledged tail)."""

    reason = "conflict"


class StoreFull(HikmahError):
    """The LMDB map or the disk is full; the write was not made."""

    reason = "store_full"


class LedgerError(HikmahError):
    """The ledger or its head cannot be read or does not verify."""

    reason = "ledger"
