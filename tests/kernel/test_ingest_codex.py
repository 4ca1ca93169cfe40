"""Transcript ingest, parsing Codex's rollouts: the person's messages are exactly the typed
ones; what is not theirs, and the messages' ids."""

from __future__ import annotations

import json

import pytest

from hikmah.learning.transcripts import parse_transcript
from tests.kernel.ingest_cases import CODEX, containing, parsed

CODEX_SESSION = "0199a7e2-4c1b-7d30-9f5e-8b2a6c3d1e47"


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
