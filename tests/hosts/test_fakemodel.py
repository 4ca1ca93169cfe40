"""The scripted model itself, on the answers no pinned host asks for in the host tests:
Gemini's model router (a JSON verdict, asked when no ``-m`` is given), and the one-body
forms of Chat Completions and generateContent."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from .fakemodel import Call, FakeModel, Say, Step


def post(model: FakeModel, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        model.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_gemini_router_gets_a_verdict_that_fits_its_schema() -> None:
    # What Gemini CLI 0.61.0 sends to pick a model for a turn.
    schema = {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER", "description": "Complexity score from 1-100."},
        },
        "required": ["complexity_reasoning", "complexity_score"],
    }
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    with FakeModel([Say("Done.")]) as model:
        answer = post(
            model,
            "/v1beta/models/gemini-3.5-flash-lite:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": config},
        )
    (part,) = answer["candidates"][0]["content"]["parts"]
    verdict = json.loads(part["text"])
    assert isinstance(verdict["complexity_reasoning"], str)
    assert 1 <= verdict["complexity_score"] <= 100


def test_gemini_and_chat_completions_in_one_body() -> None:
    script: list[Step] = [Call("recall", {"query": "deploy"}), Say("Done.")]
    gemini_tools = [{"functionDeclarations": [{"name": "mcp_hikmah_recall"}]}]
    chat_tools = [{"type": "function", "function": {"name": "hikmah_recall"}}]
    with FakeModel(script) as model:
        called = post(
            model,
            "/v1beta/models/gemini-2.5-flash:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": gemini_tools},
        )
        result = {"functionResponse": {"name": "mcp_hikmah_recall", "response": {"output": "x"}}}
        contents = [
            {"role": "user", "parts": [{"text": "hi"}]},
            called["candidates"][0]["content"],
            {"role": "user", "parts": [result]},
        ]
        said = post(
            model,
            "/v1beta/models/gemini-2.5-flash:generateContent",
            {"contents": contents, "tools": gemini_tools},
        )
        chat = post(
            model,
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}], "tools": chat_tools},
        )
    assert called["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "mcp_hikmah_recall", "args": {"query": "deploy"}}}
    ]
    assert said["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    (choice,) = chat["choices"]
    (call,) = choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls"
    assert call["function"]["name"] == "hikmah_recall"
    assert json.loads(call["function"]["arguments"]) == {"query": "deploy"}
    assert not model.problems and len(model.requests) == 3
