"""What any client asks a person for a proof of presence, and when it asks again.

The daemon decides who may prove (never an agent, never a process without a
terminal of its own) and binds a proof to the terminal and the shell of the
client that asks; a client only asks the person (:mod:`hikmah_client.prompt`, or
a dialog of its own as ``hikmah browse`` has) and sends what they typed, with
``presence.prove``. The prompt, the words that say what a proof is for, and the
rule for asking again are defined here once, for every client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .connection import RemoteError

if TYPE_CHECKING:  # the reply's type, for mypy only: a client reads it as it reads replies
    from hikmah.model.wire.presence import PresenceStatusResult

ATTEMPTS = 3
PROMPT = "Hikmah passphrase: "


def explain(purpose: str, state: PresenceStatusResult, terminal: str | None) -> str:
    """What a proof is for, to show with the prompt (``state``: ``presence.status``)."""
    if state.per_command:
        return (
            f"{purpose} Hikmah asks for your passphrase to confirm this one command: if you"
            " did not just run it, someone else typed it into your terminal; give nothing."
        )
    return (
        f"{purpose} Hikmah asks for your passphrase so that {terminal or 'this terminal'}, and"
        f" the shell in it that ran this command, may take person-only actions for"
        f" {lasting(state.ticket_seconds)}."
    )


def lasting(seconds: float) -> str:
    """``5 minutes``, ``45 seconds``: how long a ticket holds."""
    if seconds >= 60:
        return f"{seconds / 60:g} minute{'' if seconds == 60 else 's'}"
    return f"{seconds:g} second{'' if seconds == 1 else 's'}"


def ask_again(refusal: RemoteError) -> bool:
    """Whether a refused proof may be tried again: only a wrong passphrase (not a lock,
    an agent, a process without a terminal)."""
    return refusal.reason == "presence_denied" and "wrong passphrase" in str(refusal)
