"""The framework the agent's tools are written in.

Each tool's arguments are a msgspec Struct: its docstring is the tool's
description, its fields (with their ``Meta``) the input schema, and the same
type checks what an agent sends. Arguments a tool does not declare are dropped,
and a null counts as an argument left out. Every tool also carries the MCP
annotations that say what it does, which hosts read to decide whether to ask
the person first (Codex runs a tool without asking when it is read-only, or
neither destructive nor open-world).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, overload

import msgspec
from msgspec import Meta

from ..link import Link, Writer
from ..protocol import Caller

JSON = dict[str, Any]
Budget = Annotated[
    int,
    Meta(
        ge=50,
        le=20_000,
        description="Most tokens of output (estimated as characters / 4); the first result"
        " is always included.",
    ),
]
TraceId = Annotated[str, Meta(description="A memory's id, e.g. tr_0194f3a2b1c0a1b2c3d4e5.")]
Tags = Annotated[
    list[str] | None, Meta(description="Short topic tags, e.g. ['deploy', 'staging'].")
]
Scope = Annotated[
    str | None,
    Meta(
        description="Where it holds: 'global', 'project:<path>' or 'person:<name>'."
        " Default: the project of the working directory."
    ),
]


class Args(msgspec.Struct, kw_only=True):
    """A tool's arguments."""


@dataclass(frozen=True)
class Hints:
    """The MCP tool annotations. Hikmah is a closed world (its own memory only), so no
    tool is open-world."""

    read_only: bool
    destructive: bool = False
    idempotent: bool = False

    def annotations(self, title: str) -> JSON:
        return {
            "title": title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.read_only or self.idempotent,
            "openWorldHint": False,
        }


READS = Hints(read_only=True)
ADDS = Hints(read_only=False)  # appends to the ledger; nothing is overwritten
ONCE = Hints(read_only=False, idempotent=True)  # a second call changes nothing more
# Focus capsules are bounded working sets: taking something in may push the weakest out.
DISPLACES = Hints(read_only=False, destructive=True)


T = TypeVar("T")


@dataclass(frozen=True)
class Memory:
    """What a tool runs against: the link, the writer and the project of the call."""

    link: Link
    caller: Caller
    writer: Writer
    project: str

    @overload
    def call(self, method: str, params: dict[str, Any], result: type[T]) -> T: ...

    @overload
    def call(self, method: str, params: dict[str, Any], result: None = None) -> Any: ...

    def call(self, method: str, params: dict[str, Any], result: type[Any] | None = None) -> Any:
        """One request, its reply decoded as ``result`` (a Result of :mod:`hikmah.model.wire`),
        else plain JSON."""
        reply = self.link.call(method, params, self.caller)
        return reply if result is None else msgspec.convert(reply, result)

    def scope(self, scope: str | None) -> str:
        return scope or self.project


A = TypeVar("A", bound=Args)
Run = Callable[[Memory, A], str]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    args: type[Args]
    hints: Hints
    run: Callable[[Memory, Any], str]

    def listing(self) -> JSON:
        return {
            "name": self.name,
            "title": self.title,
            "description": _paragraphs(self.args.__doc__ or ""),
            "inputSchema": input_schema(self.args),
            "annotations": self.hints.annotations(self.title),
        }


TOOLS: dict[str, Tool] = {}


def tool(args: type[A], hints: Hints, title: str) -> Callable[[Run[A]], Run[A]]:
    """Register the decorated function as the tool of its name."""

    def register(run: Run[A]) -> Run[A]:
        assert run.__name__ not in TOOLS, run.__name__
        TOOLS[run.__name__] = Tool(run.__name__, title, args, hints, run)
        return run

    return register


def input_schema(args: type[Args]) -> JSON:
    """The JSON Schema of a tool's arguments as an agent reads it: an optional argument
    is simply not required (no null branch, no null default)."""
    (_ref,), components = msgspec.json.schema_components([args])
    schema = components[args.__name__]
    properties = {name: _plain(prop) for name, prop in schema.get("properties", {}).items()}
    plain: JSON = {"type": "object", "properties": properties}
    if schema.get("required"):
        plain["required"] = schema["required"]
    return plain


def _plain(prop: JSON) -> JSON:
    prop = dict(prop)
    branches = prop.pop("anyOf", None)
    if branches is not None:
        (kept,) = [b for b in branches if b != {"type": "null"}]
        prop = {**kept, **prop}
    if "default" in prop and prop["default"] is None:
        del prop["default"]
    if "enum" in prop and all(isinstance(v, str) for v in prop["enum"]):
        prop.setdefault("type", "string")
    if isinstance(prop.get("items"), dict):
        prop["items"] = _plain(prop["items"])
    return prop


def _paragraphs(doc: str) -> str:
    """A docstring as prose: its paragraphs kept, the lines and indentation within each
    one joined."""
    blocks = re.split(r"\n\s*\n", doc.strip())
    return "\n\n".join(" ".join(block.split()) for block in blocks)


def given(**optional: Any) -> dict[str, Any]:
    """The optional parameters an agent gave (the daemon has its own defaults)."""
    return {name: value for name, value in optional.items() if value is not None}
