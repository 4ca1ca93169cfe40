"""A scripted model on loopback that speaks Anthropic Messages, OpenAI Responses,
OpenAI Chat Completions and Gemini's generateContent.

The real agent hosts (Claude Code, Codex, OpenCode through an OpenAI-compatible
provider, Gemini CLI) are pointed at it instead of a model service. Each request of the host's main loop (one that offers tools) gets the
next step of the script: a call of one of the offered tools, or a final answer.
Which step comes next is read from the conversation the host sends (how many
tool results it already carries), so a host that retries a request gets the
same answer again. Requests without tools (titles, summaries, quota probes) get
a short plain answer. Every request is recorded, body and headers, for the
test to inspect.

Each API answers in its streaming form (server-sent events) when the request asks
for it (``stream``, or Gemini's ``:streamGenerateContent?alt=sse``), else with one
JSON body. A Gemini request for JSON output (``responseMimeType: application/json``,
as its model router sends) gets an object that fits the schema it gives.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]
TOOL_SEARCH = "ToolSearch"  # Claude Code's loader of deferred tools


@dataclass(frozen=True)
class Call:
    """Call the offered tool whose name ends with ``tool`` (``recall`` matches
    ``mcp__hikmah__recall``) with these arguments."""

    tool: str
    arguments: JSON


@dataclass(frozen=True)
class Say:
    """Answer with this text and end the turn."""

    text: str


Step = Call | Say


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: JSON


@dataclass
class FakeModel:
    """The server: start it, point a host at :attr:`url`, read :attr:`requests`."""

    script: list[Step]
    requests: list[Recorded] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                model.record(Recorded(self.path, dict(self.headers.items()), body))
                status, content_type, payload = model.answer(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                # Model lists and similar probes: an empty, valid answer.
                model.record(Recorded(self.path, dict(self.headers.items()), {}))
                payload = json.dumps({"data": [], "models": [], "object": "list"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def main_loop(self) -> list[JSON]:
        """The bodies of the requests that offered tools, in order."""
        return [r.body for r in self.requests if r.body.get("tools")]

    def answer(self, path: str, body: JSON) -> tuple[int, str, bytes]:
        route, _, query = path.partition("?")
        route = route.rstrip("/")
        if route.endswith("/messages/count_tokens"):
            return 200, "application/json", json.dumps({"input_tokens": 100}).encode()
        if route.endswith("/messages"):
            return self._anthropic(body)
        if route.endswith("/responses"):
            return self._openai(body)
        if route.endswith("/chat/completions"):
            return self._chat(body)
        # Gemini: /v1beta/models/<model>:<method>
        model, _, method = route.rpartition("/models/")[2].partition(":")
        if model and method == "countTokens":
            return 200, "application/json", json.dumps({"totalTokens": 100}).encode()
        if model and method in ("generateContent", "streamGenerateContent"):
            stream = method == "streamGenerateContent"
            return self._gemini(body, stream=stream, sse="alt=sse" in query.split("&"))
        self.problems.append(f"unexpected request to {path}")
        return 404, "application/json", b'{"error": {"message": "not found"}}'

    def _step(self, body: JSON, done: int, tools: list[str]) -> tuple[Step, str | None]:
        """The step after ``done`` tool results, and the offered tool name it calls."""
        if not tools:
            return Say("OK."), None
        # A model loads deferred tools only from a host that defers them (Claude Code
        # 2.1.332 does, 2.1.197 offers them outright).
        script = self.script
        if TOOL_SEARCH not in tools:
            script = [s for s in script if not (isinstance(s, Call) and s.tool == TOOL_SEARCH)]
        step = script[done] if done < len(script) else Say("Done.")
        if isinstance(step, Say):
            return step, None
        matches = [name for name in tools if name == step.tool or name.endswith(f"_{step.tool}")]
        if len(matches) != 1:
            problem = f"step {done}: tool {step.tool!r} offered as {matches} among {tools}"
            self.problems.append(problem)
            return Say(f"Cannot continue: {problem}"), None
        return step, matches[0]

    # --- Anthropic Messages ---

    def _anthropic(self, body: JSON) -> tuple[int, str, bytes]:
        messages = body.get("messages", [])
        done = sum(
            1
            for message in messages
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
        tools = [tool.get("name", "") for tool in body.get("tools") or []]
        step, name = self._step(body, done, tools)
        number = next(self._ids)
        if isinstance(step, Call):
            block: JSON = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": name}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": step.text}
            stop = "end_turn"
        message: JSON = {
            "id": f"msg_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            if isinstance(step, Call):
                block = {**block, "input": step.arguments}
            return 200, "application/json", json.dumps({**message, "content": [block]}).encode()
        start = {**message, "content": [], "stop_reason": None}
        if isinstance(step, Call):
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(step.arguments)}
        else:
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": step.text}
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": opened},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return 200, "text/event-stream", _sse(events)

    # --- OpenAI Responses ---

    def _openai(self, body: JSON) -> tuple[int, str, bytes]:
        items = body.get("input") or []
        done = sum(
            1
            for item in items
            if isinstance(item, dict)
            and item.get("type") in ("function_call_output", "custom_tool_call_output")
        )
        offered = _openai_tools(body.get("tools") or [])
        step, name = self._step(body, done, list(offered))
        number = next(self._ids)
        if isinstance(step, Call):
            assert name is not None
            namespace, function = offered[name]
            item: JSON = {
                "type": "function_call",
                "id": f"fc_{number:04d}",
                "call_id": f"call_{number:04d}",
                "name": function,
                "arguments": json.dumps(step.arguments),
                "status": "completed",
            }
            if namespace is not None:
                item["namespace"] = namespace
        else:
            item = {
                "type": "message",
                "id": f"msg_{number:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        response: JSON = {
            "id": f"resp_{number:04d}",
            "object": "response",
            "status": "completed",
            "model": body.get("model", "fake"),
            "output": [item],
            "usage": usage,
        }
        if not body.get("stream"):
            return 200, "application/json", json.dumps(response).encode()
        created = {**response, "status": "in_progress", "output": []}
        events = [
            ("response.created", {"type": "response.created", "response": created}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
        ]
        if isinstance(step, Say):
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": step.text,
                    },
                )
            )
        events += [
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]
        return 200, "text/event-stream", _sse(events)

    # --- OpenAI Chat Completions ---

    def _chat(self, body: JSON) -> tuple[int, str, bytes]:
        messages = body.get("messages") or []
        done = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
        tools = [(tool.get("function") or {}).get("name", "") for tool in body.get("tools") or []]
        step, name = self._step(body, done, tools)
        number = next(self._ids)
        message: JSON
        if isinstance(step, Call):
            call: JSON = {
                "id": f"call_{number:04d}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(step.arguments)},
            }
            message, finish = (
                {"role": "assistant", "content": None, "tool_calls": [call]},
                "tool_calls",
            )
        else:
            message, finish = {"role": "assistant", "content": step.text}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base: JSON = {
            "id": f"chatcmpl-{number:04d}",
            "created": 0,
            "model": body.get("model", "fake"),
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            response = {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            return 200, "application/json", json.dumps(response).encode()
        base["object"] = "chat.completion.chunk"
        if isinstance(step, Call):
            # The call's head first, then its arguments, as the OpenAI API streams them.
            head = {**call, "index": 0, "function": {"name": name, "arguments": ""}}
            arguments = {"index": 0, "function": {"arguments": call["function"]["arguments"]}}
            deltas: list[JSON] = [
                {"role": "assistant", "tool_calls": [head]},
                {"tool_calls": [arguments]},
            ]
        else:
            deltas = [{"role": "assistant", "content": step.text}]
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            for delta in deltas
        ]
        end = {"index": 0, "delta": {}, "finish_reason": finish}
        chunks.append({**base, "choices": [end], "usage": usage})
        events: list[tuple[str | None, JSON | str]] = [(None, chunk) for chunk in chunks]
        return 200, "text/event-stream", _sse([*events, (None, "[DONE]")])

    # --- Gemini generateContent ---

    def _gemini(self, body: JSON, *, stream: bool, sse: bool) -> tuple[int, str, bytes]:
        config = body.get("generationConfig") or {}
        part: JSON
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            part = {"text": json.dumps(_fitting(schema))}
        else:
            contents = body.get("contents") or []
            done = sum(
                1
                for content in contents
                if isinstance(content, dict)
                for piece in content.get("parts") or []
                if isinstance(piece, dict) and "functionResponse" in piece
            )
            tools = [
                declaration.get("name", "")
                for tool in body.get("tools") or []
                for declaration in tool.get("functionDeclarations") or []
            ]
            step, name = self._step(body, done, tools)
            if isinstance(step, Call):
                part = {"functionCall": {"name": name, "args": step.arguments}}
            else:
                part = {"text": step.text}
        next(self._ids)
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "fake",
        }
        if stream and sse:
            return 200, "text/event-stream", _sse([(None, response)])
        if stream:  # without alt=sse the stream is one JSON array of responses
            return 200, "application/json", json.dumps([response]).encode()
        return 200, "application/json", json.dumps(response).encode()


def _fitting(schema: JSON) -> Any:
    """A small value that fits a JSON schema (or Gemini's OpenAPI-style schema, with
    upper-case types): every property, each enum's first value, numbers at their minimum
    (else 1)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _fitting(inner) for name, inner in properties.items()}
    if kind == "array":
        return [_fitting(schema["items"]) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):  # 1, not 0: Gemini's router wants a score of 1-100
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * int(schema.get("minLength", 0)) or "fake"


def _openai_tools(tools: list[JSON]) -> dict[str, tuple[str | None, str]]:
    """The functions a Responses request offers, by qualified name (``mcp__hikmah__recall``
    for ``recall`` in namespace ``mcp__hikmah``), each as (namespace, function name)."""
    offered: dict[str, tuple[str | None, str]] = {}
    for tool in tools:
        if tool.get("type") == "namespace":
            namespace = tool.get("name", "")
            for inner in tool.get("tools") or []:
                offered[f"{namespace}__{inner.get('name', '')}"] = (
                    namespace,
                    inner.get("name", ""),
                )
        elif tool.get("name"):
            offered[tool["name"]] = (None, tool["name"])
    return offered


def _sse(events: Sequence[tuple[str | None, JSON | str]]) -> bytes:
    """Server-sent events, named or not (Chat Completions and Gemini name none); a string
    is sent as is (``[DONE]``)."""
    lines = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        lines.append(f"event: {name}\ndata: {text}\n\n" if name else f"data: {text}\n\n")
    return "".join(lines).encode()
