"""The kernel's shape: topic packages in layers, none importing one above it, no import
cycle (an import for type checking counts), a short top level, and small modules."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "src" / "hikmah"
# Lowest first: a package may import those before it, never one after it.
LAYERS = (
    "model", "vault", "ledger", "access", "sync", "working", "index", "semantic", "recall",
    "learning", "rules", "migration", "store", "evaluation",
)  # fmt: skip
MAX_LINES = 600


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(KERNEL.rglob("*.py")):
        parts = path.relative_to(KERNEL.parent).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> Iterator[str]:
    """The kernel modules ``name`` imports, wherever the import is (a function, a
    ``TYPE_CHECKING`` block)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                yield target if target in MODULES else base
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


GRAPH = {
    name: {found for found in imports(name, path) if found in MODULES and found != name}
    for name, path in MODULES.items()
}


def package(name: str) -> str:
    return name.split(".")[1] if name.count(".") else ""


def test_no_package_imports_one_above_it() -> None:
    upward = [
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if package(name) in LAYERS
        and package(target) in LAYERS
        and LAYERS.index(package(target)) > LAYERS.index(package(name))
    ]
    assert not upward, upward


def test_no_import_cycle() -> None:
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path[path.index(name) :], name))
        if name in done:
            return
        for target in sorted(GRAPH[name]):
            visit(target, (*path, name))
        done.add(name)

    for name in MODULES:
        visit(name, ())


def test_the_top_level_is_the_packages_in_their_layers() -> None:
    packages = {path.parent.name for path in KERNEL.glob("*/__init__.py")}
    modules = {path.stem for path in KERNEL.glob("*.py")} - {"__init__"}
    assert packages | modules == set(LAYERS)


def test_no_module_is_over_600_lines() -> None:
    roots = [REPO / "src", REPO / "daemon", REPO / "clients", REPO / "bench"]
    long = {
        str(path.relative_to(REPO)): count
        for root in roots
        for path in root.rglob("*.py")
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long
