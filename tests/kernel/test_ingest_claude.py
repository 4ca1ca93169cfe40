"""Transcript ingest, parsing Claude Code's sessions: the person's messages are exactly the
typed ones, without the harness's wrappers; ids, times, repeats and oversized lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hikmah.learning.transcripts import MAX_LINE_BYTES, parse_transcript
from tests.kernel.ingest_cases import CLAUDE, containing, lines, parsed

CLAUDE_SESSION = "7f3c9a2e-5b1d-4e8a-9c6f-2d4b8e1a3f70"


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
