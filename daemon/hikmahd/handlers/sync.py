"""``sync.*``: one exchange with the sync folder now, pairing, removal, and its status
(docs/sync.md). Pairing and removal are a person's: an agent session is refused them."""

from __future__ import annotations

from typing import Annotated

import msgspec

from hikmah.model.errors import InvalidInput
from hikmah.model.wire.base import NoParams, Params
from hikmah.sync.device import is_device_id

from ..context import Context
from ..rpc import JSON, Registry, to_json

registry = Registry()


@registry.method("sync.exchange", NoParams)
async def exchange(ctx: Context, params: NoParams) -> JSON:
    """Look at the folder, apply what verifies, publish."""
    return to_json(await ctx.services.syncing.exchange())


@registry.method("sync.invite", NoParams, person="sync invite")
async def invite(ctx: Context, params: NoParams) -> JSON:
    """A one-time code for another device to join with."""
    return await ctx.services.syncing.invite(ctx.person)


class JoinParams(Params, frozen=True):
    code: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


@registry.method("sync.join", JoinParams, person="sync join")
async def join(ctx: Context, params: JoinParams) -> JSON:
    """Pair with the device that printed ``code``."""
    return await ctx.services.syncing.join(params.code, ctx.person)


class RemoveParams(Params, frozen=True):
    device: str
    delete: bool = False

    def check(self) -> None:
        if not is_device_id(self.device):
            raise InvalidInput(
                f"{self.device!r} is not a device id (hikmah sync status lists them)"
            )


@registry.method("sync.remove", RemoveParams, person="sync remove")
async def remove(ctx: Context, params: RemoveParams) -> JSON:
    """Stop trusting a paired device (and, with ``delete``, delete its directory)."""
    return await ctx.services.syncing.remove(params.device, delete=params.delete, person=ctx.person)


class StatusParams(Params, frozen=True):
    verify: bool = False


@registry.method("sync.status", StatusParams)
async def status(ctx: Context, params: StatusParams) -> JSON:
    """The devices, their heads, what is pending, what was refused."""
    return await ctx.services.syncing.status(verify=params.verify)
