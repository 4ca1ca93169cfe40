"""The official MCP memory server's knowledge graph (``memory.jsonl``).

The format, as ``@modelcontextprotocol/server-memory`` (2026.8.31) reads and
writes it: JSON Lines, one object per line, rewritten whole on every change;
``{"type": "entity", "name", "entityType", "observations": [str, …]}`` and
``{"type": "relation", "from", "to", "relationType"}``. The server skips lines
of any other type and fails on a line that is not JSON; entity names are its
identifiers (a relation names its ends by them). It keeps no times, so every
item is dated by the file's modification time.

What becomes what:

* each observation of an entity: an ``observation``, ``"<entity>: <text>"``,
  tagged with the entity's name and type; identified by the entity and the
  text (the server only adds and deletes observations, never edits one);
* each entity's type: a ``belief`` with claim key ``"<entity> entity type"``,
  so an entity recreated with another type corrects the earlier import;
* each relation: a ``belief`` ``"<from> <relationType> <to>"`` with claim key
  ``"<from> <relationType>"`` and value ``<to>``, so that two targets for one
  relation show up in ``hikmah conflicts`` (for a relation that has many
  targets by nature, ``knows``, they are listed there too: the graph does not
  say which relations are single-valued).

Everything is ``global``: the graph has no projects or users.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from hikmah.migration.items import (
    Collector,
    ImportSourceError,
    Reading,
    digest_of,
    field_error,
    make_item,
    mtime_ms,
)
from hikmah.migration.sources import open_file

SOURCE = "tool:mcp-memory"


class _Entity(msgspec.Struct, frozen=True, tag_field="type", tag="entity"):
    name: str
    entity_type: str = msgspec.field(name="entityType")
    observations: list[str] = []


class _Relation(msgspec.Struct, frozen=True, tag_field="type", tag="relation"):
    to: str
    relation_type: str = msgspec.field(name="relationType")
    from_: str = msgspec.field(name="from")


_LINE = msgspec.json.Decoder(_Entity | _Relation)


def read(path: Path) -> Reading:
    """Read a ``memory.jsonl`` into items.

    Raises:
        ImportSourceError: the file cannot be read, a line is not JSON (a
            truncated file), an entity or relation is malformed, or no line is
            an entity or a relation (not a memory graph).
    """
    path = path.absolute()  # locators name the file wherever the import ran
    found = Collector()
    lines = 0
    with open_file(path, "an MCP memory graph (memory.jsonl)") as file:
        created = mtime_ms(path)
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            lines += 1
            where = f"{path}:{number}"
            record = _decode(raw, where)
            if record is None:
                found.skip(where, "not an entity or a relation (the server ignores it too)")
            elif isinstance(record, _Entity):
                _entity(found, record, where, created)
            else:
                _relation(found, record, where, created)
    if lines and len(found.skipped) == lines:
        raise ImportSourceError(
            f"{path} is not an MCP memory graph: none of its lines is an entity or a relation"
        )
    return found.reading()


def _decode(raw: bytes, where: str) -> _Entity | _Relation | None:
    try:
        return _LINE.decode(raw)
    except msgspec.ValidationError as exc:  # JSON, but not an entity or a relation
        value = msgspec.json.decode(raw)
        if isinstance(value, dict) and value.get("type") in ("entity", "relation"):
            raise ImportSourceError(f"{where}: malformed record ({field_error(exc)})") from None
    except msgspec.DecodeError:
        raise ImportSourceError(
            f"{where} is not a JSON object: the file is cut short or damaged, or it is not"
            " JSON Lines"
        ) from None
    return None


def _entity(found: Collector, entity: _Entity, where: str, created: int) -> None:
    tags = (entity.name, entity.entity_type)
    if entity.entity_type.strip():
        found.add(
            make_item(
                source=SOURCE,
                identity=f"entity\0{entity.name}\0type",
                locator=where,
                kind="belief",
                content=f"{entity.name} is {_article(entity.entity_type)} {entity.entity_type}",
                claim_key=f"{entity.name} entity type",
                claim_value=entity.entity_type,
                tags=tags,
                created_at=created,
            )
        )
    for index, text in enumerate(entity.observations):
        if not text.strip():
            found.skip(f"{where} observations[{index}]", "an empty observation")
            continue
        found.add(
            make_item(
                source=SOURCE,
                identity=f"entity\0{entity.name}\0observation\0{digest_of(text)}",
                locator=f"{where} observations[{index}]",
                kind="observation",
                content=f"{entity.name}: {text}",
                tags=tags,
                created_at=created,
            )
        )


def _relation(found: Collector, relation: _Relation, where: str, created: int) -> None:
    subject, verb, target = relation.from_, relation.relation_type, relation.to
    if not (subject.strip() and verb.strip() and target.strip()):
        found.skip(where, "a relation without both ends and a type")
        return
    found.add(
        make_item(
            source=SOURCE,
            identity=f"relation\0{subject}\0{verb}\0{target}",
            locator=where,
            kind="belief",
            content=f"{subject} {verb} {target}",
            claim_key=f"{subject} {verb}",
            claim_value=target,
            tags=(subject, target),
            created_at=created,
        )
    )


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
