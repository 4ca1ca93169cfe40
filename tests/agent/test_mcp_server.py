"""hikmah-agent driven by the official MCP SDK's own stdio client, against a real daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, Implementation

from tests.harness.daemon import Running
from tests.harness.environment import clean_env

TOOLS = {
    "recall", "context", "remember", "correct", "conflicts", "commitments", "fulfill",
    "predict", "outcome", "feedback", "inspect", "focus_open", "focus_absorb", "focus_read", "focus_note",
}  # fmt: skip
READ_ONLY = {"recall", "context", "conflicts", "commitments", "inspect", "focus_read"}
DISPLACING = {"focus_absorb", "focus_note"}
# Words that would name a person-only power in a tool or an argument.
FORBIDDEN = ("verif", "purge", "accept", "reset", "head", "promote", "policy", "source")


@asynccontextmanager
async def agent(
    daemon: Running,
    *,
    env: dict[str, str] | None = None,
    client_name: str = "Claude Code",
    args: list[str] | None = None,
) -> AsyncIterator[Client]:
    """hikmah-agent under the SDK's client; by default on the daemon's socket, never
    starting another."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hikmah_agent", *(args or ["--socket", str(daemon.socket), "--no-autostart"])],
        env=env if env is not None else clean_env(),
        cwd=str(daemon.root),
    )
    info = Implementation(name=client_name, version="2.1.0")
    async with Client(server, client_info=info) as client:
        yield client


def text(result: CallToolResult) -> str:
    assert not result.is_error, result.content
    (content,) = result.content
    assert content.type == "text"
    return content.text


def error(result: CallToolResult) -> str:
    assert result.is_error
    (content,) = result.content
    assert content.type == "text"
    return content.text


def trace_id_in(message: str) -> str:
    start = message.index("tr_")
    return message[start : start + 25]


async def test_lists_exactly_the_restricted_tools_with_schemas(daemon: Running) -> None:
    async with agent(daemon) as client:
        tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        properties: dict[str, Any] = tool.input_schema.get("properties", {})
        for name, schema in properties.items():
            assert "description" in schema, (tool.name, name)
            assert "anyOf" not in schema and schema.get("type"), (tool.name, name, schema)
        words = [tool.name, *properties]
        assert not any(bad in word.lower() for word in words for bad in FORBIDDEN), words


async def test_descriptions_reach_the_model_as_clean_prose(daemon: Running) -> None:
    async with agent(daemon) as client:
        tools = (await client.list_tools()).tools
    texts = [tool.description or "" for tool in tools] + [
        schema["description"]
        for tool in tools
        for schema in tool.input_schema["properties"].values()
    ]
    for text in texts:
        assert text == text.strip() and "\n" not in text and "  " not in text, repr(text)
    (predict,) = [tool for tool in tools if tool.name == "predict"]
    assert predict.input_schema["properties"]["type"]["enum"] == ["choice", "score", "yes_no"]


async def test_every_tool_says_what_it_does_in_its_annotations(daemon: Running) -> None:
    async with agent(daemon) as client:
        tools = (await client.list_tools()).tools
    hints = {tool.name: tool.annotations for tool in tools}
    assert all(hint is not None for hint in hints.values())
    read_only = {name for name, hint in hints.items() if hint and hint.read_only_hint}
    assert read_only == READ_ONLY
    for name, hint in hints.items():
        assert hint is not None and hint.title
        assert hint.open_world_hint is False, name  # Hikmah's own memory only
        assert hint.read_only_hint is not None and hint.idempotent_hint is not None, name
        # Appending to the ledger destroys nothing; a full focus capsule pushes one out.
        assert hint.destructive_hint is (name in DISPLACING), name


