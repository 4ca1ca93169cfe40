"""What a method handler knows about its caller, and what it may use of the daemon."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from hikmah.access.person import PersonKey
from hikmah.access.principal import (
    UNPROVEN_PERSON,
    AgentSession,
    declared_session,
    named_session,
    writer_source,
)
from hikmah.index.review import hold
from hikmah.model.paths import person_source
from hikmah.model.trace import Trace

from .events import Events
from .peers import Peer
from .services import Services


class Line(Protocol):
    """What a handler may do with the connection its request came on."""

    def unread(self) -> int:
        """Bytes of replies sent to the peer that it has not read yet."""
        ...

    def subscribe(self, events: Events, replay: list[dict[str, Any]]) -> bool:
        """Forward every event to the peer after ``replay``; False if it already is."""
        ...


@dataclass(eq=False)
class Context:
    """One connection: the principal behind it, and the services its requests may use."""

    services: Services
    peer: Peer
    line: Line | None = None
    # Set (once, for good) when the client lowers its own privileges.
    declared: AgentSession | None = None
    # What a method keeps for this connection's next call of it, by method name (an
    # import's reading of its file, for the next page); it goes with the connection.
    kept: dict[str, object] = field(default_factory=dict)

    @property
    def agent(self) -> AgentSession | None:
        """The agent session behind this connection: detected from the peer's process
        tree (its id filled from the declaration when detection found none), else
        declared by the client itself; None for a person."""
        return named_session(self.peer.session, self.declared)

    @property
    def session(self) -> AgentSession | None:
        """Who may not act as a person here, and why: the agent session; for a person
        while presence is on and no ticket of their terminal holds,
        :data:`~hikmah.access.principal.UNPROVEN_PERSON`; None for a present person.

        This is what the dispatcher checks a person-only method against and what
        handlers give the write rules, so presence holds on every path at once.
        """
        agent = self.agent
        services = self.services
        if agent is None and not services.tickets.present(
            services.store.presence, self.peer, services.now_ms()
        ):
            return UNPROVEN_PERSON
        return agent

    @property
    def person(self) -> PersonKey | None:
        """The key of the person whose proof of presence this connection holds: the
        person-only records its writes make carry their signature (hikmah.access.person)."""
        if self.agent is not None:
            return None
        return self.services.tickets.key(self.peer, self.services.now_ms())

    def source(self, claimed: str | None) -> str:
        """The source this caller's write is kept under when it claims ``claimed``
        (:func:`~hikmah.access.principal.writer_source`): with none, the person's
        ``human:<login>``, or an agent's ``agent:<host>``."""
        return writer_source(claimed, self.session, person_source())

    def hides(self, trace: Trace) -> bool:
        """Whether this caller may not read ``trace``: an agent, and a trace held for the
        person's review (:mod:`hikmah.index.review`)."""
        return self.agent is not None and hold(trace, self.services.policy.review) is not None

    def unread(self) -> int:
        """Bytes of replies the peer has not read yet (0 without a connection)."""
        return 0 if self.line is None else self.line.unread()

    def restrict(self, host: str, session_id: str | None) -> AgentSession:
        """Lower this connection, and every later one of its process, to agent privileges.

        One way: a connection already restricted keeps the session it has.
        """
        if self.declared is None:
            self.declared = declared_session(host, session_id)
        self.services.restrictions.restrict(self.peer, self.declared)
        session = self.agent
        assert session is not None
        return session
