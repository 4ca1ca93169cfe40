"""Transcript ingest, the patterns a candidate is found by: each rule's sentences, the
sentences that are not candidates, restatements dropped, evidence that always holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.learning import ingest
from hikmah.learning.ingest import Candidate, evidence_holds, extract_candidates
from hikmah.model.tokenizer import terms
from tests.kernel.ingest_cases import one_message


def candidates_of(text: str) -> list[tuple[str, str, str]]:
    return [(c.kind, c.content, c.rule) for c in extract_candidates(one_message(text))]


@pytest.mark.parametrize(
    ("sentence", "kind", "content", "rule"),
    [
        (
            "Always run the migrations inside a transaction.",
            "constraint",
            "Always run the migrations inside a transaction",
            "always-never",
        ),
        (
            "we never push straight to production",
            "constraint",
            "Never push straight to production",
            "always-never",
        ),
        (
            "You should always pin the Node version in .nvmrc!",
            "constraint",
            "Always pin the Node version in .nvmrc",
            "always-never",
        ),
        (
            "Please don't ever log request bodies.",
            "constraint",
            "Never log request bodies",
            "always-never",
        ),
        ("Do not commit the .env file.", "constraint", "Do not commit the .env file", "do-not"),
        (
            "Also, don\u2019t use global state in handlers.",
            "constraint",
            "Do not use global state in handlers",
            "do-not",
        ),
        (
            "Remember to always run make check before pushing.",
            "constraint",
            "Always run make check before pushing",
            "always-never",
        ),
        (
            "Public endpoints must never return stack traces.",
            "constraint",
            "Public endpoints must never return stack traces",
            "must",
        ),
        (
            "Never deploy if the build is red.",  # the condition follows the rule: kept
            "constraint",
            "Never deploy if the build is red",
            "always-never",
        ),
        (
            "- Never store money as floats.",
            "constraint",
            "Never store money as floats",
            "always-never",
        ),
        (
            "I prefer tabs over spaces in Go files.",
            "preference",
            "Prefer tabs over spaces in Go files",
            "prefer",
        ),
        (
            "We'd prefer Postgres for anything transactional.",
            "preference",
            "Prefer Postgres for anything transactional",
            "prefer",
        ),
        (
            "Please use pnpm instead of npm in the web app.",
            "preference",
            "Use pnpm instead of npm in the web app",
            "use-not",
        ),
        ("Use pathlib, not os.path.", "preference", "Use pathlib, not os.path", "use-not"),
        (
            "We decided to drop Python 3.9 support.",
            "belief",
            "We decided to drop Python 3.9 support",
            "decision",
        ),
        (
            "Let's stick with Redis for the session cache.",
            "belief",
            "Stick with Redis for the session cache",
            "decision",
        ),
        (
            "Going forward, releases are cut on Tuesdays.",
            "belief",
            "Releases are cut on Tuesdays",
            "from-now-on",
        ),
        (
            "To rotate the keys, run scripts/rotate.sh with the vault token.",
            "procedure",
            "To rotate the keys, run scripts/rotate.sh with the vault token",
            "procedure",
        ),
        (
            "Before merging, rebase on main and rerun the e2e suite.",
            "procedure",
            "Before merging, rebase on main and rerun the e2e suite",
            "procedure",
        ),
        (
            "We agreed to first tag the release, then publish the wheel.",
            "procedure",
            "We agreed to first tag the release, then publish the wheel",
            "procedure",
        ),
        (
            "No, the staging database is Postgres 15, not 14.",
            "correction",
            "The staging database is Postgres 15, not 14",
            "correction",
        ),
        (
            "Actually, never use print for logging.",
            "correction",
            "Never use print for logging",
            "correction",
        ),
        (
            "That's not right \u2014 the cron runs at 02:00 UTC.",
            "correction",
            "The cron runs at 02:00 UTC",
            "correction",
        ),
    ],
)
def test_patterns(sentence: str, kind: str, content: str, rule: str) -> None:
    assert candidates_of(sentence) == [(kind, content, rule)]


@pytest.mark.parametrize(
    "text",
    [
        "Should we always squash commits when merging?",  # a question
        "Could we always run the linter in CI",  # a question without its mark
        "Maybe we should never use ORMs here.",  # a hypothetical
        "If the build is red, never deploy.",  # opens with its condition
        "What if we always deploy from tags.",
        "We should always use tabs, I think.",  # hedged
        "Never mind, I found the bug myself.",
        "Don't worry, I fixed the config myself.",
        "I've never seen this error before.",
        "You always forget the changelog.",  # a complaint, not a rule
        "Never again will I use that library.",
        "Always the same flaky test in CI.",
        "Don't change the snapshot tests for now.",  # a one-off
        "In this PR, always use the old client.",
        "No, thanks.",
        "No, I meant the other file in the repo.",  # points back: not standalone
        "No-op handlers are fine here.",  # "No" is no correction cue without punctuation
        "Always.",  # too short
        "Never " + "touch the vendored code " * 13 + ".",  # too long (over 300 characters)
        "> Always use tabs for indentation.",  # quoting someone else
        "```\nAlways use tabs for indentation.\n```",  # code
        "    never run migrations on Fridays",  # indented code
        "Use the flag that does not exist yet.",
        "We haven't decided on the queue yet.",
    ],
)
def test_sentences_that_are_not_candidates(text: str) -> None:
    assert candidates_of(text) == []


def test_every_sentence_of_a_message_is_read() -> None:
    text = (
        "Thanks, that fixed it! Never vendor the protobuf files.\n"
        "1. I prefer httpx over requests, e.g. in the sync client.\n"
        "* We decided to keep the monorepo."
    )
    assert [c.evidence for c in extract_candidates(one_message(text))] == [
        "Never vendor the protobuf files.",
        "I prefer httpx over requests, e.g. in the sync client.",
        "We decided to keep the monorepo.",
    ]


def test_nothing_is_extracted_from_non_person_messages() -> None:
    assert extract_candidates(one_message("Never vendor the protobuf files.", person=False)) == []


def test_restated_candidates_are_dropped() -> None:
    text = "Never force-push to the main branch. Again, never force-push to main."
    assert [c.evidence for c in extract_candidates(one_message(text))] == [
        "Never force-push to the main branch."
    ]
    already = extract_candidates(
        one_message(text), existing=["Never force-push to the main branch (team rule)"]
    )
    assert already == []


def test_a_candidate_whose_evidence_does_not_hold_is_never_emitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A quote spliced from two sentences, as a broken splitter would produce.
    spliced = "Always use tabs for Go and YAML files."
    text = "Always use tabs. Go and YAML files are formatted by our tools."

    def splitter(_: str) -> Iterator[str]:
        yield spliced

    monkeypatch.setattr(ingest, "_sentences", splitter)
    assert extract_candidates(one_message(text)) == []
    # The same splitter on a text that does contain the quote yields it.
    (found,) = extract_candidates(one_message("Note: " + spliced))
    assert found.evidence == spliced


FRAGMENTS = [
    "Always",
    "always",
    "never",
    "Never",
    "No,",
    "Actually,",
    "that's wrong:",
    "we decided to",
    "let's go with",
    "From now on,",
    "I prefer",
    "use",
    "instead of",
    ", not",
    "To deploy,",
    "run",
    "first",
    "then",
    "don\u2019t ever",
    "do not",
    "must never",
    "tabs",
    "the build",
    "migrations",
    "on Fridays",
    "the generated files",
    "```",
    "> ",
    "- ",
    "1. ",
    "e.g.",
    "\u201cquoted\u201d",
    "Caf\u00e9",
    "cafe\u0301",
    "<system-reminder>",
]
SEPARATORS = [" ", "  ", "\n", "\t", "    ", ". ", "! ", "? ", ", ", "\u00a0"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS), st.text(max_size=6)),
        max_size=60,
    ).map("".join)
)
def test_every_candidate_evidence_holds_against_its_message(text: str) -> None:
    transcript = one_message(text)
    for candidate in extract_candidates(transcript):
        assert candidate.message_id == "m1"
        assert candidate.evidence in text
        assert evidence_holds(candidate.evidence, text)
        assert ingest.MIN_EVIDENCE_CHARS <= len(candidate.evidence) <= ingest.MAX_EVIDENCE_CHARS
        assert len(terms(candidate.content)) >= ingest.MIN_CONTENT_TERMS
        assert isinstance(candidate, Candidate)
