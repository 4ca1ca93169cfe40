"""``ledger.*``: verify the hash chains (this device's, the paired devices' it keeps, and
the sync folder's), accept a tail or reset the head, compact."""

from __future__ import annotations

import msgspec

from hikmah.model.head import Head
from hikmah.model.headtext import parse_head
from hikmah.model.wire.base import NoParams
from hikmah.model.wire.ledger import CompactResult, VerifyParams, VerifyResult
from hikmah.store import maintenance

from ..context import Context
from ..rpc import Registry

registry = Registry()


def _moves_the_head(params: VerifyParams) -> str | None:
    if params.accept_tail:
        return "verify-ledger --accept-tail"
    return "verify-ledger --reset-head" if params.reset_head else None


@registry.method("ledger.verify", person=_moves_the_head)
async def verify(ctx: Context, params: VerifyParams) -> VerifyResult:
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
    return report


@registry.method("ledger.compact", person="compact")
async def compact(ctx: Context, params: NoParams) -> CompactResult:
    """Rewrite the ledger without purged text, re-chained, the old head recorded."""
    now = ctx.services.now_ms()
    done = await ctx.services.writer.exclusive(lambda store: maintenance.compact(store, now))
    await ctx.services.reminders.reload()
    return done
