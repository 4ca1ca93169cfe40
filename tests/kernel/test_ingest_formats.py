"""Transcript ingest, both formats: stable ids, the format told from the content, garbage
refused with its line, and any input parsed or refused as a transcript error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.learning.ingest import evidence_holds, extract_candidates
from hikmah.learning.transcripts import TranscriptError, parse_transcript
from hikmah.model.errors import InvalidInput
from tests.kernel.ingest_cases import CLAUDE, CODEX, lines, parsed

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
