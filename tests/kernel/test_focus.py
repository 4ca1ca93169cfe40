"""Focus capsules alone: bounds, eviction order, pins, notes."""

from __future__ import annotations

import pytest

from hikmah.model.errors import ConflictError, InvalidInput, NotFound
from hikmah.working.focus import FocusCapsule


def test_absorb_keeps_the_most_activated_within_the_limit() -> None:
    capsule = FocusCapsule("t", limit=3)
    assert capsule.absorb([("a", 0.9), ("b", 0.5), ("c", 0.7)]) == []
    assert capsule.absorb([("d", 0.6)]) == ["b"]
    assert [h.id for h in capsule.ordered()] == ["a", "c", "d"]


def test_absorbing_again_rehearses_instead_of_duplicating() -> None:
    capsule = FocusCapsule("t", limit=2)
    capsule.absorb([("a", 0.3), ("b", 0.4)])
    capsule.absorb([("a", 0.3)])  # a: 0.6
    assert capsule.absorb([("c", 0.5)]) == ["b"]
    assert len(capsule.held) == 2


def test_ties_evict_the_oldest_first() -> None:
    capsule = FocusCapsule("t", limit=2)
    capsule.absorb([("a", 0.5), ("b", 0.5)])
    assert capsule.absorb([("c", 0.5)]) == ["a"]


def test_pinned_traces_never_leave() -> None:
    capsule = FocusCapsule("t", limit=2)
    capsule.absorb([("weak", 0.1), ("b", 0.9)])
    capsule.pin("weak")
    assert capsule.absorb([("c", 0.8)]) == ["c"]  # the weakest unpinned leaves, not "weak"
    capsule.pin("b")
    assert capsule.absorb([("d", 5.0)]) == ["d"]  # every place is pinned: no room
    assert set(capsule.held) == {"weak", "b"}
    assert capsule.unpin("weak") == []


def test_pins_are_bounded_by_the_limit_when_it_shrinks() -> None:
    capsule = FocusCapsule("t", limit=3)
    capsule.absorb([("a", 0.1), ("b", 0.2), ("c", 0.3)])
    capsule.pin("a")
    capsule.pin("b")
    assert capsule.set_limit(2) == ["c"]  # the policy's working_set_limit went down
    with pytest.raises(ConflictError):
        capsule.pin("d")


def test_pinning_a_trace_not_held_takes_it_in() -> None:
    capsule = FocusCapsule("t", limit=2)
    capsule.absorb([("a", 0.9), ("b", 0.1)])
    assert capsule.pin("new") == ["b"]  # the weakest unpinned makes room
    assert capsule.held["new"].pinned


def test_unpin_needs_a_held_trace() -> None:
    with pytest.raises(NotFound):
        FocusCapsule("t", limit=2).unpin("x")


def test_lowering_the_limit_evicts_at_once() -> None:
    capsule = FocusCapsule("t", limit=3)
    capsule.absorb([("a", 0.9), ("b", 0.1), ("c", 0.5)])
    assert capsule.set_limit(2) == ["b"]


def test_notes_are_bounded_least_important_first() -> None:
    capsule = FocusCapsule("t", limit=2, notes_limit=3)
    capsule.note("a", 0.5, at=1)
    capsule.note("b", 0.9, at=2)
    capsule.note("c", 0.1, at=3)
    evicted = capsule.note("d", 0.5, at=4)
    assert [n.text for n in evicted] == ["c"]
    evicted = capsule.note("e", 0.5, at=5)
    assert [n.text for n in evicted] == ["a"]  # equal importance: the oldest
    assert [n.text for n in capsule.notes] == ["b", "d", "e"]


@pytest.mark.parametrize(("text", "importance"), [("  ", 0.5), ("x", 1.5), ("x" * 2001, 0.5)])
def test_invalid_notes(text: str, importance: float) -> None:
    with pytest.raises(InvalidInput):
        FocusCapsule("t", limit=2).note(text, importance, at=0)
