"""Transcript ingest: parsing both formats, and candidates from the person's words only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.learning import ingest
from hikmah.learning.ingest import Candidate, evidence_holds, extract_candidates, restates
from hikmah.learning.transcripts import (
    MAX_LINE_BYTES,
    Message,
    Transcript,
    TranscriptError,
    parse_transcript,
)
from hikmah.model.errors import InvalidInput
from hikmah.model.tokenizer import terms

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-session.jsonl"
CODEX = FIXTURES / "codex-rollout.jsonl"
CLAUDE_SESSION = "7f3c9a2e-5b1d-4e8a-9c6f-2d4b8e1a3f70"
CODEX_SESSION = "0199a7e2-4c1b-7d30-9f5e-8b2a6c3d1e47"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def parsed(path: Path) -> Transcript:
    return parse_transcript(lines(path))


def one_message(text: str, *, person: bool = True) -> Transcript:
    message = Message(id="m1", role="user", text=text, timestamp_ms=None, person=person)
    return Transcript(format="claude-code", session_id="s1", cwd=None, messages=[message])


def candidates_of(text: str) -> list[tuple[str, str, str]]:
    return [(c.kind, c.content, c.rule) for c in extract_candidates(one_message(text))]


def containing(transcript: Transcript, fragment: str) -> Message:
    (message,) = [m for m in transcript.messages if fragment in m.text]
    return message


# --- parsing: Claude Code -----------------------------------------------------


def test_claude_session_metadata() -> None:
    transcript = parsed(CLAUDE)
    assert transcript.format == "claude-code"
    assert transcript.session_id == CLAUDE_SESSION
    assert transcript.cwd == "/home/dana/src/payments"
    assert transcript.skipped == 0


def test_claude_person_messages_are_exactly_the_typed_ones() -> None:
    person = [m.text for m in parsed(CLAUDE).messages if m.person]
    assert [text.split()[:3] for text in person] == [
        ["The", "CI", "lint"],
        ["No,", "the", "linter"],
        ["I", "prefer", "table-driven"],
        ["We", "decided", "to"],
        ["Should", "we", "always"],
        ["Actually,", "let's", "go"],
        ["Again:", "never", "edit"],
        ["Don't", "ever", "commit"],
        ["From", "now", "on,"],
    ]
    assert all(m.role == "user" for m in parsed(CLAUDE).messages if m.person)


@pytest.mark.parametrize(
    ("fragment", "role"),
    [
        ("<local-command-caveat>", "system"),  # isMeta
        ("<command-name>/model</command-name>", "user"),  # a slash command the person ran
        ("<local-command-stdout>", "system"),
        ("[Request interrupted by user", "system"),
        ("Always report file paths relative", "user"),  # a subagent's prompt (isSidechain)
        ("You should never mix assert and require", "assistant"),  # the subagent's answer
        ("This session is being continued", "system"),  # isCompactSummary
        ("Conversation compacted", "system"),  # a type "system" line
        ("3\u2192Always use tabs for indentation.", "tool"),  # a Read result
        ("Always squash before merging.", "tool"),  # a Bash result
        ('Bash: {"command":"cat .github/workflows/ci.yml"', "tool"),  # a tool call
        ("Always run the linter locally before pushing", "assistant"),
    ],
)
def test_claude_text_that_is_not_the_persons(fragment: str, role: str) -> None:
    message = containing(parsed(CLAUDE), fragment)
    assert message.role == role
    assert message.person is False


def test_claude_person_text_leaves_out_harness_wrappers() -> None:
    transcript = parsed(CLAUDE)
    ide = containing(transcript, "I prefer table-driven")
    assert ide.text == (
        "I prefer table-driven tests over separate test functions. "
        "Please use testify's require instead of assert in new tests."
    )
    decided = containing(transcript, "We decided to keep")
    assert decided.person
    assert "<system-reminder>" not in decided.text
    assert "todo list" not in decided.text
    assert decided.text.endswith("and then tag the commit.")


def test_claude_thinking_is_left_out() -> None:
    assert not any("never guess" in m.text for m in parsed(CLAUDE).messages)


def test_claude_ids_are_the_record_uuids() -> None:
    uuids = [
        record["uuid"]
        for record in map(json.loads, lines(CLAUDE))
        if record["type"] in ("user", "assistant", "system")
        and not any(b.get("type") == "thinking" for b in _blocks(record))
    ]
    assert [m.id for m in parsed(CLAUDE).messages] == uuids


def _blocks(record: dict[str, object]) -> list[dict[str, object]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def test_claude_timestamps_are_epoch_milliseconds() -> None:
    first_user = next(m for m in parsed(CLAUDE).messages if m.person)
    stamp = next(
        r["timestamp"] for r in map(json.loads, lines(CLAUDE)) if r.get("uuid") == first_user.id
    )
    expected = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert first_user.timestamp_ms == int(expected.timestamp() * 1000)


def test_claude_mixed_line_splits_text_and_tool_part() -> None:
    record = {
        "type": "assistant",
        "uuid": "u-1",
        "sessionId": "s",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}},
            ],
        },
    }
    messages = parse_transcript([json.dumps(record)]).messages
    assert [(m.id, m.role) for m in messages] == [("u-1", "assistant"), ("u-1#tool", "tool")]
    assert messages[1].text == 'Bash: {"command":"make test"}'


def test_repeated_records_are_kept_once() -> None:
    source = lines(CLAUDE)
    resumed = [*source, *source[5:12]]  # a resumed session repeats earlier records
    assert parse_transcript(resumed).messages == parsed(CLAUDE).messages


def test_a_huge_or_deeply_nested_line_is_skipped_unread() -> None:
    source = lines(CLAUDE)
    huge = json.dumps({"type": "user", "message": {"content": "x" * (MAX_LINE_BYTES + 1)}})
    deep = "[" * 100_000 + "]" * 100_000
    transcript = parse_transcript([*source, huge, deep])
    assert transcript.messages == parsed(CLAUDE).messages
    assert transcript.skipped == parsed(CLAUDE).skipped + 2


# --- parsing: Codex -----------------------------------------------------------


def test_codex_rollout_metadata() -> None:
    transcript = parsed(CODEX)
    assert transcript.format == "codex"
    assert transcript.session_id == CODEX_SESSION
    assert transcript.cwd == "/home/dana/src/ledgerly"
    assert transcript.skipped == 0


def test_codex_person_messages_are_exactly_the_typed_ones() -> None:
    person = [m.text for m in parsed(CODEX).messages if m.person]
    assert person == [
        "Add a --dry-run flag to the import command. We use uv for everything in this repo, not pip.",
        "From now on, run ruff format before you show me a diff. "
        "I'd prefer small commits with one change each.",
        "No, that's wrong: the importer reads UTF-8 with a BOM, not Latin-1.",
        "Do not touch the legacy/ directory, it is frozen until the rewrite ships.",
        "Can you also add a test for the empty file case?",
        "From now on, first regenerate the fixtures with make fixtures, then run pytest -x.",
    ]  # each once: the event_msg copies are not read


@pytest.mark.parametrize(
    ("fragment", "role"),
    [
        ("# AGENTS.md instructions for", "system"),
        ("<environment_context>", "system"),
        ("<permissions instructions>", "system"),  # a developer message
        ("<user_shell_command>", "user"),  # a command the person ran, not words
        ("Output:\n# Contributing\n\nAlways use tabs.", "tool"),  # function_call_output
        ('shell_command: {"command": "cat CONTRIBUTING.md"', "tool"),
        ("apply_patch: *** Begin Patch", "tool"),  # custom_tool_call
        ("Going forward I'll never bundle unrelated changes", "assistant"),
        ("Summary so far: the user prefers small commits", "system"),  # compacted
    ],
)
def test_codex_text_that_is_not_the_persons(fragment: str, role: str) -> None:
    message = containing(parsed(CODEX), fragment)
    assert message.role == role
    assert message.person is False


def test_codex_reasoning_and_session_instructions_are_not_messages() -> None:
    texts = [m.text for m in parsed(CODEX).messages]
    assert not any("Inspecting the import command" in t for t in texts)
    assert not any("Always run pytest -q before committing" in t for t in texts)


def test_codex_ids_hash_session_and_line() -> None:
    record = {
        "timestamp": "2025-10-29T14:02:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "ok"}],
        },
    }
    meta = {"timestamp": "2025-10-29T14:02:00.000Z", "type": "session_meta", "payload": {"id": "A"}}
    same_text_twice = parse_transcript([json.dumps(meta), json.dumps(record), json.dumps(record)])
    first, second = same_text_twice.messages
    assert first.id != second.id  # line numbers differ
    other_session = parse_transcript(
        [json.dumps({**meta, "payload": {"id": "B"}}), json.dumps(record)]
    )
    assert other_session.messages[0].id != first.id  # session ids differ


def test_codex_item_id_is_used_when_present() -> None:
    record = {
        "timestamp": "2025-10-29T14:02:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": "msg_0a1b",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done"}],
        },
    }
    assert parse_transcript([json.dumps(record)]).messages[0].id == "msg_0a1b"


# --- parsing: both formats, detection and errors ------------------------------


@pytest.mark.parametrize("path", [CLAUDE, CODEX], ids=["claude", "codex"])
def test_ids_are_stable_across_parses(path: Path) -> None:
    first, second = parsed(path), parsed(path)
    assert [m.id for m in first.messages] == [m.id for m in second.messages]
    assert len({m.id for m in first.messages}) == len(first.messages)
    as_bytes = parse_transcript(path.read_bytes().splitlines())
    assert as_bytes == first


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"type": "user", "message": {"role": "user", "content": "hello there"}}, "claude-code"),
        ({"type": "summary", "summary": "s", "leafUuid": "u"}, "claude-code"),
        ({"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}}, "codex"),
        ({"type": "event_msg", "payload": {"type": "token_count"}}, "codex"),
    ],
)
def test_format_is_detected_from_content(record: dict[str, object], expected: str) -> None:
    assert parse_transcript([json.dumps(record)]).format == expected


def test_the_fixtures_are_told_apart() -> None:
    assert (parsed(CLAUDE).format, parsed(CODEX).format) == ("claude-code", "codex")


@pytest.mark.parametrize(
    ("garbage", "line", "says"),
    [
        (["", "hello world", "{not json"], 2, "not JSON"),
        (['{"foo": 1}', "[1, 2]"], 1, "not a transcript record"),
        (["   ", "[1, 2]"], 2, "a JSON list, not an object"),
        ([b"\xff\xfe{}"], 1, "not JSON"),
        (['{"type": "user", "uuid": "\ud800"}'], 1, "not valid Unicode"),
        (['{"type": "response_item", "payload": "text"}'], 1, "not a transcript record"),
    ],
)
def test_garbage_is_refused_with_its_line(garbage: list[str | bytes], line: int, says: str) -> None:
    with pytest.raises(TranscriptError, match=f"^line {line}: .*{says}") as caught:
        parse_transcript(garbage)
    assert caught.value.line == line
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, InvalidInput)  # the dispatcher's "invalid"
    assert caught.value.reason == "invalid"


@pytest.mark.parametrize("empty", [[], ["", "   ", "\n"]])
def test_an_input_without_lines_is_refused(empty: list[str]) -> None:
    with pytest.raises(TranscriptError, match="no lines") as caught:
        parse_transcript(empty)
    assert caught.value.line is None


def test_malformed_lines_are_counted_and_skipped() -> None:
    source: list[str | bytes] = [*lines(CLAUDE)]
    source.insert(3, "{truncated")
    source.insert(10, b"\xff\xfe not utf-8")
    source.insert(12, "")  # blank: not counted
    transcript = parse_transcript(source)
    assert transcript.skipped == 2
    assert transcript.messages == parsed(CLAUDE).messages


def test_a_record_of_the_other_format_is_refused() -> None:
    codex_line = lines(CODEX)[5]
    mixed = [*lines(CLAUDE)[:4], codex_line]
    with pytest.raises(
        TranscriptError, match=r"^line 5: a codex record in a claude-code"
    ) as caught:
        parse_transcript(mixed)
    assert caught.value.line == 5


def test_a_byte_order_mark_is_ignored() -> None:
    source = lines(CODEX)
    assert parse_transcript(["\ufeff" + source[0], *source[1:]]) == parsed(CODEX)


# --- extraction from the fixtures -----------------------------------------------


def test_claude_candidates() -> None:
    found = [(c.kind, c.content, c.rule) for c in extract_candidates(parsed(CLAUDE))]
    assert found == [
        (
            "correction",
            "The linter config lives in tools/lint/golangci.yml, not in the repo root",
            "correction",
        ),
        ("constraint", "Never edit the generated files under api/gen by hand", "always-never"),
        ("preference", "Prefer table-driven tests over separate test functions", "prefer"),
        ("preference", "Use testify's require instead of assert in new tests", "use-not"),
        (
            "belief",
            "We decided to keep the payment service on Go 1.22 until the vendor SDK supports 1.23",
            "decision",
        ),
        (
            "procedure",
            "To deploy, run make release from the repo root and then tag the commit",
            "procedure",
        ),
        ("correction", "Go with sqlc for the new queries", "correction"),
        # "Again: never edit the generated files in api/gen by hand." restates the second
        (
            "constraint",
            "Never commit directly to main; open a PR from a feature branch",
            "always-never",
        ),
        ("belief", "Run gofumpt before you show me a diff", "from-now-on"),
    ]


def test_codex_candidates() -> None:
    found = [(c.kind, c.content, c.rule) for c in extract_candidates(parsed(CODEX))]
    assert found == [
        ("preference", "Use uv for everything in this repo, not pip", "use-not"),
        ("belief", "Run ruff format before you show me a diff", "from-now-on"),
        ("preference", "Prefer small commits with one change each", "prefer"),
        ("correction", "The importer reads UTF-8 with a BOM, not Latin-1", "correction"),
        (
            "constraint",
            "Do not touch the legacy/ directory, it is frozen until the rewrite ships",
            "do-not",
        ),
        (
            "procedure",
            "First regenerate the fixtures with make fixtures, then run pytest -x",
            "procedure",
        ),
    ]


@pytest.mark.parametrize(
    ("path", "stated_by_others"),
    [
        (
            CLAUDE,
            {
                "Always run the linter locally before pushing; it saves a CI round trip",
                "Always report file paths relative to the repo root",
                "Never mix assert and require in one test",
                "Always use tabs for indentation",
                "Never run migrations on Fridays",
            },
        ),
        (
            CODEX,
            {
                "Always use tabs in Makefiles",
                "Never run migrations without a backup",
                "Never write outside the workspace without approval",
                "Never run migrations on Fridays",  # a shell command's output
            },
        ),
    ],
    ids=["claude", "codex"],
)
def test_only_the_persons_words_become_candidates(path: Path, stated_by_others: set[str]) -> None:
    transcript = parsed(path)
    found = extract_candidates(transcript)
    person_ids = {m.id for m in transcript.messages if m.person}
    assert found
    assert {c.message_id for c in found} <= person_ids
    # Assistants, subagents, tools and injected context state rules that
    # would be candidates had the person typed them: only the flag keeps
    # them out.
    others = [m for m in transcript.messages if not m.person]
    flipped = Transcript(
        format=transcript.format,
        session_id=transcript.session_id,
        cwd=None,
        messages=[msgspec.structs.replace(m, person=True) for m in others],
    )
    would_be = {c.content for c in extract_candidates(flipped)}
    assert stated_by_others <= would_be
    assert not {c.content for c in found} & would_be
    for candidate in found:
        text = candidate.content.lower()
        assert "tabs" not in text
        assert "migration" not in text


@pytest.mark.parametrize("path", [CLAUDE, CODEX], ids=["claude", "codex"])
def test_evidence_is_the_sentence_as_written(path: Path) -> None:
    transcript = parsed(path)
    texts = {m.id: m.text for m in transcript.messages}
    for candidate in extract_candidates(transcript):
        assert candidate.evidence in texts[candidate.message_id]
        assert evidence_holds(candidate.evidence, texts[candidate.message_id])


# --- extraction: the patterns ---------------------------------------------------


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


# --- evidence_holds -----------------------------------------------------------

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


# --- restates -------------------------------------------------------------------


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


# --- robustness -----------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=30)
_json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_words = st.sampled_from(["Always use tabs.", "No, never run it.", "<system-reminder>x", "ok"])
_block_lists = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image"])},
        optional={
            "text": _words | _json_values,
            "content": _words | _json_values,
            "name": _json_values,
            "input": _json_values,
        },
    ),
    max_size=3,
)
_timestamps = st.sampled_from(["2025-11-04T09:12:07.259Z", "2025-11-04", "yesterday", 17, None])
_claude = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "summary", "progress"])},
    optional={
        "uuid": st.sampled_from(["u1", "u2", "u3"]) | _json_values,
        "sessionId": st.sampled_from(["s1", ""]) | _json_values,
        "cwd": _json_values,
        "timestamp": _timestamps,
        "isMeta": st.booleans(),
        "isSidechain": st.booleans(),
        "content": _words | _json_values,
        "message": st.fixed_dictionaries(
            {}, optional={"role": _json_values, "content": _words | _block_lists | _json_values}
        )
        | _json_values,
    },
)
_codex = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["session_meta", "response_item", "event_msg", "compacted"]),
        "payload": st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(
                    ["message", "function_call", "function_call_output", "reasoning"]
                )
                | _json_values,
                "id": _json_values,
                "role": st.sampled_from(["user", "assistant", "developer"]) | _json_values,
                "content": st.lists(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["input_text", "output_text"])},
                        optional={"text": _words | _json_values},
                    ),
                    max_size=3,
                )
                | _json_values,
                "output": _json_values,
                "arguments": _json_values,
                "cwd": _json_values,
                "message": _json_values,
            },
        ),
    },
    optional={"timestamp": _timestamps},
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            _claude.map(json.dumps),
            _codex.map(json.dumps),
            st.text(max_size=20),
            st.binary(max_size=20),
        ),
        max_size=10,
    )
)
def test_any_input_parses_or_is_refused_as_a_transcript_error(raw: list[str | bytes]) -> None:
    try:
        transcript = parse_transcript(raw)
    except TranscriptError:
        return
    assert transcript.skipped <= len(raw)
    assert len({m.id for m in transcript.messages}) == len(transcript.messages)
    for candidate in extract_candidates(transcript):
        message = next(m for m in transcript.messages if m.id == candidate.message_id)
        assert message.person
        assert evidence_holds(candidate.evidence, message.text)
