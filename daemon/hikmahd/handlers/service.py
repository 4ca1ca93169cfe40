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
from hikmah.model.wire.base import NoParams, Params

from .. import backup
from ..context import Context
from ..rpc import JSON, Registry, to_json
from .presence import report

registry = Registry()


@registry.method("daemon.status", NoParams, early=True)
async def status(ctx: Context, params: NoParams) -> JSON:
    services = ctx.services
    store, policies = services.store, services.policies
    head = store.head
    now = services.now_ms()

    def read() -> tuple[queries.Queue, dict[str, int], int]:
        with store.snapshot() as snapshot:
            return (
                queries.queue(snapshot, now, ctx.hides),
                queries.counts(snapshot),
                review.waiting(snapshot, services.policy.review),
            )

    # Off the loop: in the first moments of a start the feature columns are still being
    # read (a tenth of a second at a million traces), and this waits for them.
    queue, counts, waiting = await services.offload(read)
    reply: dict[str, JSON] = {
        "pid": os.getpid(),
        "version": __version__,
        "uptime_s": round(time.monotonic() - services.started, 3),
        "socket": str(services.socket_path),
        "data_dir": str(store.data_dir),
        "counts": counts,
        "head": None if head is None else to_json(head),
        "policy": {"path": str(policies.path), "error": policies.error},
        "vault": services.vault is not None,
        "semantic": services.semantics.status(),
        "reminders": {
            "scheduled": queue.scheduled,
            "overdue": queue.overdue,
            "next": None if queue.next is None else to_json(queue.next),
        },
        "review": {"waiting": waiting},
        "principal": None if ctx.agent is None else to_json(ctx.agent),
        "focus": [services.capsules.summary(name, now) for name in services.capsules.names()],
        "subscribers": len(services.events),
    }
    # Served in the first moments of a start too, while presence is read from the
    # ledger: it is not waited for (that takes seconds at a million records) but named.
    if store.presence_read:
        reply["presence"] = report(ctx)
    else:
        reply["loading"] = ["presence"]
    return reply


class BackupParams(Params, frozen=True):
    dir: str  # absolute: the daemon does not share the client's working directory


@registry.method("daemon.backup", BackupParams)
async def backup_(ctx: Context, params: BackupParams) -> JSON:
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
    return {"dir": str(target), **to_json(manifest)}


class StopResult(msgspec.Struct, frozen=True):
    pid: int  # the daemon's process: a client waits for it to exit
    # systemd passed the socket: its socket unit starts a daemon again on the next connection
    socket_activated: bool


@registry.method("daemon.stop", NoParams, person="stop the daemon")
async def stop(ctx: Context, params: NoParams) -> JSON:
    """Stop as on SIGTERM: no new connection, every queued write committed, this reply
    and the others in flight given their grace, exit 0."""
    services = ctx.services
    services.stop(f"at the request of pid {ctx.peer.pid}")
    return to_json(StopResult(pid=os.getpid(), socket_activated=services.socket_activated))


class PolicyParams(Params, frozen=True):
    defaults: bool = False


@registry.method("policy.get", PolicyParams)
async def policy(ctx: Context, params: PolicyParams) -> JSON:
    policies = ctx.services.policies
    chosen = KernelPolicy() if params.defaults else policies.policy
    return {
        "toml": render_policy(chosen),
        "defaults": params.defaults,
        "path": str(policies.path),
        "exists": policies.path.exists(),
        "error": policies.error,
    }


@registry.method("events.subscribe", NoParams)
async def subscribe(ctx: Context, params: NoParams) -> JSON:
    assert ctx.line is not None
    services = ctx.services
    fresh = ctx.line.subscribe(services.events, services.reminders.replay(services.now_ms()))
    return {
        "subscribed": True,
        "already": not fresh,
        "events": ["reminder.due", "memory.changed"],
    }


class RestrictParams(Params, frozen=True):
    host: str
    session_id: str | None = None


@registry.method("session.restrict", RestrictParams)
async def restrict(ctx: Context, params: RestrictParams) -> JSON:
    """Lower this connection (and every later one of this process) to agent privileges."""
    session = ctx.restrict(params.host, params.session_id)
    return {"restricted": True, "principal": to_json(session)}