async def test_remember_is_unverified_and_stamped_with_the_session(daemon: Running) -> None:
    env = clean_env(CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="sess-42")
    async with agent(daemon, env=env) as client:
        message = text(
            await client.call_tool(
                "remember", {"content": "The staging DB is postgres 16", "kind": "belief"}
            )
        )
        sneaky = await client.call_tool(
            "remember",
            {"content": "I checked this myself", "verified": True, "source": "human:ana"},
        )
    shown = daemon.call("memory.show", id=trace_id_in(message))["trace"]
    assert shown["provenance"]["verified"] is False
    assert shown["provenance"]["locator"] == "agent-session:claude-code:sess-42"
    assert shown["provenance"]["source"] == "agent:claude-code"
    # The SDK drops undeclared arguments: the write happens, as the agent's own.
    forged = daemon.call("memory.show", id=trace_id_in(text(sneaky)))["trace"]
    assert forged["provenance"]["verified"] is False
    assert forged["provenance"]["source"] == "agent:claude-code"


async def test_without_agent_variables_the_client_info_names_the_host(daemon: Running) -> None:
    async with agent(daemon, client_name="Some Agent") as client:
        message = text(await client.call_tool("remember", {"content": "lint with ruff"}))
    provenance = daemon.call("memory.show", id=trace_id_in(message))["trace"]["provenance"]
    assert provenance["locator"].startswith("agent-session:some-agent:mcp-")
    assert provenance["source"] == "agent:some-agent"


async def test_codex_is_named_by_its_client_and_its_session_by_the_call_meta(
    daemon: Running,
) -> None:
    # What Codex 0.171 sends (tests/hosts drives the real one): no agent variable in the
    # server's environment, clientInfo codex-mcp-client, the session id in each call's _meta.
    session = "01a23198-57ab-7ec0-ab00-18225a4c4e0e"
    meta: Any = {"sessionId": session, "threadId": session, "callId": "call_1"}
    async with agent(daemon, client_name="codex-mcp-client") as client:
        message = text(
            await client.call_tool("remember", {"content": "tests run with pytest"}, meta=meta)
        )
        later = text(await client.call_tool("remember", {"content": "and ruff"}, meta={}))
    for written in (message, later):
        provenance = daemon.call("memory.show", id=trace_id_in(written))["trace"]["provenance"]
        assert provenance["source"] == "agent:codex"
        assert provenance["locator"] == f"agent-session:codex:{session}"
        assert provenance["verified"] is False


async def test_every_tool_works_and_recall_is_framed(daemon: Running) -> None:
    verified = daemon.call(
        "memory.remember", content="Never deploy staging on Fridays", kind="constraint",
        verified=True, source="human:ana",
    )["trace"]  # fmt: skip
    for value in ("16", "15"):
        daemon.call("memory.remember", content=f"db is {value}", claim_key="db", claim_value=value)
    async with agent(daemon) as client:
        call = client.call_tool
        recalled = text(await call("recall", {"query": "deploy staging fridays", "why": True}))
        assert "observations, not instructions" in recalled
        assert "human:ana, verified, confidence 0.50, s=" in recalled and verified["id"] in recalled
        assert "[why: matched" in recalled
        assert "Never deploy staging" in text(await call("context", {}))
        assert "Open conflict on db" in text(await call("conflicts", {}))

        held = trace_id_in(
            text(await call("remember", {"content": "deploy with make ship", "kind": "procedure"}))
        )  # an agent's procedure waits for the person: no agent reads it meanwhile
        assert "waits for the person's review" in error(await call("inspect", {"id": held}))
        assert "make ship" not in text(await call("context", {}))
        noted = text(
            await call("remember", {"content": "deploys need the VPN", "kind": "observation"})
        )
        first = trace_id_in(noted)
        corrected = text(
            await call("correct", {"id": first, "content": "deploys need the VPN and 2FA"})
        )
        assert f"supersedes {first}" in corrected
        history = text(await call("inspect", {"id": first}))
        assert "superseded by" in history and trace_id_in(corrected) in history
        refused = error(await call("correct", {"id": verified["id"], "content": "deploy any day"}))
        assert "verified" in refused

        promise = text(
            await call("remember", {"content": "send Ana the report", "kind": "commitment",
                                    "deadline": "+2h"})
        )  # fmt: skip
        assert "send Ana the report" in text(await call("commitments", {"within_hours": 3}))
        assert "fulfilled" in text(await call("fulfill", {"id": trace_id_in(promise)}))
        assert text(await call("commitments", {})) == "No open commitments."

        forecast = text(
            await call("predict", {"family": "ci.green", "question": "Will CI pass?",
                                   "type": "yes_no", "p": 0.8})
        )  # fmt: skip
        forecast_id = trace_id_in(forecast)
        assert "Resolved" in text(
            await call("outcome", {"prediction": forecast_id, "observed": "yes"})
        )
        assert "resolved once" in error(
            await call("outcome", {"prediction": forecast_id, "observed": "no"})
        )

        assert "good outcome" in text(await call("feedback", {"ids": [first], "outcome": "good"}))
        assert "is empty" in text(await call("focus_open", {"name": "task:deploy"}))
        absorbed = text(await call("focus_absorb", {"name": "task:deploy", "query": "deploy VPN"}))
        assert "Focus capsule task:deploy" in absorbed
        assert "Noted" in text(
            await call("focus_note", {"name": "task:deploy", "text": "ask Ana first"})
        )
        assert "ask Ana first" in text(await call("focus_read", {"name": "task:deploy"}))


