"""Locator stamping: an agent session's stamp leads every locator it writes and cannot be
shed."""

from __future__ import annotations

from hikmah.access.principal import stamp_locator
from hikmah.model.display import is_agent_locator
from tests.kernel.principal_cases import session


def test_stamp_locator() -> None:
    s = session("codex", "abc", "CODEX_A")
    assert stamp_locator(s, None) == "agent-session:codex:abc"
    assert stamp_locator(s, "") == "agent-session:codex:abc"
    assert stamp_locator(s, "file.py:12") == "agent-session:codex:abc; file.py:12"
    assert stamp_locator(None, "file.py:12") == "file.py:12"
    assert stamp_locator(None, None) is None


def test_stamp_cannot_be_shed_by_caller_locator() -> None:
    s = session("cursor", "unknown", "CURSOR_A")
    stamped = stamp_locator(s, "agent-session:none:x")
    assert stamped == "agent-session:cursor:unknown; agent-session:none:x"
    assert is_agent_locator(stamped)


def test_is_agent_locator() -> None:
    assert is_agent_locator("agent-session:claude-code:abc")
    assert is_agent_locator("agent-session:codex:unknown; x")
    assert not is_agent_locator(None)
    assert not is_agent_locator("")
    assert not is_agent_locator("file.py; agent-session:codex:x")
    assert not is_agent_locator("agent-sessions:codex:x")
