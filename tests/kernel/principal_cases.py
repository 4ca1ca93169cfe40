"""What the tests of agent sessions share: a session made by hand."""

from __future__ import annotations

from hikmah.access.principal import AgentSession


def session(host: str = "claude-code", sid: str = "s1", *names: str) -> AgentSession:
    return AgentSession(host=host, session_id=sid, variables=tuple(sorted(names)))
