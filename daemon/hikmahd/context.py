"""What a method handler knows about its caller and the daemon."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hikmah.principal import AgentSession, named_session

from .peers import Peer

if TYPE_CHECKING:
    from .connection import Connection
    from .daemon import Daemon


@dataclass
class Context:
    """One connection: the daemon it talks to and the principal behind it."""

    daemon: Daemon
    peer: Peer
    connection: Connection | None = None
    # Set (once, for good) when the client lowers its own privileges.
    declared: AgentSession | None = None

    @property
    def session(self) -> AgentSession | None:
        """The agent session behind this connection: detected from the peer's process
        tree (its id filled from the declaration when detection found none), else
        declared by the client itself; None for a person."""
        return named_session(self.peer.session, self.declared)
