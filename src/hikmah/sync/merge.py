"""A trace's fate as a function of the set of facts about it, whatever order they came in.

Records from several devices arrive in any order: a supersession before the
trace it corrects, a purge of a trace whose segment is still on its way, two
corrections of one trace written on two machines at once. The derived state
must be the same on every device that holds the same records, so it is
folded from *sets*: :func:`fate` of one trace's facts, :func:`view` of every
trace's (the active traces, the conflicts and the promise queue). Neither
looks at arrival order, and nothing is ordered by a clock.

The rules (docs/sync.md, "Merge"):

- status is the highest effective fact: purged > superseded > fulfilled > active;
- a supersession takes effect unless its writer is a ``model:`` source or it
  is unverified and its target verified; a fulfilment unless its target is
  neither a commitment nor a prediction, or a ``model:`` outcome resolves a
  prediction (rules a receiver can re-check from the records alone);
- pins are an observed-remove set: an unpin (or a later pin) removes the pins
  before it in its own chain and those of other chains it names;
- feedback counts each record once;
- of two remembers of one id with different bytes, the lowest (device, seq)
  is the trace and the other a rival to report.

The store's indexes implement the same rules incrementally; this module is
their reference, and what the tests compare them with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

import msgspec

Status = Literal["active", "superseded", "fulfilled", "purged"]
_RESOLVABLE = ("commitment", "prediction")


class RecordId(NamedTuple):
    """Where a fact was written: a device's chain and the seq in it."""

    device: str
    seq: int


class Remembered(msgspec.Struct, frozen=True, kw_only=True, tag="remembered"):
    """The trace itself (``redacted``: a compaction left only its id and kind)."""

    at: RecordId
    trace: str
    digest: str
    kind: str
    verified: bool = False
    model: bool = False
    claim_key: str | None = None
    claim_value: str | None = None
    deadline: int | None = None
    redacted: bool = False


class Superseded(msgspec.Struct, frozen=True, kw_only=True, tag="superseded"):
    at: RecordId
    trace: str
    by: str
    by_verified: bool
    by_model: bool


class Fulfilled(msgspec.Struct, frozen=True, kw_only=True, tag="fulfilled"):
    at: RecordId
    trace: str
    by: str | None = None
    by_model: bool = False


class Purged(msgspec.Struct, frozen=True, kw_only=True, tag="purged"):
    at: RecordId
    trace: str


class Pinned(msgspec.Struct, frozen=True, kw_only=True, tag="pinned"):
    """A pin (``pinned``) or an unpin; ``overrides``: other chains' pins it saw in force."""

    at: RecordId
    trace: str
    pinned: bool
    overrides: frozenset[RecordId] = frozenset()


class Feedback(msgspec.Struct, frozen=True, kw_only=True, tag="feedback"):
    at: RecordId
    trace: str
    good: bool


Fact = Remembered | Superseded | Fulfilled | Purged | Pinned | Feedback
# Tagged, so that a store can keep a trace's facts as one msgpack list.
FACTS_ENCODER = msgspec.msgpack.Encoder()
FACTS_DECODER = msgspec.msgpack.Decoder(list[Fact])


class Fate(msgspec.Struct, frozen=True, kw_only=True):
    """What the facts make of one trace.

    Attributes:
        present: its remember has arrived (until then the other facts wait).
        status: the status the indexes give it.
        successors: the traces that effectively supersede it, by id.
        fulfilled_by: the outcomes (or None for a plain fulfil) that did it.
        pinned: held at full weight in recall.
        good, bad: outcome feedback counts.
        rivals: remembers of the same id with other bytes (reported).
        ineffective: facts without effect under the rules (reported).
    """

    present: bool
    status: Status
    trace: Remembered | None
    successors: tuple[str, ...] = ()
    fulfilled_by: tuple[str | None, ...] = ()
    pinned: bool = False
    good: int = 0
    bad: int = 0
    rivals: tuple[RecordId, ...] = ()
    ineffective: tuple[RecordId, ...] = ()


