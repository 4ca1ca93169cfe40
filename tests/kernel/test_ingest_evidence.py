"""Transcript ingest, ``evidence_holds``: a quote holds against its source through case,
whitespace, quotes and Unicode forms, and a paraphrase or a splice does not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.learning.ingest import evidence_holds

SOURCE = "We decided to keep the \u201cledger\u201d service on Go 1.22.\nNever run   migrations on Fridays."


@pytest.mark.parametrize(
    "quote",
    [
        "Never run   migrations on Fridays.",  # verbatim
        "never run migrations on fridays.",  # case
        "NEVER RUN\n\tMIGRATIONS ON FRIDAYS.",  # whitespace
        'keep the "ledger" service',  # straight for curly quotes
        "1.22. Never run",  # across a line break
    ],
)
def test_evidence_holds_for_normalised_variants(quote: str) -> None:
    assert evidence_holds(quote, SOURCE)


def test_evidence_holds_across_unicode_forms() -> None:
    composed, decomposed = "Caf\u00e9 menus are cached", "Cafe\u0301 menus are cached"
    assert evidence_holds(decomposed, composed)
    assert evidence_holds(composed, decomposed)
    assert evidence_holds("it\u2019s fine", "It's fine.")
    assert evidence_holds("STRASSE closes at noon", "Die Stra\u00dfe closes at noon")


@pytest.mark.parametrize(
    "quote",
    [
        "Never run migrations on a Friday.",  # a paraphrase
        "We decided to never run migrations on Fridays.",  # spliced from two sentences
        "keep the ledger service",  # quotes dropped
        "",
        "   \n",
    ],
)
def test_evidence_does_not_hold_for_other_text(quote: str) -> None:
    assert not evidence_holds(quote, SOURCE)


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("abcXYZ .,'\"\n\t\u2019\u201c\u201d\u00e9\u00df\u00c9")),
        min_size=1,
        max_size=80,
    ),
    st.data(),
)
def test_any_slice_holds_against_its_source(source: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(source) - 1))
    end = data.draw(st.integers(start + 1, len(source)))
    quote = source[start:end]
    variant = quote.swapcase().replace(" ", "  ").replace("\u2019", "'")
    if quote.strip():
        assert evidence_holds(quote, source)
        assert evidence_holds(variant, source)
    else:
        assert not evidence_holds(quote, source)
