"""``sync.*``: one exchange with the sync folder now, pairing, removal, and its status
(docs/sync.md). Pairing and removal are a person's: an agent session is refused them."""

from __future__ import annotations

from hikmah.model.wire.base import NoParams
from hikmah.model.wire.sync import (
    ExchangeResult,
    InviteResult,
    JoinParams,
    JoinResult,
    RemoveParams,
    RemoveResult,
    SyncStatusParams,
    SyncStatusResult,
)

from ..context import Context
from ..rpc import Registry

registry = Registry()


@registry.method("sync.exchange")
async def exchange(ctx: Context, params: NoParams) -> ExchangeResult:
    """Look at the folder, apply what verifies, publish."""
    return await ctx.services.syncing.exchange()


@registry.method("sync.invite", person="sync invite")
async def invite(ctx: Context, params: NoParams) -> InviteResult:
    """A one-time code for another device to join with."""
    return await ctx.services.syncing.invite(ctx.person)


@registry.method("sync.join", person="sync join")
async def join(ctx: Context, params: JoinParams) -> JoinResult:
    """Pair with the device that printed ``code``."""
    return await ctx.services.syncing.join(params.code, ctx.person)


@registry.method("sync.remove", person="sync remove")
async def remove(ctx: Context, params: RemoveParams) -> RemoveResult:
    """Stop trusting a paired device (and, with ``delete``, delete its directory)."""
    return await ctx.services.syncing.remove(params.device, delete=params.delete, person=ctx.person)


@registry.method("sync.status")
async def status(ctx: Context, params: SyncStatusParams) -> SyncStatusResult:
    """The devices, their heads, what is pending, what was refused."""
    return await ctx.services.syncing.status(verify=params.verify)
