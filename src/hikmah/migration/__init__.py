"""Coming over from other memory tools: readers of their exports, and the import plan.

``hikmah import --from SOURCE PATH`` reads a peer's data with one reader per
source (a module each), every one turning its input into neutral
:class:`~hikmah.migration.items.Item` s; :func:`~hikmah.migration.plan.plan`
then decides against a snapshot of the store what each item writes, and
:func:`~hikmah.migration.plan.plan_page` does so for one page of an import
(with the near-duplicates of what the store holds). docs/migrating.md says
where people find each source and what maps to what.

==================  ===========================  =====================================
source              reads                        becomes
==================  ===========================  =====================================
``mcp-memory``      ``memory.jsonl``             observations; entity types and
                                                 relations as beliefs
``claude-mem``      ``claude-mem.db`` (SQLite)   observations; session summaries as
                                                 episodes
``mem0``            a ``get_all()`` JSON export  observations
``basic-memory``    a project folder             observations (notes and their
                                                 observations); relations as beliefs
``claude-md``       ``CLAUDE.md``/``AGENTS.md``  constraints, preferences,
                                                 procedures, observations
==================  ===========================  =====================================

Every item's source is ``tool:<peer>``, it is never verified, and readers
never quote a record's text in an error: they name it by its locator.
Readers read the whole input before returning, so bad input yields nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from hikmah.migration import basic_memory, claude_md, claude_mem, mcp_memory, mem0
from hikmah.migration.items import ImportSourceError, Item, Reading
from hikmah.migration.plan import Page, Skip, Write, plan, plan_page
from hikmah.migration.sniff import looks_like

__all__ = [
    "SOURCES",
    "ImportSourceError",
    "Item",
    "Page",
    "Reading",
    "Skip",
    "Write",
    "plan",
    "plan_page",
    "read",
]

Reader = Callable[[Path], Reading]

SOURCES: dict[str, Reader] = {  # by hikmah.model.vocabulary.ImportSource
    "mcp-memory": mcp_memory.read,
    "claude-mem": claude_mem.read,
    "mem0": mem0.read,
    "basic-memory": basic_memory.read,
    "claude-md": claude_md.read,
}


def read(
    source: str,
    path: Path,
    *,
    home: Path | None = None,
    projects: Mapping[str, str] | None = None,
) -> Reading:
    """Read ``path`` as an export of ``source``.

    Args:
        source: one of :data:`SOURCES` (:data:`hikmah.model.vocabulary.IMPORT_SOURCES`).
        path: the file or folder the person named.
        home: the person's home folder (``claude-md``: their own files are global).
        projects: ``claude-mem`` project names mapped to scopes.

    Raises:
        ImportSourceError: an unknown source, or input that is not that source's.
    """
    if source not in SOURCES:
        raise ImportSourceError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
    try:
        if source == "claude-md":
            return claude_md.read(path, home=home)
        if source == "claude-mem":
            return claude_mem.read(path, projects=projects)
        return SOURCES[source](path)
    except ImportSourceError as exc:
        other = looks_like(path)
        if other is None or other == source:
            raise
        raise ImportSourceError(
            f"{exc} (it looks like {other}'s: import it with --from {other})"
        ) from None
