"""Every JSON-RPC method of hikmahd: typed params in, the CLI's ``--json`` shapes out."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import trio

from hikmah import __version__, maintenance, queries
from hikmah.errors import HikmahError, InvalidInput, NotFound
from hikmah.focus import FocusCapsule, check_note
from hikmah.ledger import Head
from hikmah.policy import KernelPolicy, render_policy
from hikmah.principal import refuse_in_agent_session
from hikmah.queries import StoredTrace
from hikmah.recall import RecallQuery, RecallResult
from hikmah.rules import Fulfill, Operation, Outcome, Purge, Remember, Written
from hikmah.secrets import check_fields
from hikmah.trace import BaseDraft, Draft
from hikmah.vocabulary import STANDING_KINDS, Kind

from .context import Context
from .rpc import JSON, NoParams, Params, Registry

if TYPE_CHECKING:
    from .daemon import Daemon

registry = Registry()
HOUR_MS = 3_600_000
MAX_HOURS = 24 * 366 * 100  # a century: any further is "everything"


def to_json(value: Any) -> JSON:
    """Structs to plain JSON values (the wire shape)."""
    return msgspec.to_builtins(value)


def outcome_or_raise(outcome: object) -> Any:
    if isinstance(outcome, HikmahError):
        raise outcome
    return outcome


async def submit_all(ctx: Context, operations: Sequence[Operation]) -> list[Outcome]:
    """Submit operations together (so they share commits); their outcomes, in order."""
    outcomes: list[Outcome | None] = [None] * len(operations)

    async def one(position: int, operation: Operation) -> None:
        outcomes[position] = await ctx.daemon.writer.submit(operation)

    async with trio.open_nursery() as nursery:
        for position, operation in enumerate(operations):
            nursery.start_soon(one, position, operation)
    return [outcome for outcome in outcomes if outcome is not None]


@registry.method("memory.remember", BaseDraft)
async def remember(ctx: Context, params: BaseDraft) -> JSON:
    draft = Draft(**msgspec.structs.asdict(params))
    written = outcome_or_raise(
        await ctx.daemon.writer.submit(Remember(draft=draft, session=ctx.session))
    )
    return {"trace": to_json(written.trace), "conflicts": written.conflicts}


class RecallParams(RecallQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    focus: str | None = None  # absorb the results into this focus capsule


@registry.method("memory.recall", RecallParams)
async def recall_(ctx: Context, params: RecallParams) -> JSON:
    daemon = ctx.daemon
    results = await recall_in_turn(ctx, params)
    reply: dict[str, JSON] = {"results": to_json(results)}
    if params.focus is not None:
        capsule = daemon.capsules.open(
            params.focus, daemon.policy.working_set_limit, daemon.now_ms()
        )
        reply["evicted"] = capsule.absorb((r.trace.id, r.score) for r in results)
    return reply


async def recall_in_turn(ctx: Context, query: RecallQuery) -> list[RecallResult]:
    """A recall, waiting first for this connection's previous one: a client that
    queues many recalls takes one turn at a time, not every turn before others."""
    if ctx.connection is None:
        return await ctx.daemon.recall(query)
    async with ctx.connection.recall_turn:
        return await ctx.daemon.recall(query, ctx.connection.unread)


class IdParams(Params, frozen=True):
    id: str


def _stored(entry: StoredTrace) -> JSON:
    return to_json(entry)


@registry.method("memory.show", IdParams)
async def show(ctx: Context, params: IdParams) -> JSON:
    store = ctx.daemon.store
    current = store.read(queries.get, params.id)
    return {
        **_stored(current),
        "history": [_stored(entry) for entry in store.read(queries.history, params.id)],
    }


@registry.method("memory.conflicts", NoParams)
async def conflicts(ctx: Context, params: NoParams) -> JSON:
    return {"conflicts": to_json(ctx.daemon.store.read(queries.conflicts))}


@registry.method("memory.fulfill", IdParams)
async def fulfill(ctx: Context, params: IdParams) -> JSON:
    outcome_or_raise(await ctx.daemon.writer.submit(Fulfill(id=params.id, session=ctx.session)))
    return {"id": params.id, "status": "fulfilled"}


class PurgeParams(Params, frozen=True):
    id: str
    reason: str


@registry.method("memory.purge", PurgeParams)
async def purge(ctx: Context, params: PurgeParams) -> JSON:
    operation = Purge(id=params.id, reason=params.reason, session=ctx.session)
    written: Written = outcome_or_raise(await ctx.daemon.writer.submit(operation))
    gone = "the trace is gone from recall, show, export and every index"
    if written.key_destroyed:
        note = f"{gone}; its data key was destroyed, so its encrypted text is unrecoverable"
    else:
        note = f"{gone}; its text remains in the ledger until you run hikmah compact"
    return {
        "id": params.id,
        "status": "purged",
        "key_destroyed": written.key_destroyed,
        "note": note,
    }


class PromisesParams(Params, frozen=True):
    within_hours: Annotated[float, msgspec.Meta(ge=0, le=MAX_HOURS)] | None = None
    overdue: bool = False


@registry.method("promises.list", PromisesParams)
async def promises(ctx: Context, params: PromisesParams) -> JSON:
    now = ctx.daemon.now_ms()
    until = None
    if params.overdue:
        until = now
    elif params.within_hours is not None:
        until = now + int(params.within_hours * HOUR_MS)
    return {"commitments": _commitments(ctx, until, scope=None)}


def _commitments(ctx: Context, until: int | None, *, scope: str | None) -> list[JSON]:
    """Open commitments due by ``until``, soonest first (only those holding in ``scope``)."""
    now = ctx.daemon.now_ms()
    commitments: list[JSON] = []
    for entry in ctx.daemon.store.read(queries.commitments, until_ms=until):
        if scope is not None and entry.trace.scope not in ("global", scope):
            continue
        deadline = entry.trace.deadline
        assert deadline is not None
        commitments.append(
            {**_stored(entry), "overdue": deadline <= now, "due_in_ms": deadline - now}
        )
    return commitments


class ContextParams(Params, frozen=True):
    scope: str | None = None  # e.g. project:/path; global traces are always included
    kinds: tuple[Kind, ...] = STANDING_KINDS
    verified_only: bool = False
    within_hours: Annotated[float, msgspec.Meta(ge=0, le=MAX_HOURS)] = 24.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20


@registry.method("memory.context", ContextParams)
async def context(ctx: Context, params: ContextParams) -> JSON:
    """What a session should start with: standing rules, commitments due soon, open conflicts."""
    store = ctx.daemon.store
    standing = store.read(
        queries.standing,
        kinds=params.kinds,
        scope=params.scope,
        verified_only=params.verified_only,
        limit=params.limit,
    )
    until = ctx.daemon.now_ms() + int(params.within_hours * HOUR_MS)
    return {
        "scope": params.scope or "global",
        "standing": [_stored(entry) for entry in standing],
        "commitments": _commitments(ctx, until, scope=params.scope),
        "conflicts": to_json(store.read(queries.conflicts)),
    }


class VerifyParams(Params, frozen=True):
    expect_head: str | None = None
    accept_tail: bool = False
    reset_head: bool = False


@registry.method("ledger.verify", VerifyParams)
async def verify(ctx: Context, params: VerifyParams) -> JSON:
    chosen = [params.expect_head is not None, params.accept_tail, params.reset_head]
    if sum(chosen) > 1:
        raise InvalidInput("expect_head, accept_tail and reset_head exclude each other")
    store = ctx.daemon.store
    if params.accept_tail or params.reset_head:
        refuse_in_agent_session(
            ctx.session,
            "verify-ledger --accept-tail" if params.accept_tail else "verify-ledger --reset-head",
        )
        move = maintenance.accept_tail if params.accept_tail else maintenance.reset_head
        report = await ctx.daemon.writer.exclusive(lambda: move(store))
        await ctx.daemon.reminders.reload()  # accepted records may hold commitments
    else:
        pinned = None if params.expect_head is None else parse_head(params.expect_head)
        report = maintenance.verify(store, expect_head=pinned)
    return to_json(report)


@registry.method("ledger.compact", NoParams)
async def compact(ctx: Context, params: NoParams) -> JSON:
    """Rewrite the ledger without purged text, re-chained, the old head recorded (a person only)."""
    refuse_in_agent_session(ctx.session, "compact")
    daemon = ctx.daemon
    done = await daemon.writer.exclusive(lambda: maintenance.compact(daemon.store, daemon.now_ms()))
    await daemon.reminders.reload()
    return to_json(done)


def parse_head(text: str) -> Head:
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or len(digest) != 64:
        raise InvalidInput("expect_head must be SEQ:HASH, as verify-ledger prints the head")
    return Head(seq=int(seq), hash=digest)


class PolicyParams(Params, frozen=True):
    defaults: bool = False


@registry.method("policy.get", PolicyParams)
async def policy(ctx: Context, params: PolicyParams) -> JSON:
    daemon = ctx.daemon
    chosen = KernelPolicy() if params.defaults else daemon.policy
    return {
        "toml": render_policy(chosen),
        "path": str(daemon.policy_path),
        "error": daemon.policy_error,
    }


@registry.method("daemon.status", NoParams)
async def status(ctx: Context, params: NoParams) -> JSON:
    daemon = ctx.daemon
    store = daemon.store
    report_head = store.head
    now = daemon.now_ms()
    queue = store.read(queries.commitments)
    return {
        "pid": os.getpid(),
        "version": __version__,
        "uptime_s": round(time.monotonic() - daemon.started, 3),
        "socket": str(daemon.socket_path),
        "data_dir": str(store.data_dir),
        "counts": store.read(queries.counts),
        "head": None if report_head is None else to_json(report_head),
        "policy": {"path": str(daemon.policy_path), "error": daemon.policy_error},
        "vault": daemon.vault is not None,
        "reminders": {
            "scheduled": len(queue),
            "overdue": sum(1 for e in queue if (e.trace.deadline or 0) <= now),
            "next": None if not queue else to_json(queue[0].trace),
        },
        "principal": None if ctx.session is None else to_json(ctx.session),
        "focus": [capsule_summary(daemon, name) for name in daemon.capsules.names()],
        "subscribers": len(daemon.events),
    }


@registry.method("events.subscribe", NoParams)
async def subscribe(ctx: Context, params: NoParams) -> JSON:
    assert ctx.connection is not None
    daemon = ctx.daemon
    fresh = ctx.connection.subscribe(daemon.events, daemon.reminders.replay(daemon.now_ms()))
    return {
        "subscribed": True,
        "already": not fresh,
        "events": ["reminder.due", "memory.changed"],
    }


class FocusName(Params, frozen=True):
    name: str


class FocusTrace(Params, frozen=True):
    name: str
    id: str


class FocusAbsorb(RecallQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str


class FocusNote(Params, frozen=True):
    name: str
    text: str
    importance: float = 0.5


def capsule_summary(daemon: Daemon, name: str) -> JSON:
    now = daemon.now_ms()
    entry = daemon.capsules.peek(name)
    return {
        "name": name,
        "size": len(entry.held),
        "limit": entry.limit,
        "pinned": sum(h.pinned for h in entry.held.values()),
        "notes": len(entry.notes),
        "idle_s": daemon.capsules.idle_ms(name, now) // 1000,
    }


def capsule_view(daemon: Daemon, capsule: FocusCapsule) -> JSON:
    """A capsule with its traces resolved (purged ones dropped), most activated first."""
    traces, gone = [], []
    for held in capsule.ordered():
        try:
            stored = daemon.store.read(queries.get, held.id)
        except NotFound:
            capsule.held.pop(held.id, None)
            gone.append(held.id)
            continue
        traces.append({**to_json(stored), "activation": held.activation, "pinned": held.pinned})
    return {
        "name": capsule.name,
        "limit": capsule.limit,
        "traces": traces,
        "notes": to_json(capsule.notes),
        "purged": gone,
    }


@registry.method("focus.open", FocusName)
async def focus_open(ctx: Context, params: FocusName) -> JSON:
    daemon = ctx.daemon
    capsule = daemon.capsules.open(params.name, daemon.policy.working_set_limit, daemon.now_ms())
    return capsule_view(daemon, capsule)


@registry.method("focus.read", FocusName)
async def focus_read(ctx: Context, params: FocusName) -> JSON:
    return capsule_view(ctx.daemon, ctx.daemon.capsules.get(params.name, ctx.daemon.now_ms()))


@registry.method("focus.absorb", FocusAbsorb)
async def focus_absorb(ctx: Context, params: FocusAbsorb) -> JSON:
    daemon = ctx.daemon
    capsule = daemon.capsules.open(params.name, daemon.policy.working_set_limit, daemon.now_ms())
    results = await recall_in_turn(ctx, params)
    evicted = capsule.absorb((r.trace.id, r.score) for r in results)
    return {
        **capsule_view(daemon, capsule),
        "absorbed": [r.trace.id for r in results],
        "evicted": evicted,
    }


@registry.method("focus.pin", FocusTrace)
async def focus_pin(ctx: Context, params: FocusTrace) -> JSON:
    capsule = ctx.daemon.capsules.get(params.name, ctx.daemon.now_ms())
    ctx.daemon.store.read(queries.get, params.id)  # NotFound for an unknown or purged trace
    evicted = capsule.pin(params.id)
    return {**capsule_view(ctx.daemon, capsule), "evicted": evicted}


@registry.method("focus.unpin", FocusTrace)
async def focus_unpin(ctx: Context, params: FocusTrace) -> JSON:
    capsule = ctx.daemon.capsules.get(params.name, ctx.daemon.now_ms())
    evicted = capsule.unpin(params.id)
    return {**capsule_view(ctx.daemon, capsule), "evicted": evicted}


@registry.method("focus.note", FocusNote)
async def focus_note(ctx: Context, params: FocusNote) -> JSON:
    check_fields([("text", params.text)])
    check_note(params.text, params.importance)  # before a capsule is made for it
    daemon = ctx.daemon
    capsule = daemon.capsules.open(params.name, daemon.policy.working_set_limit, daemon.now_ms())
    evicted = capsule.note(params.text, params.importance, daemon.now_ms())
    return {"name": capsule.name, "notes": to_json(capsule.notes), "evicted": to_json(evicted)}


@registry.method("focus.close", FocusName)
async def focus_close(ctx: Context, params: FocusName) -> JSON:
    ctx.daemon.capsules.close(params.name)
    return {"name": params.name, "closed": True}


@registry.method("focus.list", NoParams)
async def focus_list(ctx: Context, params: NoParams) -> JSON:
    daemon = ctx.daemon
    return {"capsules": [capsule_summary(daemon, name) for name in daemon.capsules.names()]}


class RestrictParams(Params, frozen=True):
    host: str
    session_id: str | None = None


@registry.method("session.restrict", RestrictParams)
async def restrict(ctx: Context, params: RestrictParams) -> JSON:
    """Lower this connection (and every later one of this process) to agent privileges."""
    session = ctx.daemon.restrict(ctx, params.host, params.session_id)
    return {"restricted": True, "principal": to_json(session)}
