"""Reading the store as it stood at a point in the past: a :class:`Past` snapshot.

A point is a ledger record (:class:`~hikmah.model.moment.Moment`: its sequence
number, and the time reads as of it take as now). The state as of record
``seq`` is what the ledger's first ``seq`` records made of memory, read from
the same indexes as the present, never by replaying the ledger:

- documents are numbered in ledger order, so the traces written by then are
  the first ``size`` documents (``seq_written`` is sorted);
- each document's status then is the latest of its ``seq_superseded``,
  ``seq_fulfilled`` and ``seq_purged`` that is at most ``seq`` (active when
  none is), its feedback and pin are the ``revisions`` entry in force then;
- a successor counts once its supersede record is in, a claim comes from
  ``claim_log`` while its trace was active then.

So a recall as of a point scores the same candidates as a present one, with
a different mask (:class:`PastColumns`). Purged text stays gone: a trace
purged since cannot be recalled, and reads that list traces show it by its
stub with the moment of its purge (:meth:`Past.purged_since`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from hikmah.index.columns import Derive, FeatureColumns
from hikmah.index.layout import (
    KIND_CODE,
    NO_DEADLINE,
    REVISION,
    SEQ,
    STATUS_CODE,
    DocArray,
    revision_key,
    split_revision_key,
)
from hikmah.index.snapshot import Snapshot
from hikmah.ledger.chain import decode_record
from hikmah.model.deadlines import parse_moment
from hikmah.model.errors import InvalidInput
from hikmah.model.head import Head
from hikmah.model.moment import AsOf, Moment
from hikmah.model.vocabulary import STATUSES, Status

# The features whose value depends on the point read as of; the others never change.
_STATE = ("status", "present", "feedback", "pinned")
_SEQS = ("seq_superseded", "seq_fulfilled", "seq_purged", "seq_touched")
_ACTIVE = STATUS_CODE["active"]


def moment(snapshot: Snapshot, as_of: AsOf, now_ms: int) -> Moment:
    """The ledger record ``as_of`` names, and the time reads as of it take as now.

    A number is a sequence number (read as of that record, at the time it was
    written); a text is a time (``YYYY-MM-DD[THH:MM[:SS]]`` UTC, ``HH:MM``
    today, ``-3d``, ``-12h``; read as of the last record written by then).

    Raises:
        InvalidInput: not a sequence number of the ledger, nor a past time.
    """
    last = snapshot.last_clock()
    if isinstance(as_of, bool):
        raise InvalidInput("as_of must be a ledger sequence number or a time, not a boolean")
    if isinstance(as_of, str) and as_of.strip().isdigit():
        as_of = int(as_of.strip())
    if isinstance(as_of, int):
        if not 0 <= as_of <= last:
            raise InvalidInput(f"as_of {as_of} is no record of the ledger, which has 1..{last}")
        return Moment(seq=as_of, at=snapshot.written_at(as_of))
    at = parse_moment(as_of, now_ms)
    if at > now_ms:
        raise InvalidInput(f"as_of {as_of!r} is in the future: the past only")
    return Moment(seq=snapshot.seq_at(at), at=at)


def as_of(snapshot: Snapshot, point: AsOf | Moment | None, now_ms: int) -> Snapshot:
    """The snapshot to read for ``point``: ``snapshot`` itself when None, else a
    :class:`Past` one (whose ``point`` says which record, and when)."""
    if point is None:
        return snapshot
    found = point if isinstance(point, Moment) else moment(snapshot, point, now_ms)
    return Past(snapshot, found)


def now_of(snapshot: Snapshot, now_ms: int) -> int:
    """The time a read of ``snapshot`` takes as now: its point's, or ``now_ms``."""
    return now_ms if snapshot.point is None else snapshot.point.at


