"""A basic-memory project: a folder of Markdown notes.

The format, as basic-memory 0.24.1 writes notes (``bm tool write-note``) and
parses them (``basic_memory/markdown/plugins.py``): front matter with
``title``, ``type``, ``permalink`` and ``tags``; then Markdown in which a list
item ``[category] content #tag (context)`` is an observation (a list item
with a ``#tag`` and no category is one too; ``[ ]``/``[x]`` task boxes,
timestamps and links are not categories), and a list item
``relation_type [[Target]] (context)`` is a relation (a quoted type may hold
spaces). Notes conventionally keep them under ``## Observations`` and
``## Relations``, but basic-memory finds them anywhere outside block quotes and
code, and so does this reader. Wiki links in running text (basic-memory's
implicit ``links_to``) are not imported. basic-memory keeps no times in the
files: items are dated by the note's modification time.

What becomes what (``<title>`` is the note's title):

* the note's own text (everything but its title, observations and relations):
  one ``observation``, ``"<title>\\n\\n<text>"``, tagged ``note``;
* each observation: an ``observation``, ``"<title>: <content> (<context>)"``,
  tagged with its category and ``#tags``;
* each relation: a ``belief`` ``"<title> <type> <Target>"``, claim key
  ``"<title> <type>"``, value ``<Target>``;
* every item is also tagged with the note's title and front-matter tags, and
  is ``global`` (a knowledge base is the person's, not a code project's).

A note is identified by its permalink (it survives a rename), an observation
by its note, its category and its first two words (so an observation edited
after them corrects its earlier import, and one added or removed beside it
changes nothing else), a relation by its note, type and target.
"""

from __future__ import annotations

import os
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
from hikmah.migration.markdown import Block, blocks, front_matter
from hikmah.migration.sources import check_directory, read_text
from hikmah.model.vocabulary import Kind

SOURCE = "tool:basic-memory"
WHAT = "a basic-memory project"
_CATEGORY = re.compile(r"\[([^\[\]()]+)\][ \t]+(.+)")
_TIMESTAMP = re.compile(r"\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?(?:\s+-\s+\S+)?")
_RELATION = re.compile(
    r"""(?P<type>"[^"]+"|'[^']+'|[^\s\[]+)[ \t]+\[\[(?P<target>[^\]]+)\]\](?P<rest>.*)"""
)
_LINK = re.compile(r"\[\[.*\]\]|\[.*\]\(.*\)")
_HASHTAG = re.compile(r"(?:^|\s)#([^\s#]+)")
_SECTION_TITLES = {"observations", "relations"}


def read(path: Path) -> Reading:
    """Read every note of a basic-memory project folder into items.

    Hidden folders (``.git``, ``.obsidian``, basic-memory's own) are skipped.

    Raises:
        ImportSourceError: the path is not a folder, it holds no Markdown note,
            or a note is not UTF-8 text.
    """
    path = path.absolute()  # locators name the file wherever the import ran
    check_directory(path, WHAT)
    notes = sorted(_notes(path))
    if not notes:
        raise ImportSourceError(f"{path} holds no Markdown notes: it is not {WHAT}")
    found = Collector()
    for note in notes:
        _note(found, note, path)
    return found.reading()


def _notes(root: Path) -> list[Path]:
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        found += [Path(folder, name) for name in files if name.endswith(".md")]
    return found


def _note(found: Collector, file: Path, root: Path) -> None:
    lines = read_text(file, "a Markdown note").splitlines()
    meta, start = front_matter(lines)
    relative = file.relative_to(root).with_suffix("").as_posix()
    permalink = _string(meta.get("permalink")) or relative
    parsed = list(blocks(lines[start:], start + 1))
    title = _string(meta.get("title")) or _first_title(parsed) or file.stem
    tags = [title, *_strings(meta.get("tags"))]
    created = mtime_ms(file)
    name = f"memory://{permalink}"
    prose: list[str] = []
    seen: Counter[str] = Counter()

    def add(
        identity: str,
        line: int,
        kind: Kind,
        content: str,
        tags: list[str],
        claim: tuple[str, str] | None = None,
    ) -> None:
        seen[identity] += 1
        found.add(
            make_item(
                source=SOURCE,
                identity=f"note\0{permalink}\0{identity}\0{seen[identity]}",
                locator=f"{file}:{line} {name}",
                kind=kind,
                content=content,
                tags=tags,
                claim_key=None if claim is None else claim[0],
                claim_value=None if claim is None else claim[1],
                created_at=created,
            )
        )

    for block in parsed:
        if block.kind == "item" and (observation := _observation(block.text)):
            category, content, context, hashtags = observation
            add(
                f"observation\0{category}\0{lead(content)}",
                block.line,
                kind="observation",
                content=f"{title}: {content}" + (f" ({context})" if context else ""),
                tags=[*tags, *([category] if category else []), *hashtags],
            )
        elif block.kind == "item" and (relation := _relation(block.text)):
            verb, target, context = relation
            add(
                f"relation\0{verb}\0{target}",
                block.line,
                kind="belief",
                content=f"{title} {verb} {target}" + (f" ({context})" if context else ""),
                tags=[*tags, target],
                claim=(f"{title} {verb}", target),
            )
        elif not _is_own_heading(block, title):
            prose.append(f"- {block.text}" if block.kind == "item" else block.text)
    if any(part.strip() for part in prose):
        add(
            "text",
            start + 1,
            kind="observation",
            content="\n\n".join([title, *prose]),
            tags=[*tags, "note"],
        )


def _observation(text: str) -> tuple[str | None, str, str | None, list[str]] | None:
    """``(category, content, context, tags)`` of an observation list item, or None."""
    if text.startswith(("[ ]", "[x]", "[X]", "[-]")) or _LINK.fullmatch(text):
        return None
    category: str | None = None
    match = _CATEGORY.fullmatch(text)
    if match and not _TIMESTAMP.fullmatch(match.group(1).strip()) and not _task_box(match.group(1)):
        category, text = match.group(1).strip(), match.group(2).strip()
    elif not _HASHTAG.search(text):
        return None
    context = None
    if text.endswith(")") and (opening := text.rfind("(")) != -1:
        context, text = text[opening + 1 : -1].strip() or None, text[:opening].strip()
    if not text:
        return None
    tags = [tag for part in _HASHTAG.findall(text) for tag in part.split("#") if tag]
    return category, text, context, tags


def _task_box(category: str) -> bool:
    return len(category) == 1 and (category in "xX" or not category.isalnum())


def _relation(text: str) -> tuple[str, str, str | None] | None:
    """``(type, target, context)`` of an explicit relation list item, or None."""
    match = _RELATION.fullmatch(text)
    if match is None:
        return None
    rest = match.group("rest").strip()
    if rest and not (rest.startswith("(") and rest.endswith(")")):
        return None  # a sentence that happens to hold a link
    verb = match.group("type").strip("'\"").strip()
    target = match.group("target").strip()
    if not verb or not target:
        return None
    return verb, target, rest[1:-1].strip() or None if rest else None


def _is_own_heading(block: Block, title: str) -> bool:
    """The note's title heading and the Observations/Relations headings are not text."""
    if block.kind != "heading":
        return False
    return block.text == title or block.text.strip().lower() in _SECTION_TITLES


def _first_title(parsed: list[Block]) -> str | None:
    return next((b.text for b in parsed if b.kind == "heading" and b.text), None)


def _string(value: str | list[str] | None) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _strings(value: str | list[str] | None) -> list[str]:
    if isinstance(value, list):
        return value
    return [v.strip() for v in value.split(",")] if isinstance(value, str) else []
