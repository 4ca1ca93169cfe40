"""Every read query of the store but recall and proposals, over a :class:`Snapshot`.

Each takes the snapshot to read (``with store.snapshot() as snapshot``, or one
query alone: ``store.read(get, trace_id)``), so that the reads of one request
agree with each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from hikmah.index import fates, replicas
from hikmah.index.layout import (
    GLOBAL_SCOPE_ID,
    KIND_CODE,
    PRIVACY_CODE,
    STATUS_CODE,
    DocArray,
    claim_value_key,
    reminder_key,
)
from hikmah.index.review import HELD_FIELDS, held_rows
from hikmah.index.snapshot import Snapshot
from hikmah.model.errors import NotFound
from hikmah.model.moment import Moment
from hikmah.model.policy import ReviewPolicy
from hikmah.model.tokenizer import terms
from hikmah.model.trace import Trace, normalize_claim_key, normalize_claim_value, normalize_content
from hikmah.model.vocabulary import STATUSES, Status
from hikmah.model.wire.memory import (
    ClaimValue,
    ConflictGroup,
    ConflictValue,
    OwnRecord,
    StoredTrace,
)
from hikmah.model.wire.service import Reminders
from hikmah.working.promises import STAGES, Stage


def stored(
    snapshot: Snapshot, docno: int, *, trace: Trace | None = None, status: Status | None = None
) -> StoredTrace:
    """The trace at ``docno`` with its status and successor as ``snapshot`` reads them
    (and, read as of the past, its purge since)."""
    return StoredTrace(
        trace=snapshot.trace_at(docno) if trace is None else trace,
        status=snapshot.status_of(docno) if status is None else status,
        superseded_by=snapshot.successor(docno),
        purged=snapshot.purged_since(docno),
    )


class Scheduled(NamedTuple):
    """A commitment the promise queue schedules."""

    trace_id: str
    deadline: int
    created_at: int
    delivered: tuple[Stage, ...]


def lookup(snapshot: Snapshot, trace_id: str) -> StoredTrace | None:
    """One trace with its status, purged ones included (as their stub); None if no
    trace ever had that id. For import, which must tell "already here" from "new"."""
    docno = snapshot.docno(trace_id)
    return None if docno is None else stored(snapshot, docno)


def get(snapshot: Snapshot, trace_id: str) -> StoredTrace:
    """One trace with its status.

    Raises:
        NotFound: no trace has that id, or it was purged.
    """
    found = lookup(snapshot, trace_id)
    if found is None or found.status == "purged":
        raise NotFound(f"no trace has id {trace_id}")
    return found


def history(snapshot: Snapshot, trace_id: str) -> list[StoredTrace]:
    """The correction chain a trace belongs to, oldest first.

    Raises:
        NotFound: no trace has that id, or it was purged.
    """
    chain = [get(snapshot, trace_id)]
    seen = {trace_id}
    while (older := chain[0].trace.supersedes) and older not in seen:
        seen.add(older)
        found = lookup(snapshot, older)
        if found is None:
            break
        chain.insert(0, found)
    while (newer := chain[-1].superseded_by) and newer not in seen:
        seen.add(newer)
        found = lookup(snapshot, newer)
        if found is None:
            break
        chain.append(found)
    return [entry for entry in chain if entry.status != "purged"]


def record_of(snapshot: Snapshot, trace_id: str) -> OwnRecord:
    """The ledger record that wrote ``trace_id``.

    Raises:
        NotFound: no trace has that id.
    """
    docno = snapshot.docno(trace_id)
    if docno is None:
        raise NotFound(f"no trace has id {trace_id}")
    where = fates.origin(snapshot, docno)
    if where.device != fates.LOCAL:
        kept = fates.remembered_record(snapshot, where)
        return OwnRecord(seq=where.seq, hash=kept[0], at=kept[1], device=where.device)
    seq = int(snapshot.features.take(("seq_written",), np.array([docno]))["seq_written"][0])
    return OwnRecord(seq=seq, hash=snapshot.record_hash(seq), at=snapshot.written_at(seq))


def superseded_by(snapshot: Snapshot, trace_id: str) -> str | None:
    """The id of the trace that superseded this one, if any."""
    docno = snapshot.docno(trace_id)
    return None if docno is None else snapshot.successor(docno)


def successors(snapshot: Snapshot, trace_id: str) -> tuple[str, ...]:
    """Every trace that supersedes this one, by id (two devices may correct one trace at
    once; ``superseded_by`` names the first)."""
    docno = snapshot.docno(trace_id)
    if docno is None:
        return ()
    if snapshot.point is not None:  # as of the past: the link in force then
        first = snapshot.successor(docno)
        return () if first is None else (first,)
    return fates.fold(snapshot, trace_id, docno).successors


class Origin(NamedTuple):
    """The device a trace was written on: its id, whether it is this one, and the name it
    was paired with (None for this device, whose name the daemon knows)."""

    device: str
    here: bool
    name: str | None


def origin(snapshot: Snapshot, trace_id: str, here: str | None = None) -> Origin | None:
    """Where a trace was written (None: no such trace, or this device does not sync);
    ``here`` is :func:`hikmah.index.fates.this_device`, when the caller asks of many traces."""
    me = fates.this_device(snapshot) if here is None else here
    if not me:
        return None  # never synced: every record is this device's, and it has no id yet
    docno = snapshot.docno(trace_id)
    if docno is None:
        return None
    at = fates.origin(snapshot, docno)
    if at.device == fates.LOCAL:
        return Origin(me, True, None)
    entry = replicas.paired(snapshot, at.device)
    return Origin(at.device, False, None if entry is None else entry.name)


def conflicts_for(snapshot: Snapshot, trace: Trace) -> list[str]:
    """Ids of active traces claiming a different value for the same key."""
    if trace.claim_key is None or trace.claim_value is None:
        return []
    mine = claim_value_key(snapshot.dbs, trace.claim_value)
    return [
        snapshot.bare_trace_at(docno).id
        for _key, docno, value in snapshot.claim_entries(trace.claim_key)
        if value != mine
    ]


def same_content(
    snapshot: Snapshot, content: str, *, postings: Callable[[str], DocArray] | None = None
) -> Iterator[str]:
    """Ids of the active traces that say ``content`` again: the same text once normalised
    (:func:`~hikmah.model.trace.normalize_content`), as recall folds near-duplicates; read
    while ``snapshot`` is open, oldest first.

    Candidates hold every term of ``content`` and as many terms (the postings
    and the feature columns); only those are read, one by one as the caller
    asks. A text without terms (only stopwords) has no candidates. ``postings``
    reads a term's postings (default: the snapshot's), for a caller that asks
    about many texts sharing terms and keeps them.
    """
    words = sorted(terms(content))
    if not words:
        return
    lists = sorted(map(postings or snapshot.postings, words), key=len)
    docs = lists[0]
    for other in lists[1:]:  # each sorted: look the few candidates up in the longer lists
        if not len(docs):
            return
        at = np.searchsorted(other, docs)
        docs = docs[other[np.minimum(at, len(other) - 1)] == docs]
    columns = snapshot.features
    docs = docs[
        (columns["status"][docs] == STATUS_CODE["active"])
        & (columns["nterms"][docs] == min(len(words), 0xFFFF))
    ]
    wanted = normalize_content(content)
    for docno in docs:
        trace = snapshot.trace_at(int(docno))
        if normalize_content(trace.content) == wanted:
            yield trace.id


def conflicts(
    snapshot: Snapshot, key: str | None = None, hides: Callable[[Trace], bool] | None = None
) -> list[ConflictGroup]:
    """Every open conflict (or the one on ``key``), grouped by normalised key and value;
    without the traces ``hides`` says the caller may not read."""
    groups: dict[str, dict[str, list[str]]] = {}
    for _key, docno, _value in snapshot.claim_entries(key):
        trace = snapshot.trace_at(docno)
        assert trace.claim_key is not None and trace.claim_value is not None
        if hides is not None and hides(trace):
            continue
        name = normalize_claim_key(trace.claim_key)
        value = normalize_claim_value(trace.claim_value)
        groups.setdefault(name, {}).setdefault(value, []).append(trace.id)
    return [
        ConflictGroup(name, [ConflictValue(v, sorted(ids)) for v, ids in sorted(values.items())])
        for name, values in sorted(groups.items())
        if len(values) > 1
    ]


def claim_history(
    snapshot: Snapshot, key: str, hides: Callable[[Trace], bool] | None = None
) -> list[ClaimValue]:
    """Every value ``key`` was given (purged traces' aside, and those ``hides`` says the
    caller may not read), in write order."""
    docs = sorted(docno for _key, docno, _value in snapshot.claim_log(key))
    rows = snapshot.features.take(
        ("seq_written", "seq_superseded", "seq_fulfilled"), np.array(docs, dtype=np.intp)
    )
    out = []
    for i, docno in enumerate(docs):
        entry = stored(snapshot, docno)
        trace = entry.trace
        assert trace.claim_value is not None
        if hides is not None and hides(trace):
            continue
        ended = {"superseded": rows["seq_superseded"][i], "fulfilled": rows["seq_fulfilled"][i]}
        end = ended.get(entry.status)
        written = int(rows["seq_written"][i])
        out.append(
            ClaimValue(
                id=trace.id,
                value=trace.claim_value,
                source=trace.provenance.source,
                locator=trace.provenance.locator,
                verified=trace.provenance.verified,
                written=Moment(seq=written, at=snapshot.written_at(written)),
                status=entry.status,
                ended=None
                if end is None
                else Moment(seq=int(end), at=snapshot.written_at(int(end))),
                superseded_by=entry.superseded_by,
            )
        )
    return out


def queue(snapshot: Snapshot, now_ms: int, hides: Callable[[Trace], bool]) -> Reminders:
    """The promise queue in brief, as ``daemon.status`` tells it, from the feature
    columns: only the soonest commitments' traces are read (ties by id, as
    :func:`commitments` orders them), until one that ``hides`` leaves to the caller."""
    deadlines, docs = snapshot.dated()
    overdue = int(np.searchsorted(deadlines, now_ms, side="right"))
    start = 0
    while start < len(docs):
        end = int(np.searchsorted(deadlines, deadlines[start], side="right"))
        tied = sorted((snapshot.trace_at(int(d)) for d in docs[start:end]), key=_by_id)
        for trace in tied:
            if not hides(trace):
                return Reminders(scheduled=len(docs), overdue=overdue, next=trace)
        start = end
    return Reminders(scheduled=len(docs), overdue=overdue, next=None)


def _by_id(trace: Trace) -> str:
    return trace.id


def commitments(snapshot: Snapshot, *, until_ms: int | None = None) -> list[StoredTrace]:
    """Active commitments with a deadline, soonest first (ties by id: every device lists
    them in one order), up to ``until_ms``."""
    out: list[StoredTrace] = []
    for deadline, docno in snapshot.deadlines():
        if until_ms is not None and deadline > until_ms:
            break
        out.append(stored(snapshot, docno, status="active"))
    out.sort(key=lambda entry: (entry.trace.deadline, entry.trace.id))
    return out


def scheduled(snapshot: Snapshot) -> list[Scheduled]:
    """Every active commitment with a deadline, with the reminder stages delivered."""
    out: list[Scheduled] = []
    txn, reminders = snapshot.txn, snapshot.dbs.reminders
    for deadline, docno in snapshot.deadlines():
        trace = snapshot.bare_trace_at(docno)
        delivered = tuple(
            stage
            for stage in STAGES
            if txn.get(reminder_key(trace.id, stage), db=reminders) is not None
        )
        out.append(Scheduled(trace.id, deadline, trace.created_at, delivered))
    return out


def standing(
    snapshot: Snapshot,
    *,
    kinds: Sequence[str],
    scope: str | None,
    verified_only: bool = False,
    limit: int,
    hide_held: ReviewPolicy | None = None,
) -> list[StoredTrace]:
    """Active traces of these kinds that hold in ``scope``: the rules a session starts with.

    Global traces always hold; ``scope`` adds its own. Sensitive traces are
    never included, nor, with ``hide_held`` (for an agent), those it holds for the
    person's review. Verified first, then the most authoritative, then newest.
    """
    columns = snapshot.features
    mask = (columns["present"] == 1) & (columns["status"] == STATUS_CODE["active"])
    mask &= np.isin(columns["kind"], [KIND_CODE[kind] for kind in kinds])
    mask &= columns["privacy"] != PRIVACY_CODE["sensitive"]
    scopes = [GLOBAL_SCOPE_ID]
    if scope is not None:
        found = snapshot.scope_id(scope)
        scopes += [] if found is None else [found]
    mask &= np.isin(columns["scope"], scopes)
    if verified_only:
        mask &= columns["verified"] == 1
    if hide_held is not None:
        mask &= ~held_rows({name: columns[name] for name in HELD_FIELDS}, hide_held)
    docs = np.flatnonzero(mask)
    # lexsort sorts by the last key first; negate for descending order.
    order = np.lexsort(
        (
            -columns["created"][docs],
            -columns["authority"][docs],
            -columns["verified"][docs].astype(np.int8),
        )
    )
    return [
        StoredTrace(trace=snapshot.trace_at(int(docno)), status="active", superseded_by=None)
        for docno in docs[order][:limit]
    ]


def traces(snapshot: Snapshot, *, include_inactive: bool = True) -> Iterator[StoredTrace]:
    """Every trace in write order (purged ones never, nor another device's sealed traces
    on a device without the vault), read while ``snapshot`` is open."""
    statuses, present = snapshot.features["status"], snapshot.features["present"]
    for docno, value in snapshot.documents():
        status = STATUSES[int(statuses[docno])]
        if not present[docno] or status == "purged":
            continue
        if not include_inactive and status != "active":
            continue
        yield stored(snapshot, docno, trace=snapshot.load_trace(value), status=status)


def export_page(
    snapshot: Snapshot, after: str | None, limit: int, *, include_superseded: bool
) -> tuple[list[StoredTrace], str | None]:
    """Up to ``limit`` traces in write order after the trace ``after``.

    Purged traces never (nor, as of a point, those purged since: their text is
    gone), superseded ones only with ``include_superseded``. At
    most ``8 * limit`` traces are looked at, so a page may hold fewer than
    ``limit`` even when more follow.

    Returns:
        The traces, and the id to continue after (None at the end).

    Raises:
        NotFound: no trace has the id ``after``.
    """
    wanted = {"active", "fulfilled"} | ({"superseded"} if include_superseded else set())
    out: list[StoredTrace] = []
    start = 0
    if after is not None:
        docno = snapshot.docno(after)
        if docno is None:
            raise NotFound(f"no trace has id {after}: cannot continue an export after it")
        start = docno + 1
    statuses, present = snapshot.features["status"], snapshot.features["present"]
    documents = snapshot.documents(start)
    for looked, (docno, value) in enumerate(documents, 1):
        status = STATUSES[int(statuses[docno])]
        if status in wanted and present[docno] and snapshot.purged_since(docno) is None:
            out.append(stored(snapshot, docno, trace=snapshot.load_trace(value), status=status))
        if len(out) >= limit or looked >= 8 * limit:
            last = snapshot.bare_trace_at(docno).id
            return out, (last if next(documents, None) is not None else None)
    return out, None


def counts(snapshot: Snapshot) -> dict[str, int]:
    """How many traces are in each status."""
    features = snapshot.features
    by_status = np.bincount(features["status"][features["present"] == 1], minlength=len(STATUSES))
    return {status: int(n) for status, n in zip(STATUSES, by_status, strict=True)}


def resolutions(snapshot: Snapshot) -> list[tuple[Trace, Trace]]:
    """Every resolved prediction with the outcome that resolved it, in write order."""
    pairs = []
    columns = snapshot.features
    outcomes = np.flatnonzero(
        (columns["present"] == 1)
        & (columns["kind"] == KIND_CODE["outcome"])
        & (columns["status"] != STATUS_CODE["purged"])
    )
    for docno in outcomes:
        outcome = snapshot.trace_at(int(docno))
        if outcome.fulfills is None:
            continue
        target = snapshot.docno(outcome.fulfills)
        if target is None:
            continue
        prediction = snapshot.trace_at(target)
        if prediction.kind == "prediction":
            pairs.append((prediction, outcome))
    return pairs
