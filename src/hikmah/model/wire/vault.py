"""``vault.*``: the vault's state, and rotating its keys."""

from __future__ import annotations

import msgspec

from hikmah.model.wire.base import NoParams, Result, Signature


class VaultStatusResult(Result, frozen=True, kw_only=True):
    """Whether the vault is on, and which keys it uses (key ids only, never keys); off,
    only ``vault_id`` may be known (the store was sealed once)."""

    enabled: bool
    backend: str | None = None  # the keyring backend holding the master key
    vault_id: str | None = None  # the store's vault
    master_id: str | None = None  # the master key in force
    index_id: str | None = None  # the key of the sealed index
    # Master keys a rotation has not finished with.
    retiring: list[str] = msgspec.field(default_factory=list)
    missing: list[str] = msgspec.field(default_factory=list)  # keys gone from the keyring


class RotateResult(Result, frozen=True, kw_only=True):
    rewrapped: int  # data keys re-wrapped under the new master key
    old_master_id: str | None  # the master key replaced (then deleted)
    master_id: str  # the new master key


METHODS = {
    "vault.status": Signature(NoParams, VaultStatusResult),
    "vault.rotate": Signature(NoParams, RotateResult),
}
