"""Which source a file looks like, from its first bytes: the hint an import gives when
the file is not of the source named (``--from mem0`` given an MCP memory graph)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec

from hikmah.model.vocabulary import ImportSource

_HEAD_BYTES = 64 << 10
_LISTED = 1000  # entries of a folder tree looked at
_SQLITE = b"SQLite format 3\x00"
_INSTRUCTION_FILES = frozenset({"claude.md", "agents.md"})


def looks_like(path: Path) -> ImportSource | None:
    """The source whose input ``path`` resembles, or None when it resembles none (or
    cannot be read: the reader has said why already)."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            return "basic-memory" if _holds_notes(path) else None
        if not stat.S_ISREG(mode):
            return None  # a FIFO would block
        with path.open("rb") as file:
            head = file.read(_HEAD_BYTES)
    except OSError:
        return None
    if head.startswith(_SQLITE):
        return "claude-mem"
    if _graph_line(head):
        return "mcp-memory"
    start = head.lstrip()[:1]
    if start in (b"{", b"[") and (b'"results"' in head or b'"memory"' in head):
        return "mem0"
    if path.name.lower() in _INSTRUCTION_FILES:
        return "claude-md"
    return None


def _holds_notes(folder: Path) -> bool:
    """Whether a Markdown note is among the first entries of the folder's tree."""
    seen = 0
    for _, directories, files in os.walk(folder):
        directories[:] = [d for d in directories if not d.startswith(".")]
        if any(name.endswith(".md") for name in files):
            return True
        seen += len(files) + len(directories)
        if seen >= _LISTED:
            break
    return False


def _graph_line(head: bytes) -> bool:
    """Whether the first line is an MCP memory graph's entity or relation record."""
    first = next((line for line in head.splitlines() if line.strip()), b"")
    try:
        record = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return False
    return isinstance(record, dict) and record.get("type") in ("entity", "relation")