class Past(Snapshot):
    """The store as of one ledger record, read through a present snapshot's transaction."""

    def __init__(self, present: Snapshot, point: Moment) -> None:
        super().__init__(present.txn, present.dbs)
        self.point: Moment = point
        self._present = present
        self._columns: PastColumns | None = None
        self._dated_then: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]] | None = None

    @property
    def features(self) -> PastColumns:
        if self._columns is None:
            self._columns = PastColumns(self._present.features, self._present, self.point.seq)
        return self._columns

    def overdue(self, now_ms: int) -> npt.NDArray[np.uint32]:
        deadlines, docs = self.dated()
        return np.sort(docs[: int(np.searchsorted(deadlines, now_ms, side="right"))])

    def dated(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]:
        """Commitments with a deadline active then, soonest first: a kind and a deadline
        never change, so only the dated commitments written by then need their state."""
        if self._dated_then is None:
            present, size = self._present.features, self.features.size
            dated = np.flatnonzero(
                (present["kind"][:size] == KIND_CODE["commitment"])
                & (present["deadline"][:size] != NO_DEADLINE)
            )
            state = self.features.take(("status",), dated)
            docs = dated[state["status"] == _ACTIVE]
            deadlines = present["deadline"][docs]
            order = np.argsort(deadlines, kind="stable")
            self._dated_then = deadlines[order], docs[order].astype(np.uint32)
        return self._dated_then

    def docno(self, trace_id: str) -> int | None:
        found = super().docno(trace_id)
        return None if found is None or found >= self.features.size else found

    def next_docno(self) -> int:
        return self.features.size

    def documents(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        for docno, value in super().documents(start):
            if docno >= self.features.size:
                return
            yield docno, value

    def status_of(self, docno: int) -> Status:
        row = self.features.take(("status",), np.array([docno]))
        return STATUSES[int(row["status"][0])]

    def successor(self, docno: int) -> str | None:
        superseded = int(self._present.features["seq_superseded"][docno])
        return super().successor(docno) if 0 < superseded <= self.point.seq else None

    def purged_since(self, docno: int) -> Moment | None:
        purged = int(self._present.features["seq_purged"][docno])
        if purged <= self.point.seq:
            return None
        return Moment(seq=purged, at=self.written_at(purged))

    def postings(self, term: str) -> DocArray:
        docs = super().postings(term)
        return docs[: int(np.searchsorted(docs, self.features.size))]

    def claim_log(self, key: str | None = None) -> Iterable[tuple[bytes, int, bytes]]:
        size = self.features.size
        return [entry for entry in super().claim_log(key) if entry[1] < size]

    def claim_entries(self, key: str | None = None) -> Iterable[tuple[bytes, int, bytes]]:
        entries = list(self.claim_log(key))
        if not entries:
            return []
        docs = np.array([docno for _key, docno, _value in entries], dtype=np.intp)
        state = self.features.take(("status", "present"), docs)
        open_then = (state["status"] == _ACTIVE) & (state["present"] == 1)
        return [entry for entry, keep in zip(entries, open_then, strict=True) if keep]

    def deadlines(self) -> Iterator[tuple[int, int]]:
        deadlines, docs = self.dated()
        yield from zip(deadlines.tolist(), docs.tolist(), strict=True)

    def records(self) -> Iterator[tuple[int, bytes]]:
        for seq, line in super().records():
            if seq > self.point.seq:
                return
            yield seq, line

    def last_record(self) -> Head | None:
        line = self.txn.get(SEQ.pack(self.point.seq), db=self.dbs.ledger)
        if line is None:
            return None
        record = decode_record(bytes(line))
        return Head(seq=record.seq, hash=record.hash)


def revision(snapshot: Snapshot, seq: int, docno: int) -> tuple[float, int]:
    """The ``feedback`` and ``pinned`` features of ``docno`` as of record ``seq``."""
    cursor = snapshot.txn.cursor(db=snapshot.dbs.revisions)
    found = cursor.prev() if cursor.set_range(revision_key(docno, seq + 1)) else cursor.last()
    if found and split_revision_key(bytes(cursor.key()))[0] == docno:
        feedback, pinned = REVISION.unpack(bytes(cursor.value()))
        return float(feedback), int(pinned)
    return 0.0, 0


class PastColumns(FeatureColumns):
    """The feature columns as of a :class:`Past` point: the present columns, with the
    state features (status, present, feedback, pinned) computed for what is asked."""

    def __init__(self, present: FeatureColumns, snapshot: Snapshot, seq: int) -> None:
        # The present snapshot, not the Past one that holds these columns: no cycle
        # keeps the read transaction (and its reader slot) alive after the read.
        self._present, self._snapshot, self._seq = present, snapshot, seq
        written = present["seq_written"]
        self.size = int(np.searchsorted(written, self._seq, side="right"))
        self._whole: dict[str, npt.NDArray[Any]] = {}

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        if name not in _STATE:
            return self._present[name][: self.size]
        if not self._whole:
            self._whole = self._state(np.arange(self.size))
        return self._whole[name]

    def take(self, names: Iterable[str], docs: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        wanted = list(names)
        rows = self._present.take([n for n in wanted if n not in _STATE], docs)
        if any(name in _STATE for name in wanted):
            state = self._state(np.asarray(docs, dtype=np.intp))
            rows.update({name: state[name] for name in wanted if name in _STATE})
        return rows

    def derived(self, key: Hashable, fields: tuple[str, ...], derive: Derive) -> npt.NDArray[Any]:
        """The present's: only of the features that never change.

        Raises:
            ValueError: a field of ``fields`` depends on the point.
        """
        if any(name in _STATE for name in fields):
            raise ValueError(f"a derived column of the past cannot read {_STATE}")
        return self._present.derived(key, fields, derive)[: self.size]

    def _state(self, docs: npt.NDArray[np.intp]) -> dict[str, npt.NDArray[Any]]:
        """The state features of ``docs`` as of the point."""
        rows = self._present.take((*_STATE, *_SEQS), docs)
        seq = self._seq
        then = {name: np.where(rows[name] <= seq, rows[name], 0) for name in _SEQS}
        superseded, fulfilled, purged = (
            then["seq_superseded"], then["seq_fulfilled"], then["seq_purged"]
        )  # fmt: skip
        latest = np.maximum(np.maximum(superseded, fulfilled), purged)
        status = np.full(len(docs), _ACTIVE, dtype=np.uint8)
        for name, seqs in (("superseded", superseded), ("fulfilled", fulfilled)):
            status[(seqs > 0) & (seqs == latest)] = STATUS_CODE[name]
        status[(purged > 0) & (purged == latest)] = STATUS_CODE["purged"]
        # Purged since: its text is gone, so nothing of it can be read as it was.
        present = np.where(rows["seq_purged"] > seq, 0, rows["present"]).astype(np.uint8)
        feedback, pinned = rows["feedback"].copy(), rows["pinned"].copy()
        for i in np.flatnonzero(rows["seq_touched"] > seq):
            feedback[i], pinned[i] = revision(self._snapshot, seq, int(docs[i]))
        return {"status": status, "present": present, "feedback": feedback, "pinned": pinned}
