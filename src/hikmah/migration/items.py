"""What every reader produces: neutral import items, and the errors readers raise.

An :class:`Item` is one memory read from a peer, already in Hikmah's terms (a
kind, a content, tags, a scope, a claim) but not yet a write: the planner
(:mod:`hikmah.migration.plan`) decides against the store whether it is new, a
correction of an earlier import, or already there, and :meth:`Item.draft` is
what the write asks for, so :func:`hikmah.rules.writes.build_trace` and the credential
detector judge it like any ``remember``.

Items are normalised when made (:func:`make_item`) exactly as a write would
store them (content stripped, tags trimmed, lowercased and deduplicated), so
that :func:`content_version` gives the same digest for an item and for the
trace it became.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple, Protocol

import msgspec

from hikmah.model.errors import InvalidInput
from hikmah.model.trace import GLOBAL_SCOPE, Draft, derived_trace_id, draft_fields, normalize_tag
from hikmah.model.vocabulary import Kind
from hikmah.rules.checks import MAX_TAG


class ImportSourceError(InvalidInput):
    """The input is not a readable export of the peer; nothing was read from it.

    The message names the file and the record (a line, a row, a note) and never
    quotes the record's text, which could hold a credential.
    """


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One memory read from a peer.

    Attributes:
        source: the provenance source, ``tool:<peer>``; never a person.
        identity: the record's stable key in the peer (an id, or what the peer
            identifies it by), the same in every export of that record.
        locator: where this version was read (file and line, row id, permalink).
        kind: the trace kind it becomes.
        content: the text, stripped.
        tags: normalised tags (entity, category, the peer's tags).
        claim_key: for beliefs, what the claim is about.
        claim_value: for beliefs, what it says.
        scope: ``global``, ``project:…`` or ``person:…``.
        created_at: epoch ms of this version in the source (a file's modification
            time where the source keeps no time).
        born_at: epoch ms when the record first existed, if the source says and
            it stays the same across versions (it dates the trace id).
    """

    source: str
    identity: str
    locator: str
    kind: Kind
    content: str
    tags: tuple[str, ...] = ()
    claim_key: str | None = None
    claim_value: str | None = None
    scope: str = GLOBAL_SCOPE
    created_at: int
    born_at: int | None = None

    @property
    def version(self) -> str:
        """The digest of what the item says (see :func:`content_version`)."""
        return content_version(self)

    def draft(self, *, supersedes: str | None = None) -> Draft:
        """The write this item asks for (the fields it shares with a draft): never
        verified, the peer as its source."""
        return Draft(**draft_fields(self), supersedes=supersedes)


def make_item(
    *,
    source: str,
    identity: str,
    locator: str,
    kind: Kind,
    content: str,
    created_at: int,
    tags: Iterable[str] = (),
    claim_key: str | None = None,
    claim_value: str | None = None,
    scope: str = GLOBAL_SCOPE,
    born_at: int | None = None,
) -> Item:
    """An item normalised the way :func:`hikmah.rules.writes.build_trace` stores a trace."""
    return Item(
        source=source,
        identity=identity,
        locator=locator,
        kind=kind,
        content=content.strip(),
        tags=tuple(dict.fromkeys(t for t in map(normalize_tag, tags) if _fits_tag(t))),
        claim_key=None if claim_key is None else claim_key.strip(),
        claim_value=None if claim_value is None else claim_value.strip(),
        scope=scope.strip(),
        created_at=created_at,
        born_at=born_at,
    )


def _fits_tag(tag: str) -> bool:
    # A tag is a help to recall, not the memory: one a write would refuse (a long
    # entity name) is left off rather than costing the item its write.
    return bool(tag) and tag.isprintable() and len(tag.encode()) <= MAX_TAG


class Said(Protocol):
    """What a trace or an item says (the fields :func:`content_version` reads)."""

    @property
    def kind(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def claim_key(self) -> str | None: ...
    @property
    def claim_value(self) -> str | None: ...
    @property
    def scope(self) -> str: ...


def content_version(said: Said) -> str:
    """16 hex digits of a digest of the kind, content, tags, claim and scope.

    Two versions of a record differ exactly when what a person would recall of
    them differs; times and locators are not part of it (a line that moved is
    not a change).
    """
    parts = (
        said.kind,
        said.content,
        "\x1f".join(said.tags),
        said.claim_key or "",
        said.claim_value or "",
        said.scope,
    )
    return hashlib.blake2b("\x1e".join(parts).encode(), digest_size=8).hexdigest()


def item_trace_id(item: Item, number: int) -> str:
    """The trace id of the ``number``-th version (from 1) of an item's record.

    Dated by ``born_at`` (0 when the source keeps no creation time, so that the
    id is the same at every import), with a 64-bit digest of the source, the
    identity and the number: the importer finds every earlier version of a
    record by id alone, and records that share a time (every item of a source
    without times) do not collide.
    """
    key = f"{item.source}\0{item.identity}\0{number}"
    return derived_trace_id(item.born_at, key, digest_size=8)


def field_error(exc: msgspec.ValidationError) -> str:
    """msgspec's message for a record that does not fit: the field and the type
    it expected (the structs readers decode into have no enums, so it never
    quotes a value)."""
    return str(exc).replace("`$.", "`")


def lead(text: str, words: int = 2) -> str:
    """A text's first words, lowercased: part of the identity of a record the peer gives
    no id (a rule, an observation in a note), so that an edit further on corrects the
    earlier import while a record added or removed beside it leaves the others alone."""
    return " ".join(re.findall(r"\w+", text.lower())[:words])


def digest_of(text: str) -> str:
    """A short digest naming a text inside an identity without spelling it out."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def mtime_ms(path: Path) -> int:
    """A file's modification time in epoch milliseconds."""
    return path.stat().st_mtime_ns // 1_000_000


def iso_ms(text: str) -> int | None:
    """Epoch ms of an ISO 8601 time (``Z`` or an offset; naive times are UTC), or None."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


class Reading(NamedTuple):
    """What a reader got from an export: its items, and the records it left out.

    ``skipped`` names each record left out by its locator and says why (a line
    of a type the peer itself ignores, an empty memory), never by its text;
    ``refused``, each (redacted locator, reason) too large to be a trace
    (:mod:`hikmah.migration.stream`).
    """

    items: list[Item]
    skipped: list[str]
    refused: tuple[tuple[str, str], ...] = ()


class Collector:
    """Gathers a reader's items, one per record identity.

    A record read twice with the same contents is kept once; twice with
    different contents is an error, since the planner could not tell which
    version is the later one.
    """

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.skipped: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, item: Item) -> None:
        """Keep ``item`` unless its record was read already.

        Raises:
            ImportSourceError: the record was read before with other contents.
        """
        index = self._index.setdefault(item.identity, len(self.items))
        if index == len(self.items):
            self.items.append(item)
            return
        first = self.items[index]
        if first.version != item.version:
            raise ImportSourceError(
                f"{first.locator} and {item.locator} are the same record with different"
                " contents: keep one of them in the export, then import again"
            )

    def skip(self, locator: str, why: str) -> None:
        """Note a record that is not imported."""
        self.skipped.append(f"{locator}: {why}")

    def reading(self) -> Reading:
        """Everything gathered."""
        return Reading(self.items, self.skipped)
