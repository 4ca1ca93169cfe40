"""docs/protocol.md is checked against the wire's types: each method's params table names
exactly its Params' fields, its result table its Result's fields in their order on the wire,
each object's table its Struct's, and every complete request and reply in its examples
decodes with those types, strictly."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hikmah.model.wire.base import Params, Result
from hikmahd.daemon import REGISTRIES
from hikmahd.rpc import Method

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
METHODS: dict[str, Method] = {
    name: method for registry in REGISTRIES for name, method in registry.methods.items()
}
_FIELD = re.compile(r"^\| `([a-z_][a-z0-9_]*)` \|", re.M)  # a field's name may hold a digit


def sections() -> dict[str, str]:
    """Each ``### name`` section of the reference, by name."""
    parts = re.split(r"^### ", PROTOCOL.read_text(), flags=re.M)[1:]
    return {part.split("\n", 1)[0].strip(): part for part in parts}


SECTIONS = sections()


def table_after(section: str, header: str) -> list[str] | None:
    """The first-column names of the first table whose header row starts with ``header``."""
    at = section.find(header)
    if at < 0:
        return None
    rows = section[at:].split("\n\n", 1)[0]
    return _FIELD.findall(rows)


def result_table(section: str) -> list[str] | None:
    at = section.find("**Result**")
    return None if at < 0 else table_after(section[at:], "| field |")


def fields(struct: type[msgspec.Struct]) -> list[str]:
    return [field.encode_name for field in msgspec.structs.fields(struct)]


def json_values(section: str) -> Iterator[Any]:
    """Every complete JSON value of the section's examples: → and ← lines and json blocks
    (a value elided with … is not complete, and is skipped)."""
    texts = [line[2:] for line in section.splitlines() if line.startswith(("→ ", "← "))]
    texts += re.findall(r"```json\n(.*?)\n```", section, flags=re.S)
    for text in texts:
        try:
            yield msgspec.json.decode(text)
        except msgspec.DecodeError:
            continue


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_method_is_typed_and_its_reference_names_its_fields(name: str) -> None:
    method = METHODS[name]
    assert issubclass(method.params, Params), f"{name}: params are not a wire Params"
    assert method.result is not None, f"{name}: no Result type registered"
    assert method.params.__module__.startswith("hikmah.model.wire"), method.params
    assert name in SECTIONS, f"{name}: no section in docs/protocol.md"
    section = SECTIONS[name]
    params = table_after(section, "| param |")
    if fields(method.params):
        assert params is not None, f"{name}: no params table"
        assert sorted(params) == sorted(fields(method.params)), f"{name}: the params table"
    else:
        assert params is None, f"{name}: a params table for a method that takes none"
    if issubclass(method.result, Result):
        assert method.result.__module__.startswith("hikmah.model.wire"), method.result
        assert result_table(section) == fields(method.result), f"{name}: the result table"


def test_every_example_request_and_reply_decodes_with_its_methods_types() -> None:
    checked = 0
    for section in SECTIONS.values():
        asked: dict[Any, str] = {}
        for value in json_values(section):
            if not isinstance(value, dict):
                continue
            method = METHODS.get(value.get("method", ""))
            if method is not None and "id" in value:
                asked[value["id"]] = method.name
                raw = msgspec.json.encode(value.get("params", {}))
                msgspec.json.decode(raw, type=method.params)
                checked += 1
            elif "result" in value and value.get("id") in asked:
                answered = METHODS[asked[value["id"]]]
                assert answered.result is not None
                msgspec.json.decode(msgspec.json.encode(value["result"]), type=answered.result)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("name", ["Trace", "StoredTrace"])
def test_an_objects_table_names_its_structs_fields(name: str) -> None:
    from hikmah.model import trace
    from hikmah.model.wire import memory

    struct = getattr(trace, name, None) or getattr(memory, name)
    assert table_after(SECTIONS[name], "| field |") == fields(struct)
