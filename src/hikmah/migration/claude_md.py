"""Agent instruction files: ``CLAUDE.md``, ``AGENTS.md`` (and ``CLAUDE.local.md``).

They are Markdown a person (or an agent) wrote for coding agents: headings,
bullet rules, numbered steps, fenced commands and a little prose. Hikmah's own
writeback block (:mod:`hikmah.model.managed_block`) is skipped: it holds memory that
came from Hikmah. So are HTML comments, tables, block quotes and Claude Code's
``@path`` import lines (import the file they name on its own).

What becomes what (each tagged with its headings and the file's name):

* a list item: a ``constraint`` when it says what must or must not be done
  (must, never, always, do not, don't, required, only, forbidden, …), a
  ``procedure`` under a heading about commands, building, testing, running,
  setting up, installing, deploying, releasing or a workflow, otherwise a
  ``preference``;
* a fenced block under such a heading: a ``procedure`` (the heading, then the
  commands); other fenced blocks are examples and are skipped;
* a paragraph: a ``constraint`` or ``procedure`` by the same words and headings,
  otherwise an ``observation`` (what the file says about the project).

Scope: ``global`` for the person's own files (``~/.claude/CLAUDE.md``,
``~/.codex/AGENTS.md``, given ``home``), else the project the file belongs to
(``project:<git root>``). An item is identified by the file, its headings and
its first two words, so a rule edited after them corrects its earlier import,
while a rule added or removed beside it changes nothing else (a rule removed
from the file stays in Hikmah until a person retires it).
The file keeps no times: items are dated by its modification time.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hikmah.migration.items import (
    Collector,
    ImportSourceError,
    Reading,
    lead,
    make_item,
    mtime_ms,
)
from hikmah.migration.markdown import Block, blocks
from hikmah.migration.sources import check_file, read_text
from hikmah.model.managed_block import is_begin, is_end
from hikmah.model.paths import project_scope
from hikmah.model.vocabulary import Kind

SOURCE = "tool:claude-md"
WHAT = "an agent instruction file (CLAUDE.md, AGENTS.md)"
_GLOBAL_DIRS = (".claude", ".codex")
_MUST = re.compile(
    r"\b(?:must|never|always|do not|don't|dont|does not|cannot|can't|required|requires"
    r"|mandatory|forbidden|prohibited|only|shall|under no circumstances|important)\b",
    re.IGNORECASE,
)
_STEPS = re.compile(
    r"\b(?:commands?|build(?:ing)?|tests?|testing|run(?:ning)?|set ?up|install(?:ing|ation)?"
    r"|deploy(?:ing|ment)?|release|releasing|workflow|steps|how to|development|scripts?)\b",
    re.IGNORECASE,
)


def read(path: Path, *, home: Path | None = None) -> Reading:
    """Read an instruction file into items.

    Args:
        path: the file.
        home: the person's home directory: files in its ``.claude`` or
            ``.codex`` folder are the person's own (scope ``global``).

    Raises:
        ImportSourceError: not a Markdown file, not UTF-8 text, or a Hikmah
            block that does not close (or closes before it opens).
    """
    path = path.absolute()  # locators name the file wherever the import ran
    check_file(path, WHAT)
    if path.suffix.lower() != ".md":
        raise ImportSourceError(f"{path} is not a Markdown file: not {WHAT}")
    lines = _without_block(read_text(path, WHAT).splitlines(), path)
    scope = _scope(path, home)
    created = mtime_ms(path)
    tags = [path.name]
    found = Collector()
    places: Counter[tuple[str, ...]] = Counter()
    resolved = path.resolve()
    for block in blocks(lines):
        kind = _kind(block)
        if kind is None:
            continue
        place = (*block.headings, lead(block.text))
        places[place] += 1
        content = block.text
        if block.kind == "fence":
            content = f"{block.headings[-1]}:\n{block.text}"
        found.add(
            make_item(
                source=SOURCE,
                identity="\0".join([str(resolved), *place, str(places[place])]),
                locator=f"{path}:{block.line}",
                kind=kind,
                content=content,
                tags=[*tags, *block.headings],
                scope=scope,
                created_at=created,
            )
        )
    return found.reading()


def _kind(block: Block) -> Kind | None:
    steps = any(_STEPS.search(title) for title in block.headings[-1:])
    if block.kind == "item":
        if not block.text.strip():
            return None
        if _MUST.search(block.text):
            return "constraint"
        return "procedure" if steps else "preference"
    if block.kind == "fence":
        return "procedure" if steps and block.text.strip() else None
    if block.kind == "paragraph" and not block.text.lstrip().startswith("@"):
        if _MUST.search(block.text):
            return "constraint"
        return "procedure" if steps else "observation"
    return None


def _without_block(lines: list[str], path: Path) -> list[str]:
    """The lines with Hikmah's writeback block blanked (numbers stay the file's)."""
    begins = [i for i, line in enumerate(lines) if is_begin(line)]
    ends = [i for i, line in enumerate(lines) if is_end(line)]
    if not begins and not ends:
        return lines
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        where = ", ".join(str(i + 1) for i in sorted(begins + ends))
        raise ImportSourceError(
            f"{path}: the hikmah markers on lines {where} do not form one block;"
            " fix them by hand so that the block Hikmah wrote is not imported back"
        )
    begin, end = begins[0], ends[0]
    return lines[:begin] + [""] * (end - begin + 1) + lines[end + 1 :]


def _scope(path: Path, home: Path | None) -> str:
    folder = path.resolve().parent
    if home is not None and folder.parent == home.resolve() and folder.name in _GLOBAL_DIRS:
        return "global"
    return project_scope(folder)
