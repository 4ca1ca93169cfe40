"""``presence.*``: person presence. A passphrase turns it on; a proof of it gives the
terminal that typed it a ticket for the actions only a person may take.

Which actions those are is declared where each method is registered
(``person=``) and in the write rules; the dispatcher and the rules check them
against :attr:`Context.session <hikmahd.context.Context.session>`, which
presence shapes. These methods only set the passphrase and hand out tickets.
"""

from __future__ import annotations

import logging

from hikmah.access.person import PersonKey, new_salt
from hikmah.access.presence import PresenceState, check_passphrase, hash_passphrase
from hikmah.access.principal import restriction_message
from hikmah.model.errors import AgentRestricted, ConflictError, PresenceDenied
from hikmah.model.wire.base import NoParams
from hikmah.model.wire.presence import (
    EndResult,
    Failures,
    PassphraseParams,
    PassphraseRemoveResult,
    PassphraseSetResult,
    PresenceChange,
    PresenceStatusResult,
    Ticket,
)
from hikmah.rules.operations import SetPresence

from ..context import Context
from ..peers import Terminal
from ..rpc import Registry
from ..tickets import per_command, process_of, tiocsti_allowed

log = logging.getLogger(__name__)
registry = Registry()

_RESET = (
    "A person who forgot the passphrase stops hikmahd and runs hikmahd --reset-passphrase"
    " in a terminal (docs/security.md, 'A forgotten passphrase')"
)


def report(ctx: Context) -> PresenceStatusResult:
    """Presence as ``presence.status`` (and ``daemon.status``) tell it to this caller."""
    services = ctx.services
    state, now = services.store.presence, services.now_ms()
    tickets, terminal = services.tickets, ctx.peer.terminal
    until = tickets.expiry(terminal, now)
    changed = None
    if state.seq is not None:
        changed = PresenceChange(seq=state.seq, action=state.action, at=state.at)
    ticket = None
    if terminal is not None and (until is not None or tickets.proven(ctx.peer)):
        ticket = Ticket(terminal=terminal.name, expires_at=until)
    policy = services.policy.presence
    return PresenceStatusResult(
        on=state.on,
        changed=changed,
        damaged=state.damaged,
        missing=list(state.missing),
        ticket=ticket,
        can_prove=_cannot_prove(ctx) is None,
        why_not=_cannot_prove(ctx),
        ticket_seconds=policy.ticket_seconds,
        per_command=per_command(policy),
        tiocsti=tiocsti_allowed(),
        failures=Failures(count=tickets.failures, last_at=tickets.last_failure_ms),
    )


def _grant(ctx: Context, terminal: Terminal, key: PersonKey | None) -> Ticket:
    """Give the caller what a proof gives, holding the person ``key``: a ticket for its
    terminal and shell, or a proof for its process alone
    (:func:`~hikmahd.tickets.per_command`)."""
    services = ctx.services
    policy = services.policy.presence
    if not per_command(policy):
        seconds = policy.ticket_seconds
        until = services.tickets.grant(terminal, services.now_ms(), seconds, key)
        return Ticket(terminal=terminal.name, expires_at=until)
    process = process_of(ctx.peer)
    if process is None:
        raise PresenceDenied("Refused: this process's start time cannot be read, so no proof")
    services.tickets.grant_command(process, key)
    return Ticket(terminal=terminal.name, expires_at=None)


def _unlock(state: PresenceState, passphrase: str) -> PersonKey | None:
    """The person key ``passphrase`` unlocks (a right one: checked before); None where
    presence was set before person keys."""
    if state.key is None or state.salt is None:
        return None
    key = PersonKey.derive(passphrase, state.salt)
    if key.public != state.key:
        raise PresenceDenied(
            "Refused: the passphrase is right but does not unlock the person key its"
            f" presence record names: the record was altered. {_RESET}."
        )
    return key


def _cannot_prove(ctx: Context) -> str | None:
    """Why this caller can never prove presence (None: it can, with the passphrase)."""
    if ctx.agent is not None:
        return "a coding agent's connection never proves a person's presence"
    if ctx.peer.terminal is None:
        return (
            "this process has no terminal of its own (no controlling terminal, or it was"
            " reparented away from the shell that started it): run the command in a terminal"
        )
    return None


