"""Transcript ingest, candidates from the recorded transcripts: from the person's words only,
each with its sentence as written."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from hikmah.learning.ingest import evidence_holds, extract_candidates
from hikmah.learning.transcripts import Transcript
from tests.kernel.ingest_cases import CLAUDE, CODEX, parsed


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