def fate(facts: Iterable[Fact]) -> Fate:
    """Fold one trace's facts (duplicates and order do not matter)."""
    unique = set(facts)
    # A record id names one record, so (at) alone orders honest input; the encoding
    # breaks the ties of input that is not (a fold must not depend on order even then).
    remembers = sorted(
        (f for f in unique if isinstance(f, Remembered)),
        key=lambda f: (f.at, msgspec.json.encode(f)),
    )
    trace = remembers[0] if remembers else None
    rivals = tuple(f.at for f in remembers[1:] if f.digest != remembers[0].digest)
    ineffective: list[RecordId] = []
    successors: set[str] = set()
    fulfilled_by: set[tuple[str, ...]] = set()
    purged = trace is not None and trace.redacted
    for fact in unique:
        if isinstance(fact, Purged):
            purged = True
        elif isinstance(fact, Superseded) and trace is not None:
            if fact.by_model or (trace.verified and not fact.by_verified):
                ineffective.append(fact.at)
            else:
                successors.add(fact.by)
        elif isinstance(fact, Fulfilled) and trace is not None:
            if trace.kind not in _RESOLVABLE or (trace.kind == "prediction" and fact.by_model):
                ineffective.append(fact.at)
            else:
                # A tuple so that None sorts with the ids: () is a plain fulfil.
                fulfilled_by.add(() if fact.by is None else (fact.by,))
    status: Status = "active"
    if purged:
        status = "purged"
    elif successors:
        status = "superseded"
    elif fulfilled_by:
        status = "fulfilled"
    feedback = {(f.at, f.good) for f in unique if isinstance(f, Feedback)}
    good = sum(1 for _at, is_good in feedback if is_good)
    return Fate(
        present=trace is not None,
        status=status,
        trace=trace,
        successors=tuple(sorted(successors)),
        fulfilled_by=tuple(by[0] if by else None for by in sorted(fulfilled_by)),
        pinned=_pinned([f for f in unique if isinstance(f, Pinned)]),
        good=good,
        bad=len(feedback) - good,
        rivals=rivals,
        ineffective=tuple(sorted(ineffective)),
    )


def _pinned(pins: list[Pinned]) -> bool:
    return bool(pins_in_force(pins))


def pins_in_force(pins: Iterable[Pinned]) -> list[Pinned]:
    """The pins (``pinned`` records) that no later record of their own chain and no
    record naming them in ``overrides`` removed: what keeps a trace pinned."""
    every = list(pins)

    def removed(pin: Pinned) -> bool:
        return any(
            (other.at.device == pin.at.device and other.at.seq > pin.at.seq)
            or pin.at in other.overrides
            for other in every
        )

    return [pin for pin in every if pin.pinned and not removed(pin)]


class Conflict(msgspec.Struct, frozen=True):
    key: str
    values: tuple[tuple[str, tuple[str, ...]], ...]


class View(msgspec.Struct, frozen=True):
    """What a person sees of the whole memory: equal on devices with equal records."""

    fates: dict[str, Fate]
    active: frozenset[str]
    conflicts: tuple[Conflict, ...]
    queue: tuple[tuple[int, str], ...]


def view(facts: Iterable[Fact]) -> View:
    """Fold every trace's facts into the active traces, the conflicts and the promise
    queue (active commitments with a deadline, soonest first, ties by id).

    Claim keys and values must already be normalised (:mod:`hikmah.model.trace`)."""
    by_trace: defaultdict[str, set[Fact]] = defaultdict(set)
    for fact in facts:
        by_trace[fact.trace].add(fact)
    fates = {trace_id: fate(group) for trace_id, group in by_trace.items()}
    active = frozenset(t for t, f in fates.items() if f.present and f.status == "active")
    return View(
        fates=fates, active=active, conflicts=_conflicts(fates, active), queue=_queue(fates, active)
    )


def _conflicts(fates: Mapping[str, Fate], active: frozenset[str]) -> tuple[Conflict, ...]:
    claims: defaultdict[str, defaultdict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for trace_id in active:
        trace = fates[trace_id].trace
        if trace is not None and trace.claim_key is not None and trace.claim_value is not None:
            claims[trace.claim_key][trace.claim_value].append(trace_id)
    return tuple(
        Conflict(key, tuple((value, tuple(sorted(ids))) for value, ids in sorted(values.items())))
        for key, values in sorted(claims.items())
        if len(values) > 1
    )


def _queue(fates: Mapping[str, Fate], active: frozenset[str]) -> tuple[tuple[int, str], ...]:
    dated = []
    for trace_id in active:
        trace = fates[trace_id].trace
        if trace is not None and trace.kind == "commitment" and trace.deadline is not None:
            dated.append((trace.deadline, trace_id))
    return tuple(sorted(dated))
