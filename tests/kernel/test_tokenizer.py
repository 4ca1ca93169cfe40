"""The tokenizer: REFERENCE.md "Recall details", and linear time on any text."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.model.tokenizer import STOPWORDS, prime, stem, terms, tokenize, unprime


def test_stopword_list_is_the_reference_list() -> None:
    # REFERENCE.md announces 59 stopwords but lists these 61; the list wins.
    assert len(STOPWORDS) == 61
    assert {"the", "would", "your", "i", "its"} <= STOPWORDS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The deploy FAILED", ["deploy", "fail"]),
        ("snake_case kept_together", ["snake_cas", "kept_together"]),  # stemmed whole
        ("a b c x 1 7", ["1", "7"]),  # short non-numeric tokens dropped, digits kept
        ("of the and to", []),
        ("api/v2-users.rs", ["api", "v2", "user", "rs"]),
        ("Café résumé", ["café", "résumé"]),
    ],
)
def test_split_lowercase_and_drop(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("tests", "test"),  # s dropped: "test" has 4 characters
        ("class", "class"),  # too short to stem at all
        ("classes", "class"),  # s dropped, then the final e
        ("glass", "glass"),
        ("running", "runn"),
        ("deployed", "deploy"),
        ("testing", "test"),
        ("sings", "sing"),  # s dropped; "sing" is not longer than 4 after
        ("cache", "cach"),
        ("caches", "cach"),
        ("bring", "bring"),  # "ing" would leave only 2
        ("used", "used"),  # four characters: not stemmed
        ("naïves", "naïves"),  # non-ASCII: not stemmed
    ],
)
def test_light_stemming(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_cjk_runs_become_bigrams_and_a_single_character_stays() -> None:
    assert tokenize("数据库") == ["数据", "据库"]
    assert tokenize("库") == ["库"]
    assert tokenize("東京へ") == ["東京", "京へ"]


def test_mixed_scripts_are_split_into_runs() -> None:
    assert tokenize("api接口") == ["api", "接口"]
    assert tokenize("Москваcity") == ["москва", "city"]
    # digits belong to whichever run they stand in
    assert tokenize("v2接口") == ["v2", "接口"]


def test_terms_are_distinct() -> None:
    assert terms("deploy deploys deploying") == frozenset({"deploy"})


@given(st.text())
def test_tokenize_never_crashes_and_yields_clean_terms(text: str) -> None:
    for term in tokenize(text):
        assert term
        assert term not in STOPWORDS
        assert all(ch.isalnum() or ch == "_" for ch in term)


@pytest.mark.parametrize("unit", ["token-", "接口a", "ab_", "Мa", "\u0301a ", "x" * 50 + " "])
def test_tokenize_is_linear(unit: str) -> None:
    # A guard against super-linear behaviour, not a benchmark: 20x the input
    # must cost far less than 20^2 = 400x the time. The best of three runs of
    # each keeps a busy machine's pauses out of the ratio.
    def best(text: str) -> float:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            tokenize(text)
            runs.append(time.perf_counter() - start)
        return min(runs)

    t_small, t_large = best(unit * 2_000), best(unit * 40_000)
    assert t_large < max(t_small, 1e-3) * 100, (t_small, t_large)


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_text_gives_the_terms_the_general_path_gives(text: str) -> None:
    # ASCII text takes a shorter path; a lone "é" (one letter: no term) sends the same
    # text down the general one, which splits scripts token by token.
    assert tokenize(text) == tokenize(text + " é")


def test_primed_terms_answer_once() -> None:
    # A bulk import's contents are tokenized in another process; its answer is taken once.
    text = "the deploy of billing-gateway moved to friday"
    assert terms(text) == {"deploy", "bill", "gateway", "mov", "friday"}
    prime([(text, frozenset({"elsewhere"}))])
    assert terms(text) == {"elsewhere"}
    assert terms(text) == {"deploy", "bill", "gateway", "mov", "friday"}
    prime([(text, frozenset({"elsewhere"}))])
    unprime([text])
    assert terms(text) == {"deploy", "bill", "gateway", "mov", "friday"}
