"""Just enough Markdown for the readers of notes and instruction files.

:func:`blocks` splits a document into headings, list items, paragraphs and
fenced code, each with its first line number and the headings it sits under;
:func:`front_matter` reads the simple YAML front matter notes start with.
It is not a CommonMark parser: it knows the shapes people write in notes and
``CLAUDE.md`` files (ATX headings, ``-``/``*``/``+``/``1.`` lists with wrapped
lines, fences, block quotes, tables, HTML comments) and treats anything else as
a paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal, NamedTuple

BlockKind = Literal["heading", "item", "paragraph", "fence", "quote", "table"]

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_ITEM = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_QUOTE = re.compile(r" {0,3}>")
_TABLE = re.compile(r" {0,3}\|")


class Block(NamedTuple):
    """One block: its kind, its first line (from 1), its text, where it sits.

    ``text`` is the heading's title, the item's text (wrapped lines joined by
    spaces), the paragraph's lines, or the fence's content. ``ordered`` marks a
    numbered list item; ``headings`` are the titles of the enclosing headings,
    outermost first.
    """

    kind: BlockKind
    line: int
    text: str
    headings: tuple[str, ...]
    ordered: bool = False


def blocks(lines: list[str], first_line: int = 1) -> Iterator[Block]:
    """The blocks of a document given as lines without their endings.

    Args:
        lines: the document's lines.
        first_line: the number of ``lines[0]`` in the file (after front matter).
    """
    headings: list[tuple[int, str]] = []
    index = 0
    count = len(lines)
    while index < count:
        line = lines[index]
        number = first_line + index
        under = tuple(title for _, title in headings)
        if not line.strip() or _RULE.fullmatch(line):
            index += 1
        elif fence := _FENCE.match(line):
            end = _fence_end(lines, index, fence.group(1))
            yield Block("fence", number, "\n".join(lines[index + 1 : end]), under)
            index = end + 1
        elif line.lstrip().startswith("<!--"):
            index = _comment_end(lines, index) + 1
        elif heading := _HEADING.fullmatch(line):
            level, title = len(heading.group(1)), (heading.group(2) or "").strip()
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            yield Block("heading", number, title, under)
            index += 1
        elif item := _ITEM.fullmatch(line):
            end = _item_end(lines, index, len(item.group(1)))
            text = " ".join([item.group(3).strip(), *(x.strip() for x in lines[index + 1 : end])])
            ordered = item.group(2)[0].isdigit()
            yield Block("item", number, text.strip(), under, ordered)
            index = end
        else:
            kind: BlockKind = (
                "quote" if _QUOTE.match(line) else "table" if _TABLE.match(line) else "paragraph"
            )
            end = _paragraph_end(lines, index)
            yield Block(kind, number, "\n".join(x.strip() for x in lines[index:end]), under)
            index = end


def _fence_end(lines: list[str], start: int, opener: str) -> int:
    """The index of the closing fence line (or past the end: fences close at the end)."""
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(opener[0] * len(opener)) and not stripped.strip(opener[0]):
            return index
    return len(lines)


def _comment_end(lines: list[str], start: int) -> int:
    for index in range(start, len(lines)):
        if "-->" in lines[index]:
            return index
    return len(lines)


def _item_end(lines: list[str], start: int, indent: int) -> int:
    """Past the item's wrapped lines: indented further, and not a new block."""
    index = start + 1
    while index < len(lines):
        line = lines[index]
        if not line.strip() or _ITEM.fullmatch(line) or _FENCE.match(line):
            break
        if len(line) - len(line.lstrip()) <= indent and _starts_block(line):
            break
        index += 1
    return index


def _paragraph_end(lines: list[str], start: int) -> int:
    index = start + 1
    while index < len(lines) and lines[index].strip() and not _starts_block(lines[index]):
        index += 1
    return index


def _starts_block(line: str) -> bool:
    return bool(
        _HEADING.fullmatch(line)
        or _ITEM.fullmatch(line)
        or _FENCE.match(line)
        or _RULE.fullmatch(line)
        or _QUOTE.match(line)
        or _TABLE.match(line)
        or line.lstrip().startswith("<!--")
    )


def front_matter(lines: list[str]) -> tuple[dict[str, str | list[str]], int]:
    """The front matter's simple keys, and the index of the first line after it.

    Reads ``key: value`` (plain or quoted), ``key: [a, b]`` and a ``key:``
    followed by ``- item`` lines; nested maps and other YAML are skipped.
    A document without front matter gives ``({}, 0)``.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    found: dict[str, str | list[str]] = {}
    key: str | None = None
    for index in range(1, len(lines)):
        line = lines[index]
        if line.strip() in ("---", "..."):
            return found, index + 1
        if key is not None and (entry := re.fullmatch(r"\s*-\s+(.*)", line)):
            listed = found.setdefault(key, [])
            if isinstance(listed, list):
                listed.append(_scalar(entry.group(1)))
            continue
        pair = re.fullmatch(r"([A-Za-z_][\w-]*):(?:\s+(.*))?", line.rstrip())
        if pair is None:
            key = None
            continue
        key, value = pair.group(1), (pair.group(2) or "").strip()
        if value.startswith("[") and value.endswith("]"):
            found[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            found[key] = _scalar(value)
            key = None
    return {}, 0  # no closing line: it was not front matter


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
