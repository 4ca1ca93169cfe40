"""``hikmah setup codex``: our hooks, and our MCP server in a marked block of config.toml
that a removal takes out to the byte; a person's own tables and broken files are refused."""

from __future__ import annotations

import copy
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import BEGIN, CODEX_FORWARDED, CODEX_STARTUP_TIMEOUT_S, END, SetupError
from tests.clients.setup_cases import (
    AGENT,
    CODEX_CONFIG,
    CODEX_HOOKS,
    OLD_HIKMAH,
    ours,
    read_json,
    run,
    snapshot,
    write,
)

CODEX_CONFIG_TEXT = """\
# My Codex settings. Keep this comment.
model = "gpt-5-codex"  # trailing comment
approval_policy = "on-request"

[mcp_servers.docs]
# the docs server
command = "npx"
args = ["-y", "docs-mcp"]

[projects."/work/x"]
trust_level = "trusted"
"""
CODEX_HOOKS_JSON: dict[str, Any] = {
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/scan-secrets"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "~/bin/stop", "timeout": 30}]}],
    }
}


def codex_server(agent: str = AGENT) -> dict[str, Any]:
    return {
        "command": agent,
        "args": [],
        "env_vars": list(CODEX_FORWARDED),
        "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_S,
    }


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    write(tmp_path, CODEX_CONFIG, CODEX_CONFIG_TEXT)
    write(tmp_path, CODEX_HOOKS, CODEX_HOOKS_JSON)
    return tmp_path


def test_codex_setup_appends_a_marked_block(codex_home: Path) -> None:
    lines = run("codex", codex_home)

    text = (codex_home / CODEX_CONFIG).read_text()
    assert text.startswith(CODEX_CONFIG_TEXT)
    block = text.removeprefix(CODEX_CONFIG_TEXT)
    assert block.splitlines() == [
        "",
        BEGIN,
        "[mcp_servers.hikmah]",
        'command = "/opt/hikmah venv/bin/hikmah-agent"',
        "args = []",
        'env_vars = ["HIKMAH_SOCKET", "HIKMAH_DATA_DIR", "HIKMAH_POLICY", "XDG_RUNTIME_DIR",'
        ' "XDG_DATA_HOME", "XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS",'
        ' "PYTHON_KEYRING_BACKEND"]',
        "startup_timeout_sec = 20",
        END,
    ]
    parsed = tomllib.loads(text)
    original = tomllib.loads(CODEX_CONFIG_TEXT)
    original["mcp_servers"]["hikmah"] = codex_server()
    assert parsed == original

    hooks = read_json(codex_home, CODEX_HOOKS)
    expected = copy.deepcopy(CODEX_HOOKS_JSON)
    expected["hooks"]["UserPromptSubmit"].append({"hooks": [ours("prompt")]})
    expected["hooks"]["SessionStart"] = [{"hooks": [ours("session-start")]}]
    assert hooks == expected

    assert lines == [
        "updated ~/.codex/hooks.json with hooks SessionStart, UserPromptSubmit "
        "(backup: ~/.codex/hooks.json.hikmah-backup); Codex skips them until you review them"
        " with /hooks in Codex",
        "updated ~/.codex/config.toml with MCP server hikmah "
        "(backup: ~/.codex/config.toml.hikmah-backup)",
    ]
    assert (codex_home / f"{CODEX_CONFIG}.hikmah-backup").read_text() == CODEX_CONFIG_TEXT


def test_codex_fresh_home_gets_just_our_entries(tmp_path: Path) -> None:
    run("codex", tmp_path)
    text = (tmp_path / CODEX_CONFIG).read_text()
    assert text.startswith(BEGIN) and text.endswith(f"{END}\n")
    assert read_json(tmp_path, CODEX_HOOKS) == {
        "hooks": {
            "SessionStart": [{"hooks": [ours("session-start")]}],
            "UserPromptSubmit": [{"hooks": [ours("prompt")]}],
        }
    }