def _terminal(ctx: Context) -> Terminal:
    """The caller's terminal, for a proof or a new passphrase.

    Raises:
        AgentRestricted: the caller is an agent.
        PresenceDenied: it has no terminal of its own.
    """
    agent, terminal = ctx.agent, ctx.peer.terminal
    if agent is not None:
        raise AgentRestricted(restriction_message(agent, "proving a person's presence"))
    if terminal is None:
        raise PresenceDenied(f"Refused: {_cannot_prove(ctx)}.")
    return terminal


@registry.method("presence.status")
async def status(ctx: Context, params: NoParams) -> PresenceStatusResult:
    """Whether presence is on, what last changed it, and this caller's ticket."""
    return report(ctx)


@registry.method("presence.prove")
async def prove(ctx: Context, params: PassphraseParams) -> Ticket:
    """Check the passphrase; right, the caller's terminal and shell get a ticket."""
    services = ctx.services
    terminal = _terminal(ctx)
    state = services.store.presence
    if state.damaged is not None:
        raise PresenceDenied(
            f"Refused: person presence cannot be proven: {state.damaged}. {_RESET}."
        )
    hashed = state.hash
    if hashed is None:
        raise ConflictError("person presence is off: no passphrase is set (hikmah passphrase set)")
    right = await services.tickets.attempt(
        lambda: services.offload(lambda: check_passphrase(hashed, params.passphrase)),
        services.now_ms(),
    )
    if not right:
        failures = services.tickets.failures
        log.warning(
            "a wrong passphrase from pid %d on %s (%d failed in a row)",
            ctx.peer.pid, terminal.name, failures,
        )  # fmt: skip
        raise PresenceDenied(
            f"Refused: wrong passphrase ({failures} failed in a row; each one is logged, and"
            f" the next attempt waits {2 ** min(failures - 1, 8)} s or more). {_RESET}."
        )
    key = await services.offload(lambda: _unlock(state, params.passphrase))
    return _grant(ctx, terminal, key)


@registry.method("presence.end")
async def end(ctx: Context, params: NoParams) -> EndResult:
    """Drop the caller's ticket, and its process's proof, now."""
    return EndResult(ended=ctx.services.tickets.end(ctx.peer))


@registry.method("presence.set", person="passphrase set")
async def set_(ctx: Context, params: PassphraseParams) -> PassphraseSetResult:
    """Turn presence on with a first passphrase; the terminal that set it holds a ticket."""
    if ctx.services.store.presence.on:
        raise ConflictError(
            "person presence is on already: change the passphrase with hikmah passphrase change"
        )
    return await _new_passphrase(ctx, "set", params.passphrase)


@registry.method("presence.change", person="passphrase change")
async def change(ctx: Context, params: PassphraseParams) -> PassphraseSetResult:
    """Replace the passphrase (with a ticket, which a proof of the current one gave)."""
    if not ctx.services.store.presence.on:
        raise ConflictError("person presence is off: set a passphrase with hikmah passphrase set")
    return await _new_passphrase(ctx, "change", params.passphrase)


@registry.method("presence.remove", person="passphrase remove")
async def remove(ctx: Context, params: NoParams) -> PassphraseRemoveResult:
    """Turn presence off (with a ticket): person-only actions need no proof any more."""
    services = ctx.services
    if not services.store.presence.on:
        raise ConflictError("person presence is off already")
    operation = SetPresence(action="remove", session=ctx.session)
    written = await services.writer.write(operation, person=ctx.person)
    services.tickets.clear()
    log.warning("person presence turned off (ledger record %d)", written.seq)
    return PassphraseRemoveResult(on=False, seq=written.seq)


async def _new_passphrase(ctx: Context, action: str, passphrase: str) -> PassphraseSetResult:
    """Set or change the passphrase: its hash and the public half of the person key it
    unlocks go in the record, which the person key in force signs (or, turning presence
    on, the new one)."""
    services = ctx.services
    terminal = _terminal(ctx)
    hashed = await services.offload(lambda: hash_passphrase(passphrase))
    salt = new_salt()
    key = await services.offload(lambda: PersonKey.derive(passphrase, salt))
    operation = SetPresence(action="set" if action == "set" else "change", hash=hashed,
                            key=key.public, salt=salt, session=ctx.session)  # fmt: skip
    signer = key if action == "set" else ctx.person
    written = await services.writer.write(operation, person=signer)
    services.tickets.clear()
    ticket = _grant(ctx, terminal, key)
    log.info("person presence: passphrase %s (ledger record %d)", action, written.seq)
    return PassphraseSetResult(on=True, seq=written.seq, ticket=ticket)
