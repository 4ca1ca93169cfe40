"""Transcript ingest, ``restates``: a candidate restates a text by a Jaccard of three fifths
or by containment, of stems without stopwords."""

from __future__ import annotations

import pytest

from hikmah.learning.ingest import restates
from hikmah.model.tokenizer import terms


def test_restates_at_jaccard_three_fifths() -> None:
    candidate, existing = "alpha bravo charlie delta", "alpha bravo charlie foxtrot"
    a, b = terms(candidate), terms(existing)
    assert (len(a & b), len(a | b)) == (3, 5)
    assert restates(candidate, [existing])


@pytest.mark.parametrize(
    ("candidate", "existing", "shared", "union"),
    [
        ("alpha bravo charlie delta", "alpha bravo charlie golf hotel", 3, 6),  # 0.5
        ("alpha bravo charlie delta echo", "alpha bravo charlie delta golf hotel", 4, 7),  # 0.571
    ],
)
def test_does_not_restate_below_three_fifths(
    candidate: str, existing: str, shared: int, union: int
) -> None:
    a, b = terms(candidate), terms(existing)
    assert (len(a & b), len(a | b)) == (shared, union)
    assert not restates(candidate, [existing])


def test_restates_by_containment_either_way() -> None:
    short = "never force-push main"
    long = "the team never lets anyone force-push to main, not even admins, after the outage"
    assert len(terms(short)) / len(terms(short) | terms(long)) < 0.6
    assert restates(short, [long])
    assert restates(long, [short])


def test_restates_uses_stems_and_ignores_stopwords() -> None:
    assert restates("Never run the migrations on Fridays", ["never running migration friday"])


def test_restates_nothing_without_content_words() -> None:
    assert not restates("the and of it", ["the and of it"])
    assert not restates("never run migrations", ["to the of", "tabs over spaces in Go files"])
    assert not restates("never run migrations", [])


def test_any_existing_text_can_match() -> None:
    existing = ["tabs over spaces", "alpha bravo charlie foxtrot", "unrelated words entirely"]
    assert restates("alpha bravo charlie delta", existing)
    assert restates("alpha bravo charlie delta", iter(existing))  # any iterable, read once
