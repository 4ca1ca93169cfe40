"""Claude Code (its npm package, headless ``claude -p``) with exactly what
``hikmah setup claude`` writes, against a scripted Anthropic Messages model on loopback.

A real model would call ToolSearch first where Claude Code defers MCP tools behind it
(2.1.332 does; 2.1.197 offered them outright), so the script does the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.harness.hosts import Person, run_host, texts

from .fakemodel import Call, FakeModel, Say

TOOLS = "mcp__hikmah__recall,mcp__hikmah__remember"
PROMPT = "How do we deploy staging?"
RULE = "Staging deploys go through the blue-green switch in deploy/switch.sh"
LEARNED = "The staging switch script needs the VPN up first"
PERSONS_SETTINGS = {"model": "opus", "permissions": {"allow": ["Bash(git status)"]}}
PERSONS_STATE = {"numStartups": 3, "mcpServers": {"docs": {"command": "docs-mcp", "args": []}}}


def claude_env(person: Person, model: FakeModel, **extra: str) -> dict[str, str]:
    return {
        **person.env,
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "test-key-for-a-fake-model",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **extra,
    }


def ask(claude: Path, person: Person, model: FakeModel, **extra: str) -> dict[str, Any]:
    argv = [str(claude), "-p", PROMPT, "--allowedTools", TOOLS, "--output-format", "json"]
    done = run_host(argv, person, claude_env(person, model, **extra))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not model.problems, model.problems
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def tool_results(body: dict[str, Any]) -> list[str]:
    return [
        text
        for message in body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
        for text in texts(block.get("content"))
    ]


def test_claude_code_with_what_setup_wrote(claude: Path, person: Person) -> None:
    person.start_daemon()
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified", "--source", "human:ana")
    settings, state = person.home / ".claude" / "settings.json", person.home / ".claude.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(PERSONS_SETTINGS, indent=2))
    state.write_text(json.dumps(PERSONS_STATE, indent=2))
    original = settings.read_bytes()
    person.hikmah("setup", "claude")
    set_up = settings.read_bytes()

    script = [
        Call("ToolSearch", {"query": f"select:{TOOLS}"}),
        Call("recall", {"query": "deploy staging switch"}),
        Call("remember", {"content": LEARNED, "kind": "observation"}),
        Say("Done."),
    ]
    with FakeModel(script) as model:
        answer = ask(claude, person, model)
    assert answer["result"] == "Done." and answer["is_error"] is False
    session = answer["session_id"]
    loop = model.main_loop()
    assert len(loop) in (3, 4)  # and one more to load the tools, where the host defers them
    turns = loop[-3:]
    # The host names the same session in its requests.
    assert {r.headers.get("X-Claude-Code-Session-Id") for r in model.requests} == {session}

    # The hooks' context reached the model's first request: the person's rule, framed.
    first = "\n".join(texts(loop[0]["messages"]))
    assert "Memory from Hikmah" in first and RULE in first
    assert "SessionStart hook additional context" in first
    assert "UserPromptSubmit hook additional context" in first

    # recall returned the person's memory, verified, as an observation.
    recalled = "\n".join(tool_results(turns[1]))
    assert RULE in recalled and "human:ana, verified" in recalled

    # remember: stored unverified, stamped with the host and its real session id.
    written = "\n".join(tool_results(turns[2]))
    assert "Remembered tr_" in written
    (found,) = person.hikmah("recall", LEARNED, "--json", "--limit", "1")["results"]
    provenance = found["trace"]["provenance"]
    assert found["trace"]["content"] == LEARNED
    assert provenance["verified"] is False
    assert provenance["source"] == "agent:claude-code"
    assert provenance["locator"] == f"agent-session:claude-code:{session}"

    # --remove takes out exactly what setup added.
    seen = json.loads(state.read_text())  # Claude Code keeps its own state in this file
    ran = settings.read_bytes()
    person.hikmah("setup", "claude", "--remove")
    if ran == set_up:  # Claude Code left its settings alone (2.1.332 does)
        assert settings.read_bytes() == original
    else:  # it rewrote them (2.1.197 dropped "model"): our hooks go, its changes stay
        assert json.loads(settings.read_text()) == {
            k: v for k, v in json.loads(ran).items() if k != "hooks"
        }
    left = json.loads(state.read_text())
    assert left["mcpServers"] == PERSONS_STATE["mcpServers"]
    seen["mcpServers"].pop("hikmah")
    assert left == seen


def test_claude_config_dir_and_the_daemon_the_cli_started(claude: Path, person: Person) -> None:
    """No daemon runs yet: the person's CLI starts one, and the agent finds it."""
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified")
    assert person.socket.is_socket()
    moved = person.home / "claude-config"
    env = {**person.env, "CLAUDE_CONFIG_DIR": str(moved)}
    person.hikmah("setup", "claude", env=env)
    assert not (person.home / ".claude.json").exists()
    script = [
        Call("ToolSearch", {"query": "select:mcp__hikmah__recall"}),
        Call("recall", {"query": "deploy staging switch"}),
        Say("Done."),
    ]
    with FakeModel(script) as model:
        ask(claude, person, model, CLAUDE_CONFIG_DIR=str(moved))
    assert RULE in "\n".join(tool_results(model.main_loop()[-1]))
