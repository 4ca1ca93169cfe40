"""What the tests of transcript ingest share: the two recorded transcripts, parsed, and a
transcript of one message."""

from __future__ import annotations

from pathlib import Path

from hikmah.learning.transcripts import Message, Transcript, parse_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-session.jsonl"
CODEX = FIXTURES / "codex-rollout.jsonl"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def parsed(path: Path) -> Transcript:
    return parse_transcript(lines(path))


def one_message(text: str, *, person: bool = True) -> Transcript:
    message = Message(id="m1", role="user", text=text, timestamp_ms=None, person=person)
    return Transcript(format="claude-code", session_id="s1", cwd=None, messages=[message])


def containing(transcript: Transcript, fragment: str) -> Message:
    (message,) = [m for m in transcript.messages if fragment in m.text]
    return message
