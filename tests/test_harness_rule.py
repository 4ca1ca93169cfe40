"""The test harness's rule, checked statically: no file imports a conftest (fixtures are
found by pytest, helpers live in tests.harness), and neither tests nor benchmarks define a
percentile or a socket wait of their own beside the harness's one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "tests" / "harness"


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for top in ("tests", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def imported_modules(path: Path, tree: ast.Module) -> Iterator[str]:
    """Every module ``tree`` imports, relative imports resolved against ``path``."""
    package = path.relative_to(ROOT).parent.parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)  # from . import x


def owned_name(name: str) -> bool:
    return name.startswith("percentile") or name == "wait_for_socket"


def test_no_file_imports_a_conftest() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {module}"
        for path, tree in sources()
        for module in imported_modules(path, tree)
        if "conftest" in module.split(".")
    ]
    assert found == []


def test_percentile_and_wait_for_socket_are_defined_only_in_the_harness() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}"
        for path, tree in sources()
        if not path.is_relative_to(HARNESS)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and owned_name(node.name)
    ]
    assert found == []


def test_the_rule_sees_what_it_forbids() -> None:
    # The checks above pass on an empty list; make sure they would catch the real thing.
    path = ROOT / "tests" / "sync" / "test_x.py"
    tree = ast.parse(
        "from tests.daemon.conftest import Running\nfrom .conftest import x\n"
        "from . import conftest\nimport tests.kernel.conftest\n"
    )
    modules = list(imported_modules(path, tree))
    assert [m for m in modules if "conftest" in m.split(".")] == [
        "tests.daemon.conftest",
        "tests.daemon.conftest.Running",
        "tests.sync.conftest",
        "tests.sync.conftest.x",
        "tests.sync.conftest",
        "tests.kernel.conftest",
    ]
    assert owned_name("percentile_us") and owned_name("wait_for_socket")