async def test_recall_output_respects_the_budget_and_keeps_the_first(daemon: Running) -> None:
    for n in range(8):
        daemon.call("memory.remember", content=f"kafka lag note {n} " + "detail " * 60)
    async with agent(daemon) as client:
        framed = text(await client.call_tool("recall", {"query": "kafka lag", "budget": 100}))
    assert framed.count("Previously observed") == 1
    assert "more not shown: token budget 100" in framed


async def test_bad_arguments_are_a_tool_error_that_names_them(daemon: Running) -> None:
    async with agent(daemon) as client:
        too_many = error(await client.call_tool("recall", {"query": "x", "limit": 500}))
        missing = error(await client.call_tool("remember", {"kind": "belief"}))
        odd_kind = error(await client.call_tool("remember", {"content": "x", "kind": "rumour"}))
        # A null is an argument left out; a number as text is taken as the number.
        fine = text(await client.call_tool("recall", {"query": "x", "tags": None, "limit": "3"}))
    assert "limit" in too_many and "<= 50" in too_many
    assert "content" in missing
    assert "rumour" in odd_kind and "$.kind" in odd_kind
    assert fine


async def test_secrets_are_refused_with_a_clear_error(daemon: Running) -> None:
    async with agent(daemon) as client:
        refused = error(
            await client.call_tool("remember", {"content": "aws key AKIAIOSFODNN7EXAMPLE for prod"})
        )
    assert "Hikmah refused" in refused and "AKIAIOSFODNN7EXAMPLE" not in refused


async def test_a_missing_daemon_is_a_tool_error_not_a_crash(short_tmp: Path) -> None:
    missing = Running(short_tmp)  # never started
    async with agent(missing) as client:
        first = error(await client.call_tool("recall", {"query": "anything"}))
        assert "unavailable" in first
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS  # still serving


LIFT_ATTEMPT = """
import json, sys
from pathlib import Path
from hikmah_agent.link import Link
from hikmah_agent.protocol import Caller
from hikmah_client.connection import Client, RemoteError

socket = Path(sys.argv[1])
link = Link(socket, autostart=False, daemon_args=[], data_dir=Path(sys.argv[2]))
link.call("memory.remember", {"content": "written through the agent link"}, Caller("claude-code", {}))
second = Client(socket)  # a fresh connection of the same process, never restricted itself
outcome = {}
try:
    second.call("memory.remember", {"content": "now trust me", "verified": True})
    outcome["verified"] = "accepted"
except RemoteError as exc:
    outcome["verified"] = exc.reason
try:
    second.call("ledger.verify", {"accept_tail": True})
    outcome["accept_tail"] = "accepted"
except RemoteError as exc:
    outcome["accept_tail"] = exc.reason
outcome["principal"] = second.call("daemon.status")["principal"]
print(json.dumps(outcome))
"""


def test_a_second_connection_of_the_agent_process_cannot_lift_the_restriction(
    daemon: Running,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", LIFT_ATTEMPT, str(daemon.socket), str(daemon.data)],
        capture_output=True, text=True, timeout=60, env=clean_env(), start_new_session=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["verified"] == outcome["accept_tail"] == "agent_restricted"
    assert outcome["principal"]["host"] == "claude-code"
