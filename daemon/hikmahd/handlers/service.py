"""The daemon itself and the caller's connection: ``daemon.status``, ``daemon.backup``,
``daemon.stop``, ``policy.get``, ``events.subscribe``, ``session.restrict``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec

from hikmah import __version__
from hikmah.index import queries, review
from hikmah.model.errors import InvalidInput
from hikmah.model.policy import KernelPolicy, render_policy
from hikmah.model.wire.base import NoParams
from hikmah.model.wire.service import (
    BackupParams,
    BackupResult,
    DaemonStatusResult,
    PolicyFile,
    PolicyParams,
    PolicyResult,
    Reminders,
    RestrictParams,
    RestrictResult,
    StopResult,
    SubscribeResult,
    Waiting,
)

from .. import backup
from ..context import Context
from ..rpc import Registry
from .presence import report

registry = Registry()


@registry.method("daemon.status", early=True)
async def status(ctx: Context, params: NoParams) -> DaemonStatusResult:
    services = ctx.services
    store, policies = services.store, services.policies
    head = store.head
    now = services.now_ms()

    def read() -> tuple[Reminders, dict[str, int], int]:
        with store.snapshot() as snapshot:
            return (
                queries.queue(snapshot, now, ctx.hides),
                queries.counts(snapshot),
                review.waiting(snapshot, services.policy.review),
            )

    # Off the loop: in the first moments of a start the feature columns are still being
    # read (a tenth of a second at a million traces), and this waits for them.
    reminders, counts, waiting = await services.offload(read)
    # Served in the first moments of a start too, while presence is read from the
    # ledger: it is not waited for (that takes seconds at a million records) but named.
    presence = report(ctx) if store.presence_read else None
    return DaemonStatusResult(
        pid=os.getpid(),
        version=__version__,
        uptime_s=round(time.monotonic() - services.started, 3),
        socket=str(services.socket_path),
        data_dir=str(store.data_dir),
        counts=counts,
        head=head,
        policy=PolicyFile(path=str(policies.path), error=policies.error),
        vault=services.vault is not None,
        semantic=services.semantics.status(),
        reminders=reminders,
        review=Waiting(waiting=waiting),
        principal=ctx.agent,
        focus=[services.capsules.summary(name, now) for name in services.capsules.names()],
        subscribers=len(services.events),
        presence=presence,
        loading=None if presence is not None else ["presence"],
    )


@registry.method("daemon.backup")
async def backup_(ctx: Context, params: BackupParams) -> BackupResult:
    """A consistent copy of the store and its head into an empty directory, while serving."""
    target = Path(params.dir)
    if not target.is_absolute():
        raise InvalidInput("give the backup directory as an absolute path")
    services = ctx.services
    if target.resolve().is_relative_to(services.store.data_dir.resolve()):
        raise InvalidInput("a backup goes outside the data directory it copies")
    await services.offload(lambda: backup.prepare_dir(target))
    pinned = await services.writer.exclusive(backup.pin)
    try:
        now = services.now_ms()
        manifest = await services.offload(lambda: backup.write_backup(pinned, target, now))
    finally:
        pinned.close()
    return BackupResult(dir=str(target), **msgspec.structs.asdict(manifest))


@registry.method("daemon.stop", person="stop the daemon")
async def stop(ctx: Context, params: NoParams) -> StopResult:
    """Stop as on SIGTERM: no new connection, every queued write committed, this reply
    and the others in flight given their grace, exit 0."""
    services = ctx.services
    services.stop(f"at the request of pid {ctx.peer.pid}")
    return StopResult(pid=os.getpid(), socket_activated=services.socket_activated)


@registry.method("policy.get")
async def policy(ctx: Context, params: PolicyParams) -> PolicyResult:
    policies = ctx.services.policies
    chosen = KernelPolicy() if params.defaults else policies.policy
    return PolicyResult(
        toml=render_policy(chosen),
        defaults=params.defaults,
        path=str(policies.path),
        exists=policies.path.exists(),
        error=policies.error,
    )


@registry.method("events.subscribe")
async def subscribe(ctx: Context, params: NoParams) -> SubscribeResult:
    assert ctx.line is not None
    services = ctx.services
    fresh = ctx.line.subscribe(services.events, services.reminders.replay(services.now_ms()))
    return SubscribeResult(
        subscribed=True, already=not fresh, events=["reminder.due", "memory.changed"]
    )


@registry.method("session.restrict")
async def restrict(ctx: Context, params: RestrictParams) -> RestrictResult:
    """Lower this connection (and every later one of this process) to agent privileges."""
    return RestrictResult(restricted=True, principal=ctx.restrict(params.host, params.session_id))
