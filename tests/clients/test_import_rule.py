"""The clients share the client library, not each other: ``hikmah browse`` and
``hikmah-agent`` never import the CLI, and the library imports no client.

Read from the sources with :mod:`ast`, so an import inside a function (one made only
when a command runs) counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
# Each package, and the packages it must never import.
FORBIDDEN = {
    "hikmah_browse": {"hikmah_cli"},
    "hikmah_agent": {"hikmah_cli"},
    "hikmah_client": {"hikmah_cli", "hikmah_browse", "hikmah_agent"},
}


def imported(source: str) -> set[str]:
    """The top-level packages a module's source imports anywhere in it (relative
    imports stay in their own package and name none)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_an_import_made_inside_a_function_is_seen() -> None:
    source = (
        "def run():\n    from hikmah_cli.session import call\n    import hikmah_cli.render_memory\n"
    )
    assert imported(source) == {"hikmah_cli"}
    assert imported("from . import render_memory\nfrom .session import call\n") == set()


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_no_client_it_must_not(package: str) -> None:
    modules = sorted((CLIENTS / package).rglob("*.py"))
    assert modules, f"no modules found under clients/{package}"
    crossing = {
        str(module.relative_to(CLIENTS)): sorted(names)
        for module in modules
        if (names := imported(module.read_text(encoding="utf-8")) & FORBIDDEN[package])
    }
    assert crossing == {}
