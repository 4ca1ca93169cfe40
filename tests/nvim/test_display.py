"""Hostile content in Neovim: the plugin shows control sequences as escapes and names an
agent's write as one, by the same rules as the CLI (:mod:`hikmah.model.display`)."""

from __future__ import annotations

import json

from hikmah.model.display import INVISIBLE, visible, writer
from tests.clients.test_display import AGENT, HOSTILE, raw_controls
from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.nvim import Nvim, lua

PROVENANCES = [
    {"source": "human:sam", "verified": True},
    {"source": "tool:psql", "locator": "db.sql:3"},
    {"source": "agent:codex", "locator": "agent-session:codex:s-1"},
    {"source": "human:sam", "locator": "agent-session:claude-code:5f1c2a3b4c5d6e7f; notes.md:3"},
    {"locator": "agent-session:codex:unknown"},
    {"source": "human:\x1b[1Asam"},
    {"source": "human:sam", "locator": "notes.md; agent-session:codex:x"},
]


def test_the_lua_rules_are_the_python_rules(nvim: Nvim) -> None:
    done = nvim.run(
        f"""
        local display = require("hikmah.display")
        T.data.ranges = display.INVISIBLE
        T.data.shown = display.visible({lua(HOSTILE)})
        T.data.writers = vim.tbl_map(display.writer, {lua(PROVENANCES)})
        """
    )
    assert [tuple(r) for r in done["data"]["ranges"]] == list(INVISIBLE)
    assert done["data"]["shown"] == visible(HOSTILE)
    expected = [
        writer(p.get("source"), p.get("locator"), bool(p.get("verified"))) for p in PROVENANCES
    ]
    assert done["data"]["writers"] == expected


def test_recall_and_trace_floats_escape_content_and_name_the_agent(
    daemon: Running, nvim: Nvim
) -> None:
    written = daemon.cli(
        "remember", HOSTILE, "--source", "human:sam", "--json", env=clean_env(**AGENT)
    )
    assert written.returncode == 0, written.stderr
    trace_id = json.loads(written.stdout)["trace"]["id"]
    done = nvim.run(
        f"""
        vim.cmd("HikmahRecall deploy rule bell")
        T.data.recall = T.float_lines(1, "recall float")
        T.cursor_on("{trace_id}")
        T.keys("<CR>")
        T.data.trace = T.float_lines(2, "trace float")
        """,
        socket=daemon.socket,
    )
    for name in ("recall", "trace"):
        text = "\n".join(done["data"][name])
        assert raw_controls(text) == [], name
        assert "\\x1b]52;c;" in text, name
        assert "human:sam (claimed), written by agent:claude-code" in text, name
