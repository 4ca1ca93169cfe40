"""A mem0 export: the memories ``Memory.get_all()`` or the platform's ``get_all`` returns.

Shapes read (a file the person saved with ``json.dump``):

* the open-source library (mem0ai 2.2.1, ``mem0/memory/main.py``
  ``get_all``): ``{"results": [record, …]}``, each record a ``MemoryItem``
  (``id``, ``memory``, ``hash``, ``created_at``, ``updated_at``, ISO 8601 with
  an offset) plus ``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``
  when set and ``metadata`` for the rest of the payload;
* the platform client's ``get_all`` (``MemoryClient``, ``POST /v3/memories/``):
  the same records in a page, ``{"count", "next", "previous", "results"}``,
  with ``app_id``, ``categories``, ``immutable``, ``expiration_date``
  (docs.mem0.ai/api-reference/memory/get-memories);
* the older platform list (docs.mem0.ai/api-reference/memory/v1-get-memories)
  and what people save of ``result["results"]``: a bare list of records.

The platform's structured export (``create_memory_export``) is not a list of
memories but a document in a schema the person wrote, and is refused.

What becomes what: each memory an ``observation`` (mem0's memories are facts
its model extracted, or a message kept as is); scope ``person:<user_id>`` when
it has a user, else ``global``; tags from ``categories``, a string
``metadata.category``, and ``agent:``/``app:``/``run:`` for the other ids.
The memory's ``id`` identifies it, so a memory mem0 updated (new text, a new
``updated_at``) becomes a correction of its earlier import; the trace is dated
by ``updated_at`` (when this text was made) and its id by ``created_at``.
Graph relations (``relations``) of the platform are not imported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from hikmah.migration.items import (
    Collector,
    ImportSourceError,
    Reading,
    field_error,
    iso_ms,
    make_item,
    mtime_ms,
)
from hikmah.migration.sources import open_file

SOURCE = "tool:mem0"
WHAT = "a mem0 export (the JSON of Memory.get_all() or the platform's get_all)"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class _Memory(msgspec.Struct, frozen=True):
    id: str
    memory: str
    created_at: str | None = None
    updated_at: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    categories: list[str] | None = None


def read(path: Path) -> Reading:
    """Read a mem0 export into items.

    Raises:
        ImportSourceError: the file is not complete JSON, not one of the shapes
            above, or a record is malformed (named by its position and id).
    """
    path = path.absolute()  # locators name the file wherever the import ran
    with open_file(path, WHAT) as file:
        data = file.read()
        modified = mtime_ms(path)
    try:
        document = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        shape = "is cut short" if "truncated" in str(exc) else "is not one JSON document"
        raise ImportSourceError(f"{path} {shape}: not {WHAT}") from None
    records = _records(document, path)
    found = Collector()
    for index, raw in enumerate(records):
        where = f"{path}#results[{index}]"
        try:
            record = msgspec.convert(raw, _Memory)
        except msgspec.ValidationError as exc:
            raise ImportSourceError(f"{where}: not a mem0 memory ({field_error(exc)})") from None
        if not _ID.fullmatch(record.id):
            raise ImportSourceError(f"{where}: its id is not a mem0 memory id")
        where = f"{path}#memory={record.id}"
        if not record.memory.strip():
            found.skip(where, "an empty memory")
            continue
        born = _time(record.created_at, where, "created_at")
        changed = _time(record.updated_at, where, "updated_at")
        found.add(
            make_item(
                source=SOURCE,
                identity=f"memory\0{record.id}",
                locator=where,
                kind="observation",
                content=record.memory,
                tags=_tags(record),
                scope=f"person:{user}" if (user := (record.user_id or "").strip()) else "global",
                created_at=changed or born or modified,
                born_at=born,
            )
        )
    return found.reading()


def _records(document: object, path: Path) -> list[object]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        results = document.get("results")
        if isinstance(results, list):
            return results
        if "results" not in document and "memory" not in document:
            raise ImportSourceError(
                f'{path} has no "results" list of memories: a structured export'
                " (create_memory_export) follows a schema of your own and cannot be mapped;"
                " save the output of get_all() instead"
            )
    raise ImportSourceError(f"{path} is not {WHAT}")


def _tags(record: _Memory) -> list[str]:
    tags = list(record.categories or ())
    category = (record.metadata or {}).get("category")
    if isinstance(category, str):
        tags.append(category)
    for name, value in (("agent", record.agent_id), ("app", record.app_id), ("run", record.run_id)):
        if _given(value):
            tags.append(f"{name}:{value}")
    return tags


def _given(value: str | None) -> bool:
    return value is not None and bool(value.strip())


def _time(text: str | None, where: str, field: str) -> int | None:
    if text is None:
        return None
    moment = iso_ms(text)
    if moment is None:
        raise ImportSourceError(f"{where}: {field} is not an ISO 8601 time")
    return moment
