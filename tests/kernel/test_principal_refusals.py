"""Refusals in an agent session: what the message names (the action, the variables, the
remedy) and what it never shows (values, control characters)."""

from __future__ import annotations

import pytest

from hikmah.access.principal import (
    UNKNOWN_PRINCIPAL,
    detect_agent_session,
    refuse_in_agent_session,
    restriction_message,
)
from hikmah.model.errors import AgentRestricted
from tests.kernel.principal_cases import session


def test_message_names_action_variables_and_remedy() -> None:
    s = session("claude-code", "abc", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")
    msg = restriction_message(s, "remember --verified")
    assert "remember --verified" in msg
    assert "CLAUDECODE, CLAUDE_CODE_ENTRYPOINT" in msg
    assert "more" not in msg
    assert "agent session" in msg
    assert (
        "env | grep -E '^(CLAUDECODE=|CLAUDE_CODE_|CODEX_|CURSOR_|GEMINI_CLI=|OPENCODE=|"
        "OPENCODE_PID=|AI_AGENT=)'" in msg
    )
    assert "terminal where none" in msg
    assert "stop and ask a person" in msg
    assert "\n" not in msg


def test_message_cuts_at_five() -> None:
    names = [f"CODEX_V{i}" for i in range(8)]
    msg = restriction_message(session("codex", "x", *names), "purge")
    for shown in names[:5]:
        assert shown in msg
    for hidden in names[5:]:
        assert hidden not in msg
    assert "CODEX_V4 and 3 more" in msg

    exactly_five = restriction_message(session("codex", "x", *names[:5]), "purge")
    assert "more" not in exactly_five
    six = restriction_message(session("codex", "x", *names[:6]), "purge")
    assert "and 1 more" in six


def test_message_never_contains_values() -> None:
    marker = "SECRETMARKER42"
    environ = {
        "CLAUDECODE": marker,
        "CLAUDE_CODE_SESSION_ID": marker,
        "CODEX_SESSION_ID": marker,
        "CURSOR_TRACE_ID": marker,
        "GEMINI_CLI": marker,
        "OPENCODE": marker,
        "AI_AGENT": marker,
        "CLAUDE_CODE_OAUTH_TOKEN": marker,
    }
    found = detect_agent_session(environ)
    assert found is not None
    assert found.session_id == marker  # the id is a value, so the message must omit it
    msg = restriction_message(found, "verify-ledger --accept-tail")
    assert marker not in msg
    with pytest.raises(AgentRestricted) as info:
        refuse_in_agent_session(found, "verify-ledger --accept-tail")
    assert marker not in str(info.value)


def test_message_escapes_odd_variable_names() -> None:
    msg = restriction_message(session("codex", "x", "CODEX_\x1b[2J"), "purge")
    assert "\x1b" not in msg


def test_an_unknown_principal_is_told_why_not_which_variables() -> None:
    msg = restriction_message(UNKNOWN_PRINCIPAL, "purge")
    assert msg.startswith("Refused: purge needs a person")
    assert "could not read the environment" in msg and "/proc" in msg
    assert "variables" not in msg and "env | grep" not in msg
    assert "stop and ask a person" in msg
    assert "\n" not in msg


def test_refuse_in_agent_session() -> None:
    refuse_in_agent_session(None, "purge")  # a person: nothing happens
    s = session("gemini-cli", "unknown", "GEMINI_CLI")
    with pytest.raises(AgentRestricted) as info:
        refuse_in_agent_session(s, "verify-ledger --reset-head")
    assert info.value.reason == "agent_restricted"
    assert str(info.value) == restriction_message(s, "verify-ledger --reset-head")
