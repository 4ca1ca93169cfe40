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
* the newest version was superseded by someone else (a person corrected or
  verified it) or purged: nothing, and the reason is reported, so an import
  never overrides a correction or brings back a purged trace.

Records the peer deleted are not in its export, so the import cannot see them
go: their traces stay, as every write does, until a person retires them.

A write that says what an active trace already says (the same text once
normalised, :func:`hikmah.index.queries.same_content`) is still written, since the
store keeps every write and recall folds them, but :func:`plan_page` names
that trace, so the import reports the near-duplicate.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal, NamedTuple

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.index.snapshot import Snapshot
from hikmah.migration.items import Item, content_version, item_trace_id
from hikmah.model.trace import Draft, normalize_content
from hikmah.model.wire.memory import StoredTrace
from hikmah.rules.operations import Remember

Reason = Literal["already", "older", "kept_correction", "purged"]


class Write(NamedTuple):
    """Write ``draft`` with this id and time (a correction when it supersedes).

    ``duplicate_of`` names an active trace that already says the same
    (:func:`plan_page` fills it).
    """

    item: Item
    trace_id: str
    draft: Draft
    created_at: int
    duplicate_of: str | None = None

    @property
    def correction(self) -> bool:
        """Whether this write supersedes an earlier import of the same record."""
        return self.draft.supersedes is not None

    def operation(self, session: AgentSession | None) -> Remember:
        """The write operation, made by the importer (stamped when it is an agent session)."""
        return Remember(
            draft=self.draft, session=session, trace_id=self.trace_id, created_at=self.created_at
        )


class Skip(NamedTuple):
    """Nothing to write for ``item``; ``trace_id`` is the version it was judged by."""

    item: Item
    reason: Reason
    trace_id: str


def plan(snapshot: Snapshot, item: Item) -> Write | Skip:
    """Decide what importing ``item`` writes, as the store stands in ``snapshot``.

    Returns:
        The write to submit, or why there is none.
    """
    versions: list[StoredTrace] = []
    while (found := queries.lookup(snapshot, item_trace_id(item, len(versions) + 1))) is not None:
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
        return Skip(item, "kept_correction", newest.superseded_by or newest_id)
    draft = item.draft(supersedes=newest_id)
    return Write(item, item_trace_id(item, len(versions) + 1), draft, item.created_at)


class Page(NamedTuple):
    """What one page of an import writes and skips, in the order of its items."""

    writes: list[Write]
    skips: list[Skip]


def plan_page(snapshot: Snapshot, items: Sequence[Item]) -> Page:
    """:func:`plan` each item, and name for each write the active trace it restates.

    That is a trace of the store other than the one the write corrects, or an
    earlier write of the same page (a later page finds the earlier pages' writes
    in the store).
    """
    writes: list[Write] = []
    skips: list[Skip] = []
    said: dict[str, str] = {}  # normalised content -> the page's first write saying it
    postings = functools.cache(snapshot.postings)  # the items of a page share many terms
    for item in items:
        planned = plan(snapshot, item)
        if isinstance(planned, Skip):
            skips.append(planned)
            continue
        text = normalize_content(planned.draft.content)
        restated = queries.same_content(snapshot, planned.draft.content, postings=postings)
        of = next((i for i in restated if i != planned.draft.supersedes), said.get(text))
        said.setdefault(text, planned.trace_id)
        writes.append(planned._replace(duplicate_of=of))
    return Page(writes, skips)