def test_codex_second_run_is_byte_identical(codex_home: Path) -> None:
    run("codex", codex_home)
    after_first = snapshot(codex_home)
    lines = run("codex", codex_home)
    assert snapshot(codex_home) == after_first
    assert lines == ["already set up: ~/.codex/hooks.json", "already set up: ~/.codex/config.toml"]


def test_codex_rerun_replaces_the_block_where_it_is(codex_home: Path) -> None:
    run("codex", codex_home, hikmah=OLD_HIKMAH, agent="/old/bin/hikmah-agent")
    later = '\n[profiles.fast]\nmodel = "gpt-5-mini"\n'
    with (codex_home / CODEX_CONFIG).open("a") as file:
        file.write(later)  # the person added a table after our block

    run("codex", codex_home)

    text = (codex_home / CODEX_CONFIG).read_text()
    assert text.count(BEGIN) == 1
    assert text.startswith(CODEX_CONFIG_TEXT) and text.endswith(f"{END}\n{later}")
    assert tomllib.loads(text)["mcp_servers"]["hikmah"]["command"] == AGENT
    hooks = read_json(codex_home, CODEX_HOOKS)["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [ours("session-start")]}]

    run("codex", codex_home, remove=True)
    assert (codex_home / CODEX_CONFIG).read_text() == CODEX_CONFIG_TEXT + later


def test_codex_remove_restores_the_original(codex_home: Path) -> None:
    before = snapshot(codex_home)
    run("codex", codex_home)

    lines = run("codex", codex_home, remove=True)

    assert (codex_home / CODEX_CONFIG).read_bytes() == before[CODEX_CONFIG]
    assert read_json(codex_home, CODEX_HOOKS) == CODEX_HOOKS_JSON
    assert lines[1] == (
        "removed MCP server hikmah from ~/.codex/config.toml; deleted setup's backup"
        " ~/.codex/config.toml.hikmah-backup (nothing else changed)"
    )
    assert snapshot(codex_home) == before


def test_codex_tables_written_into_our_block_are_kept(codex_home: Path) -> None:
    """Codex appends the tables it writes (the /hooks review's trust, seen with 0.171) at
    the end of the file: inside our block. They stay; our server's own subtables go."""
    run("codex", codex_home)
    trust = '\n[hooks.state."/h/.codex/hooks.json:session_start:0:0"]\ntrusted_hash = "sha256:ab"\n'
    ours_too = '\n[mcp_servers.hikmah.tools.recall]\napproval_mode = "approve"\n'
    text = (codex_home / CODEX_CONFIG).read_text()
    inside = text.replace(f"{END}\n", f"{ours_too}{trust}{END}\n")
    write(codex_home, CODEX_CONFIG, inside)

    run("codex", codex_home)  # a rerun moves them out of the block
    rerun = (codex_home / CODEX_CONFIG).read_text()
    assert rerun.endswith(f"{END}\n{trust}") and "tools.recall" not in rerun
    assert tomllib.loads(rerun)["mcp_servers"]["hikmah"] == codex_server()

    write(codex_home, CODEX_CONFIG, inside)
    run("codex", codex_home, remove=True)
    assert (codex_home / CODEX_CONFIG).read_text() == CODEX_CONFIG_TEXT + trust


@pytest.mark.parametrize("original", ["", "\n", 'model = "o3"\n\n', "# only a comment\n"])
def test_codex_remove_gives_back_the_exact_text(tmp_path: Path, original: str) -> None:
    write(tmp_path, CODEX_CONFIG, original)
    run("codex", tmp_path)
    run("codex", tmp_path, remove=True)
    assert (tmp_path / CODEX_CONFIG).read_text() == original


def test_codex_file_without_final_newline(tmp_path: Path) -> None:
    write(tmp_path, CODEX_CONFIG, 'model = "o3"')
    run("codex", tmp_path)
    assert tomllib.loads((tmp_path / CODEX_CONFIG).read_text())["model"] == "o3"
    run("codex", tmp_path, remove=True)
    assert (tmp_path / CODEX_CONFIG).read_text() == 'model = "o3"\n'


def test_codex_refuses_a_persons_own_hikmah_table(codex_home: Path) -> None:
    own = CODEX_CONFIG_TEXT + '\n[mcp_servers.hikmah]\ncommand = "my-wrapper"\n'
    write(codex_home, CODEX_CONFIG, own)
    before = snapshot(codex_home)

    with pytest.raises(SetupError, match=r"~/\.codex/config\.toml: \[mcp_servers\.hikmah\]"):
        run("codex", codex_home)
    assert snapshot(codex_home) == before  # hooks.json was not written either

    lines = run("codex", codex_home, remove=True)
    assert (codex_home / CODEX_CONFIG).read_text() == own
    assert lines[1].startswith("nothing to remove: ~/.codex/config.toml (")

    run("codex", codex_home, mcp=False)  # hooks only: fine
    assert (codex_home / CODEX_CONFIG).read_text() == own
    assert "SessionStart" in read_json(codex_home, CODEX_HOOKS)["hooks"]


def test_codex_invalid_toml_is_refused(codex_home: Path) -> None:
    write(codex_home, CODEX_CONFIG, 'model = "o3"\nmodel = "o4"\n')
    before = snapshot(codex_home)
    with pytest.raises(SetupError, match=r"~/\.codex/config\.toml: invalid TOML: .*line 2"):
        run("codex", codex_home)
    assert snapshot(codex_home) == before


def test_codex_edit_that_would_break_the_file_is_refused(tmp_path: Path) -> None:
    # An inline table cannot be extended by a [mcp_servers.hikmah] header.
    write(tmp_path, CODEX_CONFIG, 'mcp_servers = { docs = { command = "npx" } }\n')
    before = snapshot(tmp_path)
    with pytest.raises(SetupError, match="after the edit, invalid TOML"):
        run("codex", tmp_path)
    assert snapshot(tmp_path) == before


def test_codex_unpaired_markers_are_refused(codex_home: Path) -> None:
    write(codex_home, CODEX_CONFIG, f"{CODEX_CONFIG_TEXT}{BEGIN}\n")
    before = snapshot(codex_home)
    with pytest.raises(SetupError, match=r"marker lines \(12\) do not pair up"):
        run("codex", codex_home)
    assert snapshot(codex_home) == before


def test_codex_paths_with_odd_characters_read_back_exactly(tmp_path: Path) -> None:
    agent = '/tmp/we"ird\\dir\tx/hikmah-agent'
    hikmah = "/tmp/it's here/hikmah"
    run("codex", tmp_path, hikmah=hikmah, agent=agent)
    config = tomllib.loads((tmp_path / CODEX_CONFIG).read_text())
    assert config["mcp_servers"]["hikmah"]["command"] == agent
    command = read_json(tmp_path, CODEX_HOOKS)["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert shlex.split(command["command"]) == [hikmah, "hook", "prompt"]
    assert run("codex", tmp_path, hikmah=hikmah, agent=agent)[1].startswith("already set up")


def test_codex_home_is_where_both_files_go(tmp_path: Path) -> None:
    moved = tmp_path / "codex-home"
    write(moved, "config.toml", CODEX_CONFIG_TEXT)
    home = tmp_path / "home"
    home.mkdir()
    run("codex", home, environ={"CODEX_HOME": str(moved)})
    assert snapshot(home) == {}
    config = tomllib.loads((moved / "config.toml").read_text())
    assert config["mcp_servers"]["hikmah"] == codex_server()
    assert "SessionStart" in read_json(moved, "hooks.json")["hooks"]
    run("codex", home, environ={"CODEX_HOME": str(moved)}, remove=True)
    assert (moved / "config.toml").read_text() == CODEX_CONFIG_TEXT
    assert not (moved / "hooks.json").exists()
