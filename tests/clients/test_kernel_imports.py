"""The clients' import rule: a client imports the kernel's client-safe packages only
(``hikmah.model``: types, errors, paths, display; ``hikmah.access``: who is asking), and
importing every client loads neither the store nor what it is built on."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENTS = REPO / "clients"
ALLOWED = ("hikmah.model", "hikmah.access")
# What only the store needs: a client that loads one of these has reached past the rule.
STORE_ONLY = ("lmdb", "numpy", "hikmah.store", "hikmah.index", "hikmah.semantic", "hikmah.recall")


def client_modules() -> list[Path]:
    return sorted(path for package in CLIENTS.glob("hikmah_*") for path in package.rglob("*.py"))


def kernel_imports(path: Path) -> list[str]:
    """The ``hikmah.*`` modules a client module imports, wherever the import is."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "hikmah":
                found += [f"hikmah.{alias.name}" for alias in node.names]
            elif node.module.startswith("hikmah."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("hikmah.")]
    return found


def test_clients_import_only_the_client_safe_packages() -> None:
    outside = {
        f"{path.relative_to(REPO)}: {name}"
        for path in client_modules()
        for name in kernel_imports(path)
        if name != "hikmah.__version__" and not name.startswith(ALLOWED)
    }
    assert not outside, sorted(outside)


def test_importing_every_client_loads_nothing_only_the_store_needs() -> None:
    modules = [
        ".".join(path.relative_to(CLIENTS).with_suffix("").parts).removesuffix(".__init__")
        for path in client_modules()
        if path.name != "__main__.py"
    ]
    program = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=REPO
    )
    loaded = json.loads(done.stdout)
    assert len(modules) > 40 and "hikmah_cli.commands" in loaded
    reached = [name for name in loaded if name.startswith(STORE_ONLY)]
    assert not reached, reached
