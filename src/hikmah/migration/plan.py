"""What an import item needs written, judged against what earlier imports wrote.

Each record of a peer gets a chain of trace ids, one per version, that depend
only on the source, the record's identity and the version's number
(:func:`~hikmah.migration.items.item_trace_id`). The planner walks the chain by
id (the store needs no index for it), and compares what the newest imported
version says with what the item says (:func:`~hikmah.migration.items.content_version`):

* no version yet: write version 1;
* the same: nothing to write (importing the same export again writes nothing);
* different, and the item is not older: write the next version, superseding
  the newest one, so a record the peer changed becomes a correction;
* different, but the item is older than the newest version (an earlier
  export imported after a later one), or says what an earlier version said
  and is not newer: nothing (no flip-flop);
* the newest version was superseded by someone else (a person corrected it)
  or purged: nothing, and the reason is reported, so an import never overrides
  a correction or brings back a purged trace.

Records the peer deleted are not in its export, so the import cannot see them
go: their traces stay, as every write does, until a person retires them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple, Protocol

from hikmah.migration.items import Item, content_version, item_trace_id
from hikmah.trace import Draft, Trace
from hikmah.vocabulary import Status


class Found(Protocol):
    """A stored trace and its state, as the store's ``lookup`` answers."""

    @property
    def trace(self) -> Trace: ...
    @property
    def status(self) -> Status: ...
    @property
    def superseded_by(self) -> str | None: ...


Lookup = Callable[[str], Found | None]
Reason = Literal["already", "older", "corrected", "purged"]


class Write(NamedTuple):
    """Write ``draft`` with this id and time (a correction when it supersedes)."""

    item: Item
    trace_id: str
    draft: Draft
    created_at: int

    @property
    def correction(self) -> bool:
        """Whether this write supersedes an earlier import of the same record."""
        return self.draft.supersedes is not None


class Skip(NamedTuple):
    """Nothing to write for ``item``; ``trace_id`` is the version it was judged by."""

    item: Item
    reason: Reason
    trace_id: str


def plan(item: Item, lookup: Lookup) -> Write | Skip:
    """Decide what importing ``item`` writes.

    Args:
        item: one item a reader produced.
        lookup: the store's lookup by trace id (purged traces included).

    Returns:
        The write to submit, or why there is none.
    """
    versions: list[Found] = []
    while (found := lookup(item_trace_id(item, len(versions) + 1))) is not None:
        versions.append(found)
    if not versions:
        return Write(item, item_trace_id(item, 1), item.draft(), item.created_at)
    newest = versions[-1]
    newest_id = newest.trace.id
    if newest.status == "purged":
        return Skip(item, "purged", newest_id)
    said = item.version
    if content_version(newest.trace) == said:
        return Skip(item, "already", newest_id)
    not_newer = item.created_at <= newest.trace.created_at
    if item.created_at < newest.trace.created_at or (
        not_newer and any(content_version(v.trace) == said for v in versions[:-1])
    ):
        return Skip(item, "older", newest_id)
    if newest.status != "active":
        return Skip(item, "corrected", newest.superseded_by or newest_id)
    draft = item.draft(supersedes=newest_id)
    return Write(item, item_trace_id(item, len(versions) + 1), draft, item.created_at)
