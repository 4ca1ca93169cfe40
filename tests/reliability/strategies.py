"""Hypothesis strategies for hostile JSON-RPC input: any JSON value, and per method
params shaped like its own fields but with wrong types, edge numbers, odd text,
deep nesting and unknown members."""

from __future__ import annotations

import json
import os
import types
import typing
from typing import Any

import msgspec
from hypothesis import strategies as st

from hikmahd.rpc import Method

# Examples per fuzzed property; bench/stress/fuzz_hypothesis.py raises it.
EXAMPLES = int(os.environ.get("HIKMAH_FUZZ_EXAMPLES", "20"))
EDGE_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    -0.0,
    0.5,
    1.0000001,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    1e15,
    1e300,
    -1e300,
    5e-324,
]
EDGE_TEXT = [
    "",
    " ",
    "\x00",
    "\n",
    "\u202e\u0000\uffff",
    "𝕳𝖎𝖐𝖒𝖆𝖍",
    "tr_",
    "tr_00000000000000000000zz",
    "-1d",
    "+1d",
    "+999999999d",
    "2026-13-45",
    "1970-01-01T00:00:00Z",
    "../../etc/passwd",
    "/",
    "global",
    "project:",
    "project:/",
    "person:",
    "kind:value:more",
    "agent-session:claude-code:x",
    "human:ana",
    "model:gpt",
    "x" * 70_000,
    "word " * 5_000,
]

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(EDGE_NUMBERS),
)
texts = st.one_of(st.text(max_size=40), st.sampled_from(EDGE_TEXT))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def nested(depth: int) -> Any:
    """A value nested ``depth`` levels deep (alternating arrays and objects)."""
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# Paths a method may read or create: only under the test's own directory (``ROOT`` is
# replaced by it, see :func:`rooted`), plus a few that can only be refused.
ROOT = "<root>"
PATHS = [f"{ROOT}/new/backup", ROOT, f"{ROOT}/data", "relative/path", "", "/proc/self/stat"]


def typed(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of a field's own type: Literal, Optional, unions, tuples, nested Structs,
    Annotated constraints ignored (so out-of-range values come too)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return typed(args[0])
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(typed(a) for a in args))
    if origin in (tuple, list):
        return st.lists(typed(args[0]) if args else json_values, max_size=4)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        fields = msgspec.structs.fields(annotation)
        return st.fixed_dictionaries({}, optional={f.name: typed(f.type) for f in fields})
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: texts,
        int: numbers,
        float: numbers,
        bool: st.booleans(),
        type(None): st.none(),
    }
    return simple.get(annotation, json_values)


def _field_values(name: str, annotation: Any) -> st.SearchStrategy[Any]:
    if name in ("path", "dir", "file"):
        # Never a path where a read could block or a write could land outside the test.
        return st.sampled_from(PATHS)
    return st.one_of(typed(annotation), typed(annotation), scalars, json_values)


def params_for(method: Method) -> st.SearchStrategy[dict[str, Any]]:
    """Params for ``method``: each of its fields maybe present, well-typed or not, plus
    maybe an unknown member or a deeply nested value."""
    fields = msgspec.structs.fields(method.params)
    names = {f.name for f in fields}
    optional = {f.name: _field_values(f.name, f.type) for f in fields}
    known = st.fixed_dictionaries({}, optional=optional)
    unknown = st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: k not in names),
        json_values,
        max_size=2,
    )
    deep = st.sampled_from(sorted(names) or ["x"]).flatmap(
        lambda name: st.integers(1, 300).map(lambda depth: {name: nested(depth)})
    )
    return st.one_of(
        known,
        known,
        known,
        st.builds(lambda a, b: {**b, **a}, known, unknown),
        deep,
    )


def request_line(method: str, params: Any, request_id: Any = 1, *, nan_ok: bool = True) -> bytes:
    """One request as a frame. Non-finite floats become NaN/Infinity tokens (not JSON:
    the daemon must answer them with a parse error)."""
    envelope = {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}
    text = json.dumps(envelope, allow_nan=nan_ok, ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass") + b"\n"


def rooted(value: Any, root: str) -> Any:
    """``value`` with every string starting with :data:`ROOT` moved under ``root``."""
    if isinstance(value, str) and value.startswith(ROOT):
        return root + value[len(ROOT) :]
    if isinstance(value, dict):
        return {k: rooted(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [rooted(v, root) for v in value]
    return value
