"""Types are the API: every method the daemon serves takes and answers the types of the
wire's table, and no handler builds its reply as a dict."""

from __future__ import annotations

import ast
from pathlib import Path

from hikmah.model.wire.base import Params
from hikmah.model.wire.methods import METHODS
from hikmahd.daemon import REGISTRIES

HANDLERS = Path(__file__).resolve().parents[2] / "daemon" / "hikmahd" / "handlers"


def test_every_method_served_is_in_the_wires_table_with_its_types() -> None:
    served = {name: method for registry in REGISTRIES for name, method in registry.methods.items()}
    assert set(served) == set(METHODS)
    for name, method in served.items():
        assert (method.params, method.result) == tuple(METHODS[name]), name
        assert issubclass(method.params, Params), name


def test_no_handler_returns_a_dict_literal() -> None:
    found = [
        f"{path.name}:{node.lineno}"
        for path in sorted(HANDLERS.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Return)
        and (
            isinstance(node.value, ast.Dict | ast.DictComp)
            or (
                isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "dict"
            )
        )
    ]
    assert not found, found
