"""``ledger.*``: verify the hash chains (this device's, the paired devices' it keeps, and
the sync folder's), accept a tail or reset the head, compact."""

from __future__ import annotations

import msgspec

from hikmah.ledger.chain import Head
from hikmah.model.errors import InvalidInput
from hikmah.model.headtext import parse_head
from hikmah.model.wire.base import NoParams, Params
from hikmah.store import maintenance

from ..context import Context
from ..rpc import JSON, Registry, to_json

registry = Registry()


class VerifyParams(Params, frozen=True):
    expect_head: str | None = None
    accept_tail: bool = False
    reset_head: bool = False

    def check(self) -> None:
        chosen = [self.expect_head is not None, self.accept_tail, self.reset_head]
        if sum(chosen) > 1:
            raise InvalidInput("expect_head, accept_tail and reset_head exclude each other")


def _moves_the_head(params: VerifyParams) -> str | None:
    if params.accept_tail:
        return "verify-ledger --accept-tail"
    return "verify-ledger --reset-head" if params.reset_head else None


@registry.method("ledger.verify", VerifyParams, person=_moves_the_head)
async def verify(ctx: Context, params: VerifyParams) -> JSON:
    services = ctx.services
    if params.accept_tail or params.reset_head:
        move = maintenance.accept_tail if params.accept_tail else maintenance.reset_head
        report = await services.writer.exclusive(move)
        await services.reminders.reload()  # accepted records may hold commitments
    else:
        pinned = None if params.expect_head is None else Head(*parse_head(params.expect_head))
        report = await services.writer.exclusive(
            lambda store: maintenance.verify(store, expect_head=pinned)
        )
    if services.syncing.folder is not None:
        # Every chain published in the sync folder, checked whole (docs/sync.md).
        found = [f"sync folder: {f.device}: {f.why}" for f in await services.syncing.audit()]
        if found:
            report = msgspec.structs.replace(report, ok=False, errors=[*report.errors, *found])
    return to_json(report)


@registry.method("ledger.compact", NoParams, person="compact")
async def compact(ctx: Context, params: NoParams) -> JSON:
    """Rewrite the ledger without purged text, re-chained, the old head recorded."""
    now = ctx.services.now_ms()
    done = await ctx.services.writer.exclusive(lambda store: maintenance.compact(store, now))
    await ctx.services.reminders.reload()
    return to_json(done)
