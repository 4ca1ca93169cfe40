"""Hostile content on a person's screen: control sequences shown as escapes, an agent's write
named as one wherever its source is shown (CLI, hooks, browse's cells), ``--json`` exact."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from rich.text import Text

from hikmah.model.display import INVISIBLE, counted, visible, writer
from hikmah_browse import format
from hikmah_cli import render_service
from hikmah_cli.replies import as_reply
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

# Each of these acts on a terminal or hides what the text says: erase the screen and move
# the cursor, write the clipboard (OSC 52), ring the bell, an 8-bit CSI, a bidi override
# (the text reads backwards), a zero-width space and a tag character.
HOSTILE = (
    "deploy\x1b[2J\x1b[1A rule\x1b]52;c;ZWNobyBwd25lZA==\x07 bell\x07 csi\x9b31m"
    " \u202eyadirf no yolped\u202c zero\u200bwidth tag\U000e0041"
)
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u200b", "\U000e0041")
AGENT = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s-hostile-1"}


def raw_controls(text: str) -> list[str]:
    """Every character of ``text`` a terminal would act on (tab and newline aside)."""
    return [ch for ch in text if any(low <= ord(ch) <= high for low, high in INVISIBLE)]


def test_visible_escapes_every_control_and_format_character() -> None:
    shown = visible(HOSTILE)
    assert raw_controls(shown) == []
    for escape in ("\\x1b[2J", "\\x1b]52;c;", "\\x07", "\\x9b31m", "\\u202e", "\\u200b"):
        assert escape in shown
    assert "\\U000e0041" in shown
    assert visible(shown) == shown  # escaping twice changes nothing more


def test_visible_covers_every_unicode_control_format_and_separator_character() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")
        and chr(code) not in "\t\n"
        and visible(chr(code)) == chr(code)
    ]
    assert missed == []


@pytest.mark.parametrize(
    "text", ["plain words", "tab\there\nnew line", "café 日本語 عربي עברית 🚀", "a\\x1b b"]
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert visible(text) == text


@pytest.mark.parametrize(
    ("source", "locator", "verified", "shown"),
    [
        ("human:sam", None, True, "human:sam, verified"),
        ("tool:psql", "db.sql:3", False, "tool:psql, unverified"),
        (
            "agent:claude-code",
            "agent-session:claude-code:s-1",
            False,
            "agent:claude-code, session s-1, unverified",
        ),
        (
            "human:sam",
            "agent-session:claude-code:5f1c2a3b4c5d6e7f; notes.md:3",
            False,
            "human:sam (claimed), written by agent:claude-code, session 5f1c2a3b…, unverified",
        ),
        (None, "agent-session:codex:unknown", False, "agent:codex, session unknown, unverified"),
        ("human:\x1b[1Asam", None, False, "human:\\x1b[1Asam, unverified"),
        # The stamp counts only first: a caller's locator naming a session proves nothing.
        ("human:sam", "notes.md; agent-session:codex:x", False, "human:sam, unverified"),
    ],
)
def test_writer_names_the_agent_whose_session_wrote_a_trace(
    source: str | None, locator: str | None, verified: bool, shown: str
) -> None:
    assert writer(source, locator, verified) == shown


def test_browse_cells_are_escaped_plain_text_never_markup() -> None:
    cell = format.cell("[link=https://evil.example]click[/link] " + HOSTILE, 400)
    assert isinstance(cell, Text)
    assert cell.spans == []  # no link, no style: the brackets are text
    assert cell.plain.startswith("[link=https://evil.example]click[/link] ")
    assert raw_controls(cell.plain) == []
    assert raw_controls(Text.from_markup(format.markup(HOSTILE)).plain) == []
    author = format.author("human:sam", "agent-session:codex:s-2", False)
    assert author == "agent:codex"


def hostile_world(daemon: Running) -> dict[str, str]:
    """An agent session's note claiming to be the person's, with hostile content, and a
    commitment and a rule carrying the same bytes."""
    written = daemon.cli(
        "remember", HOSTILE, "--kind", "constraint", "--source", "human:sam", "--json", env=clean_env(**AGENT)
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    note = json.loads(written.stdout)["trace"]
    assert note["provenance"]["locator"].startswith("agent-session:claude-code:")
    due = daemon.call(
        "memory.remember",
        content="renew the cert " + HOSTILE,
        kind="commitment",
        deadline="2099-01-01T00:00:00Z",
    )["trace"]
    return {"note": note["id"], "due": due["id"]}


def test_cli_output_for_a_person_escapes_content_and_names_the_agent(daemon: Running) -> None:
    ids = hostile_world(daemon)
    outputs = {
        "recall": daemon.cli("recall", "deploy rule bell"),
        "show": daemon.cli("show", ids["note"]),
        "commitments": daemon.cli("commitments"),
    }
    for name, result in outputs.items():
        assert result.returncode == 0, (name, result.stderr)
        assert raw_controls(result.stdout + result.stderr) == [], name
        assert "\\x1b[2J" in result.stdout, name
    for name in ("recall", "show"):
        assert "human:sam (claimed), written by agent:claude-code" in outputs[name].stdout


def test_cli_json_keeps_the_stored_bytes_exact(daemon: Running) -> None:
    ids = hostile_world(daemon)
    shown = daemon.cli("show", ids["note"], "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["trace"]["content"] == HOSTILE
    recalled = json.loads(daemon.cli("recall", "deploy rule bell", "--json").stdout)
    assert HOSTILE in [result["trace"]["content"] for result in recalled["results"]]


def session_start(daemon: Running) -> str:
    result = daemon.cli("hook", "session-start", input=json.dumps({"cwd": "/tmp"}))
    assert result.returncode == 0, result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    text: str = output["hookSpecificOutput"]["additionalContext"]
    return text


def test_hook_context_escapes_content_and_names_the_agent(daemon: Running) -> None:
    hostile_world(daemon)
    text = session_start(daemon)
    assert raw_controls(text) == []
    assert "\\x1b]52;c;" in text
    assert (
        "human:sam (claimed), written by agent:claude-code, session s-hostile-1, unverified" in text
    )


def test_a_count_says_its_noun_in_the_right_number() -> None:
    assert counted(1, "trace") == "1 trace"
    assert counted(0, "trace") == "0 traces"
    assert counted(2048, "trace") == "2,048 traces"
    assert counted(2, "capsule", "capsules") == "2 capsules"


def test_status_says_presence_is_still_being_read_in_the_first_moments(
    daemon: Running,
) -> None:
    result = as_reply(daemon.call("daemon.status"))  # as the CLI reads it
    assert "presence  on" in render_service.status(
        result
    ) or "presence  off" in render_service.status(result)
    del result["presence"]
    result["loading"] = ["presence"]  # as the daemon answers while it reads the ledger
    shown = render_service.status(result)
    assert "presence  still being read from the ledger" in shown


@pytest.mark.parametrize(
    "semantic",
    [
        {"state": "building", "model": "minilm", "vectors": 1, "behind": 0},
        {
            "state": "building",
            "model": "minilm",
            "fallback": "bge-small",
            "vectors": 10**6,
            "behind": 123_456,
        },
        {"state": "unavailable", "model": "minilm", "error": "the model's files " * 8},
    ],
)
def test_the_semantic_line_of_status_fits_80_columns(
    daemon: Running, semantic: dict[str, Any]
) -> None:
    result = as_reply(daemon.call("daemon.status"))  # as the CLI reads it
    # The members every channel has, besides those the case gives.
    result["semantic"] = as_reply({"enabled": True, "error": None, "fallback": None, **semantic})
    shown = render_service.status(result)
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    assert "  semantic  " + semantic["state"] in shown
