"""The project scope of a directory, as every client names it."""

from __future__ import annotations

from pathlib import Path


def project_root(directory: Path) -> Path:
    """The nearest enclosing directory with a ``.git`` entry, else ``directory`` itself."""
    directory = directory.resolve()
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return directory


def project_scope(directory: Path) -> str:
    """``project:<root>``: the scope for memory about the project ``directory`` belongs to."""
    return f"project:{project_root(directory)}"
