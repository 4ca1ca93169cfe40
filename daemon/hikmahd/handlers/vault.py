"""``vault.*``: which keys the vault uses, and rotating its master key."""

from __future__ import annotations

from hikmah.model.wire.base import NoParams
from hikmah.model.wire.vault import RotateResult, VaultStatusResult
from hikmah.vault.crypto import VaultError

from ..context import Context
from ..rpc import Registry
from ..vaulting import VAULT_OFF

registry = Registry()


@registry.method("vault.status")
async def status(ctx: Context, params: NoParams) -> VaultStatusResult:
    """Whether the vault is on, and which keys it uses (key ids only, never keys)."""
    vault, vault_id = ctx.services.vault, ctx.services.store.vault_id
    keys = None if vault is None else vault.keys
    if vault is None or keys is None:
        return VaultStatusResult(enabled=False, vault_id=vault_id)
    return VaultStatusResult(
        enabled=True,
        backend=vault.backend,
        vault_id=vault_id,
        master_id=keys.master_id,
        index_id=keys.index_id,
        retiring=sorted(keys.retiring),
        missing=list(keys.missing),
    )


@registry.method("vault.rotate", person="rotate the vault's keys")
async def rotate(ctx: Context, params: NoParams) -> RotateResult:
    """Re-wrap every data key under a new master key."""
    vault = ctx.services.vault
    if vault is None:
        raise VaultError(VAULT_OFF)
    old = None if vault.keys is None else vault.keys.master_id
    count = await ctx.services.writer.exclusive(vault.rotate)
    assert vault.keys is not None
    return RotateResult(rewrapped=count, old_master_id=old, master_id=vault.keys.master_id)
