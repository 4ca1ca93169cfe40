"""The person's side of presence in the CLI: proving it before a person-only command,
and the ``hikmah passphrase`` and ``hikmah presence`` commands.

The prompt, what a proof is for and when a refused one is asked again are every
client's (:mod:`hikmah_client.presence`); this module asks at the terminal
(:mod:`hikmah_client.prompt`), sends what the person typed, and says how it went
with the CLI's exit codes.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import TYPE_CHECKING

from hikmah.model.display import visible
from hikmah_client import prompt
from hikmah_client.connection import RemoteError
from hikmah_client.presence import ATTEMPTS, PROMPT, ask_again, explain, lasting

from .session import OK, REFUSED, USAGE, Exit, Session

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.presence import (
        EndResult,
        PassphraseRemoveResult,
        PassphraseSetResult,
        PresenceStatusResult,
    )

SHOWN_CHARS = 300  # of the command a proof confirms


def confirming(words: list[str]) -> str:
    """The command a proof confirms, as the person (or whoever typed it) wrote it, its
    controls shown as escapes and at most :data:`SHOWN_CHARS` long."""
    line = visible(shlex.join(["hikmah", *words]))
    if len(line) > SHOWN_CHARS:
        line = line[: SHOWN_CHARS - 1] + "…"
    return f"Confirm: {line}"


def ensure(session: Session) -> None:
    """Prove presence before a person-only command (the session's ``args.words``, as
    typed), when presence is on, this terminal holds no ticket, and the daemon would take
    a proof from this process. Otherwise nothing: the daemon answers the command itself
    (and refuses it if it must).

    Raises:
        Exit: the person gave no passphrase, or the wrong one each time.
    """
    state: PresenceStatusResult = session.call("presence.status", {})
    if not state.on or state.ticket is not None or not state.can_prove:
        return
    purpose = f"{confirming(session.args.words)} (a person-only action)."
    _prove(session, state, PROMPT, purpose)


def passphrase(args: argparse.Namespace) -> int:
    """``hikmah passphrase set|change|remove``."""
    with Session(args) as session:
        state: PresenceStatusResult = session.call("presence.status", {})
        if args.action == "set" and state.on:
            return _usage("a passphrase is set already: change it with hikmah passphrase change")
        if args.action != "set" and not state.on:
            return _usage("no passphrase is set: set one with hikmah passphrase set")
        if not state.can_prove:  # never a prompt the person did not ask for
            print(f"hikmah passphrase: {state.why_not}", file=sys.stderr)
            return REFUSED
        if args.action != "set":
            why = "Removing" if args.action == "remove" else "Changing"
            _prove(session, state, "Current passphrase: ", f"{why} the passphrase.")
        if args.action == "remove":
            removed: PassphraseRemoveResult = session.call("presence.remove", {})
            print(f"person presence is off (ledger record {removed.seq})")
            return OK
        new = _ask("New passphrase: ", "A new passphrase for Hikmah's person presence.")
        again = _ask("Repeat the new passphrase: ", "The new passphrase again.")
        if new != again:
            return _usage("the two passphrases differ: nothing changed")
        done: PassphraseSetResult = session.call(f"presence.{args.action}", {"passphrase": new})
    how_often = (
        "for each command"
        if state.per_command
        else f"once per terminal every {lasting(state.ticket_seconds)}"
    )
    print(
        f"person presence is on (ledger record {done.seq}): every person-only action"
        f" now asks for this passphrase, {how_often}."
        " Forgot it? docs/security.md, 'A forgotten passphrase'."
    )
    return OK


def presence(args: argparse.Namespace) -> int:
    """``hikmah presence [--end]``: prove presence now for this terminal, or end it."""
    with Session(args) as session:
        if args.end:
            end: EndResult = session.call("presence.end", {})
            print("ticket ended" if end.ended else "this terminal held no ticket")
            return OK
        state: PresenceStatusResult = session.call("presence.status", {})
        if not state.on:
            print("person presence is off: set a passphrase with hikmah passphrase set")
            return OK
        if state.per_command:
            why = (
                "[presence] ticket_seconds = 0"
                if state.ticket_seconds == 0
                else "the kernel lets programs push keys into a terminal (TIOCSTI), and"
                " [presence] tickets_with_tiocsti is off"
            )
            print(f"a proof holds for one command here ({why}): each person-only command asks")
            return OK
        if state.ticket is None:
            if not state.can_prove:
                print(f"hikmah presence: {state.why_not}", file=sys.stderr)
                return REFUSED
            _prove(session, state, PROMPT, "Proving you are at this terminal.")
            state = session.call("presence.status", {})
        ticket = state.ticket
    # Proven, and not for one command alone: a ticket that lasts until a time.
    assert ticket is not None and ticket.expires_at is not None
    until = time.strftime("%H:%M:%S", time.localtime(ticket.expires_at / 1000))
    print(f"person presence proven for {ticket.terminal} and this shell until {until}")
    return OK


def _prove(session: Session, state: PresenceStatusResult, ask_with: str, purpose: str) -> None:
    """Ask for the passphrase and prove it, up to :data:`ATTEMPTS` times.

    Raises:
        Exit: no passphrase, or the wrong one every time.
    """
    description = explain(purpose, state, prompt.terminal_name())
    last: RemoteError | None = None
    for attempt in range(ATTEMPTS):
        secret = _ask(ask_with, description)
        try:
            session.client.call("presence.prove", {"passphrase": secret})
            return
        except RemoteError as exc:
            last = exc
            if not ask_again(exc):
                break
            if attempt + 1 < ATTEMPTS:
                print("Sorry, try again.", file=sys.stderr)
    print(f"hikmah {session.args.command}: {last}", file=sys.stderr)
    raise Exit(REFUSED)


def _ask(ask_with: str, description: str) -> str:
    try:
        return prompt.ask(ask_with, description)
    except (prompt.NoTerminal, prompt.Cancelled) as exc:
        print(f"hikmah: {exc}; nothing was done", file=sys.stderr)
        raise Exit(REFUSED) from None


def _usage(message: str) -> int:
    print(f"hikmah passphrase: {message}", file=sys.stderr)
    return USAGE
