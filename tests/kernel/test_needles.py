"""The detector's needle search in C (hikmah.model._needles) against Python's ``in``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.model import _needles
from hikmah.model.secrets.needles import CASED_NEEDLES, FOLDED_NEEDLES

# Short texts over few letters, so that needles are often found, sometimes only in part.
TEXT = st.text(alphabet="ab_- \u00e9\u043f\ud800", max_size=40)
NEEDLE = st.text(alphabet="ab_- \u00e9\u043f\ud800", min_size=1, max_size=4)


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@given(TEXT, st.lists(NEEDLE, max_size=12))
def test_found_are_the_needles_the_text_holds(text: str, needles: list[str]) -> None:
    found = _needles.found(encoded(text), tuple(map(encoded, needles)))
    assert found == [i for i, needle in enumerate(needles) if needle in text]


def test_a_search_leaves_nothing_behind_for_the_next() -> None:
    # The pairs one text marks are cleared after it: the next text does not hold them.
    assert _needles.found(b"ghp_ and AKIA", (b"ghp_", b"AKIA")) == [0, 1]
    assert _needles.found(b"gh", (b"ghp_", b"gh")) == [1]
    assert _needles.found(b"", (b"AKIA", b"A")) == []
    assert _needles.found(b"x" * 100_000 + b"AKIA", (b"AKIA",)) == [0]


@pytest.mark.parametrize("needles", [(b"",), ("AKIA",), [b"AKIA"]])
def test_needles_must_be_a_tuple_of_non_empty_bytes(needles: object) -> None:
    with pytest.raises(TypeError):
        _needles.found(b"AKIA", needles)  # type: ignore[arg-type]


@given(st.text(max_size=60))
def test_the_tables_select_what_a_search_of_each_needle_does(text: str) -> None:
    for table, haystack in (
        (CASED_NEEDLES, text),
        (FOLDED_NEEDLES, text.lower()),
    ):
        expected: set[int | str] = set()
        for needle, selects in zip(table._needles, table._selects, strict=True):
            if needle.decode() in haystack:
                expected.update(selects)
        assert table.selected(haystack) == expected
