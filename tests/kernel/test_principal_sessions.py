"""Naming and merging agent sessions: a declared id, the MCP clients' hosts, the nearest
session first with every variable."""

from __future__ import annotations

from hikmah.access.principal import (
    AgentSession,
    declared_session,
    detect_agent_session,
    host_of_client,
    merge_sessions,
    named_session,
)
from tests.kernel.principal_cases import session


def test_a_detected_session_without_an_id_takes_the_declared_one() -> None:
    # Codex's npm wrapper leaves CODEX_MANAGED_BY_NPM in the tree and no id; its MCP
    # server declares the id Codex sends with each tool call.
    detected = detect_agent_session({"CODEX_MANAGED_BY_NPM": "1"})
    declared = declared_session("codex", "01a23198-57ab-7ec0-ab00-18225a4c4e0e")
    assert named_session(detected, declared) == AgentSession(
        host="codex",
        session_id="01a23198-57ab-7ec0-ab00-18225a4c4e0e",
        variables=("CODEX_MANAGED_BY_NPM",),
    )


def test_detection_otherwise_wins_over_a_declaration() -> None:
    known = session("claude-code", "env-id", "CLAUDECODE")
    unknown = session("codex", "unknown", "CODEX_A")
    assert named_session(known, declared_session("claude-code", "other")) == known
    assert named_session(unknown, declared_session("cursor", "cur-1")) == unknown
    assert named_session(unknown, declared_session("codex", None)) == unknown
    assert named_session(unknown, None) == unknown
    assert named_session(None, declared_session("codex", "x1")) == declared_session("codex", "x1")
    assert named_session(None, None) is None


def test_known_mcp_clients_name_their_host() -> None:
    assert host_of_client("claude-code") == "claude-code"
    assert host_of_client("codex-mcp-client") == "codex"
    assert host_of_client("gemini-cli-mcp-client") == "gemini-cli"
    assert host_of_client("opencode") == "opencode"
    assert host_of_client("Claude Code") is None
    assert host_of_client(None) is None


def test_merge_sessions_nothing_detected() -> None:
    assert merge_sessions([]) is None
    assert merge_sessions([None, None]) is None


def test_merge_sessions_first_wins_and_variables_union() -> None:
    near = session("cursor", "cur", "CURSOR_A", "AI_AGENT")
    far = session("claude-code", "cla", "CLAUDECODE", "AI_AGENT")
    merged = merge_sessions([None, near, None, far])
    assert merged == AgentSession(
        host="cursor", session_id="cur", variables=("AI_AGENT", "CLAUDECODE", "CURSOR_A")
    )


def test_merge_sessions_single_and_generator() -> None:
    only = session("codex", "x", "CODEX_A")
    assert merge_sessions(iter([only])) == only
    envs = [{"PATH": "/bin"}, {"GEMINI_CLI": "1"}, {"CODEX_A": "1"}]
    merged = merge_sessions(detect_agent_session(e) for e in envs)
    assert merged == AgentSession(
        host="gemini-cli", session_id="unknown", variables=("CODEX_A", "GEMINI_CLI")
    )


def test_merging_takes_the_nearest_known_id_of_the_nearest_host() -> None:
    from hikmah.access.principal import AgentSession, merge_sessions

    by_process = AgentSession(
        host="codex", session_id="unknown", variables=(), processes=("/x/codex",)
    )
    by_env = AgentSession(host="codex", session_id="t-9", variables=("CODEX_THREAD_ID",))
    merged = merge_sessions([None, by_process, by_env])
    assert merged is not None and merged.session_id == "t-9" and merged.processes == ("/x/codex",)
