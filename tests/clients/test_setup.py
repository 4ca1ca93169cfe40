"""``hikmah setup``: our entries go in and come out, everything else stays as it was."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import (
    BEGIN,
    CODEX_FORWARDED,
    CODEX_STARTUP_TIMEOUT_S,
    END,
    SetupError,
    next_steps,
    setup,
)

# A space in the path, so that quoting in hook commands matters.
HIKMAH = "/opt/hikmah venv/bin/hikmah"
AGENT = "/opt/hikmah venv/bin/hikmah-agent"
OLD_HIKMAH = "/home/someone/.local/bin/hikmah"

SETTINGS = ".claude/settings.json"
CLAUDE_JSON = ".claude.json"
CODEX_HOOKS = ".codex/hooks.json"
CODEX_CONFIG = ".codex/config.toml"

# Hooks a person wrote that look like ours but are not.
LOOKALIKES = [
    {"type": "command", "command": "hikmah hook prompt --verbose"},
    {"type": "command", "command": "/usr/bin/env hikmah hook prompt"},
    {"type": "command", "command": "/home/someone/bin/not-hikmah hook prompt"},
    {"type": "command", "command": "echo hikmah hook prompt"},
]

CLAUDE_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git:*)"], "deny": []},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/bin/log-prompt", "timeout": 5}]},
            {"hooks": LOOKALIKES},
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash"}]}
        ],
        "Stop": [],
    },
    "statusLine": {"type": "command", "command": "~/bin/status"},
}
CLAUDE_STATE: dict[str, Any] = {
    "numStartups": 12,
    "userName": "Ḥikmah ✓",
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}},
    "projects": {"/work/x": {"mcpServers": {}, "allowedTools": []}},
}
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


def run(
    host: Any, home: Path, *, hikmah: str = HIKMAH, agent: str = AGENT, **options: Any
) -> list[str]:
    options.setdefault("environ", {})  # neither CLAUDE_CONFIG_DIR nor CODEX_HOME
    return setup(host, home=home, hikmah=hikmah, hikmah_agent=agent, **options)


def codex_server(agent: str = AGENT) -> dict[str, Any]:
    return {
        "command": agent,
        "args": [],
        "env_vars": list(CODEX_FORWARDED),
        "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_S,
    }


def ours(sub: str, hikmah: str = HIKMAH) -> dict[str, Any]:
    return {"type": "command", "command": f"{shlex.quote(hikmah)} hook {sub}", "timeout": 10}


def write(home: Path, name: str, content: dict[str, Any] | str) -> bytes:
    path = home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # Four-space indent: a file we do not change must keep its own layout.
    text = content if isinstance(content, str) else json.dumps(content, indent=4)
    path.write_bytes(text.encode())
    return path.read_bytes()


def read_json(home: Path, name: str) -> Any:
    return json.loads((home / name).read_text())


def snapshot(home: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(home)): path.read_bytes() for path in home.rglob("*") if path.is_file()
    }


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    write(tmp_path, SETTINGS, CLAUDE_SETTINGS)
    write(tmp_path, CLAUDE_JSON, CLAUDE_STATE)
    return tmp_path


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    write(tmp_path, CODEX_CONFIG, CODEX_CONFIG_TEXT)
    write(tmp_path, CODEX_HOOKS, CODEX_HOOKS_JSON)
    return tmp_path


# --- Claude Code ---


def test_claude_setup_adds_exactly_our_entries(claude_home: Path) -> None:
    lines = run("claude", claude_home)

    expected = copy.deepcopy(CLAUDE_SETTINGS)
    expected["hooks"]["UserPromptSubmit"].append({"hooks": [ours("prompt")]})
    expected["hooks"]["SessionStart"] = [{"hooks": [ours("session-start")]}]
    settings = read_json(claude_home, SETTINGS)
    assert settings == expected
    assert list(settings) == list(CLAUDE_SETTINGS)
    assert list(settings["hooks"]) == [*CLAUDE_SETTINGS["hooks"], "SessionStart"]

    state = read_json(claude_home, CLAUDE_JSON)
    server = {"type": "stdio", "command": AGENT, "args": [], "env": {}}
    assert state == {**CLAUDE_STATE, "mcpServers": {**CLAUDE_STATE["mcpServers"], "hikmah": server}}
    assert (claude_home / CLAUDE_JSON).read_text(encoding="utf-8").endswith("}\n")
    assert "Ḥikmah ✓" in (claude_home / CLAUDE_JSON).read_text(encoding="utf-8")

    assert lines == [
        "updated ~/.claude/settings.json with hooks SessionStart, UserPromptSubmit "
        "(backup: ~/.claude/settings.json.hikmah-backup)",
        "updated ~/.claude.json with MCP server hikmah (backup: ~/.claude.json.hikmah-backup)",
    ]


def test_hook_command_runs_the_given_executable(claude_home: Path) -> None:
    run("claude", claude_home)
    handlers = read_json(claude_home, SETTINGS)["hooks"]["SessionStart"][0]["hooks"]
    assert shlex.split(handlers[0]["command"]) == [HIKMAH, "hook", "session-start"]


def test_backup_holds_the_original(claude_home: Path) -> None:
    before = snapshot(claude_home)
    run("claude", claude_home)
    assert (claude_home / f"{SETTINGS}.hikmah-backup").read_bytes() == before[SETTINGS]
    assert (claude_home / f"{CLAUDE_JSON}.hikmah-backup").read_bytes() == before[CLAUDE_JSON]


def test_second_run_changes_nothing_and_says_so(claude_home: Path) -> None:
    run("claude", claude_home)
    after_first = snapshot(claude_home)

    lines = run("claude", claude_home)

    assert snapshot(claude_home) == after_first  # backups included: none was made
    assert lines == ["already set up: ~/.claude/settings.json", "already set up: ~/.claude.json"]


def test_rerun_on_a_fresh_home_makes_no_backup(tmp_path: Path) -> None:
    assert run("claude", tmp_path) == [
        "created ~/.claude/settings.json with hooks SessionStart, UserPromptSubmit",
        "created ~/.claude.json with MCP server hikmah",
    ]
    run("claude", tmp_path)
    assert sorted(snapshot(tmp_path)) == sorted([SETTINGS, CLAUDE_JSON])


def test_a_new_install_path_replaces_the_old_entries(claude_home: Path) -> None:
    run("claude", claude_home, hikmah=OLD_HIKMAH, agent="/old/bin/hikmah-agent")
    first = read_json(claude_home, SETTINGS)

    lines = run("claude", claude_home)

    settings = read_json(claude_home, SETTINGS)
    # The same places, now with the new path: replaced, not added.
    assert settings["hooks"]["UserPromptSubmit"][:-1] == first["hooks"]["UserPromptSubmit"][:-1]
    assert settings["hooks"]["UserPromptSubmit"][-1] == {"hooks": [ours("prompt")]}
    assert settings["hooks"]["SessionStart"] == [{"hooks": [ours("session-start")]}]
    assert read_json(claude_home, CLAUDE_JSON)["mcpServers"]["hikmah"]["command"] == AGENT
    assert all(line.startswith("updated ") for line in lines)


def test_our_entry_shares_a_group_with_a_persons_hook(tmp_path: Path) -> None:
    mine = {"type": "command", "command": "~/bin/log-prompt"}
    shared = {"hooks": {"UserPromptSubmit": [{"hooks": [mine, ours("prompt", OLD_HIKMAH)]}]}}
    write(tmp_path, SETTINGS, shared)

    run("claude", tmp_path, mcp=False)
    groups = read_json(tmp_path, SETTINGS)["hooks"]["UserPromptSubmit"]
    assert groups == [{"hooks": [mine, ours("prompt")]}]  # replaced in place, neighbour kept

    run("claude", tmp_path, remove=True)
    groups = read_json(tmp_path, SETTINGS)["hooks"]["UserPromptSubmit"]
    assert groups == [{"hooks": [mine]}]  # the group is not empty, so it stays


def test_duplicates_of_ours_collapse_to_one(tmp_path: Path) -> None:
    write(
        tmp_path,
        SETTINGS,
        {"hooks": {"SessionStart": [{"hooks": [ours("session-start", OLD_HIKMAH)]}] * 2}},
    )
    run("claude", tmp_path, mcp=False)
    hooks = read_json(tmp_path, SETTINGS)["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [ours("session-start")]}]


def test_remove_gives_back_the_persons_bytes_when_nothing_else_changed(
    claude_home: Path,
) -> None:
    before = snapshot(claude_home)  # four-space indent, no final newline
    run("claude", claude_home)
    run("claude", claude_home, remove=True)
    assert snapshot(claude_home) == before  # the backups setup made went with its entries
    # The host rewrote its state file meanwhile: the rest of it is kept, in setup's layout,
    # and the file as it was before the removal is kept beside it.
    run("claude", claude_home)
    state = read_json(claude_home, CLAUDE_JSON)
    write(claude_home, CLAUDE_JSON, {**state, "numStartups": 13})
    rewritten = (claude_home / CLAUDE_JSON).read_bytes()
    lines = run("claude", claude_home, remove=True)
    assert read_json(claude_home, CLAUDE_JSON) == {**CLAUDE_STATE, "numStartups": 13}
    assert (claude_home / CLAUDE_JSON).read_text().startswith('{\n  "numStartups"')
    assert (claude_home / f"{CLAUDE_JSON}.hikmah-backup").read_bytes() == rewritten
    assert lines[1] == (
        "removed MCP server hikmah from ~/.claude.json, rewritten in setup's layout; the file"
        " as it was is kept in ~/.claude.json.hikmah-backup (delete it once checked)"
    )
    assert sorted(snapshot(claude_home)) == sorted([*before, f"{CLAUDE_JSON}.hikmah-backup"])


def test_remove_deletes_a_backup_once_nothing_but_our_entries_changes(
    claude_home: Path,
) -> None:
    run("claude", claude_home)
    # The host rewrote its state in setup's own layout: the backup from before setup is
    # stale, and taking our entry out changes no other byte.
    state = {**read_json(claude_home, CLAUDE_JSON), "numStartups": 13}
    (claude_home / CLAUDE_JSON).write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n")
    lines = run("claude", claude_home, remove=True)
    assert (claude_home / CLAUDE_JSON).read_text() == (
        json.dumps({**CLAUDE_STATE, "numStartups": 13}, indent=2, ensure_ascii=False) + "\n"
    )
    assert lines[1] == (
        "removed MCP server hikmah from ~/.claude.json; deleted setup's backup"
        " ~/.claude.json.hikmah-backup (nothing else changed)"
    )
    assert sorted(snapshot(claude_home)) == sorted([SETTINGS, CLAUDE_JSON])


def test_remove_never_deletes_a_backup_it_did_not_write(claude_home: Path) -> None:
    run("claude", claude_home)
    backup = claude_home / f"{SETTINGS}.hikmah-backup"
    backup.unlink()
    backup.mkdir()  # not a file setup writes: someone else's
    (backup / "keep").write_text("mine")
    lines = run("claude", claude_home, remove=True)
    assert (backup / "keep").read_text() == "mine"
    assert read_json(claude_home, SETTINGS) == CLAUDE_SETTINGS
    assert lines[0] == "removed 2 hooks from ~/.claude/settings.json"


def test_remove_restores_the_parsed_original(claude_home: Path) -> None:
    run("claude", claude_home)

    lines = run("claude", claude_home, remove=True)

    assert read_json(claude_home, SETTINGS) == CLAUDE_SETTINGS
    assert read_json(claude_home, CLAUDE_JSON) == CLAUDE_STATE
    assert lines == [
        "removed 2 hooks from ~/.claude/settings.json; deleted setup's backup"
        " ~/.claude/settings.json.hikmah-backup (nothing else changed)",
        "removed MCP server hikmah from ~/.claude.json; deleted setup's backup"
        " ~/.claude.json.hikmah-backup (nothing else changed)",
    ]


def test_remove_drops_only_containers_we_emptied(tmp_path: Path) -> None:
    write(tmp_path, SETTINGS, {"model": "opus"})
    write(tmp_path, CLAUDE_JSON, {"numStartups": 1})
    run("claude", tmp_path)
    run("claude", tmp_path, remove=True)
    assert read_json(tmp_path, SETTINGS) == {"model": "opus"}
    assert read_json(tmp_path, CLAUDE_JSON) == {"numStartups": 1}


def test_remove_without_our_entries_leaves_files_alone(claude_home: Path) -> None:
    before = snapshot(claude_home)
    lines = run("claude", claude_home, remove=True)
    assert snapshot(claude_home) == before  # not even reformatted
    assert lines == [
        "nothing to remove: ~/.claude/settings.json",
        "nothing to remove: ~/.claude.json",
    ]


def test_a_file_setup_created_goes_when_setup_is_removed(tmp_path: Path) -> None:
    run("claude", tmp_path)
    run("claude", tmp_path, remove=True)
    assert snapshot(tmp_path) == {}
    # Once the person keeps something of their own in it, the file stays.
    run("claude", tmp_path)
    settings = read_json(tmp_path, SETTINGS)
    write(tmp_path, SETTINGS, {**settings, "model": "opus"})
    run("claude", tmp_path, remove=True)
    assert read_json(tmp_path, SETTINGS) == {"model": "opus"}


def test_remove_on_a_fresh_home_creates_nothing(tmp_path: Path) -> None:
    assert run("codex", tmp_path, remove=True) == [
        "nothing to remove: ~/.codex/hooks.json",
        "nothing to remove: ~/.codex/config.toml",
    ]
    assert snapshot(tmp_path) == {}


def test_no_mcp_writes_hooks_only(tmp_path: Path) -> None:
    lines = run("claude", tmp_path, mcp=False)
    assert not (tmp_path / CLAUDE_JSON).exists()
    assert "SessionStart" in read_json(tmp_path, SETTINGS)["hooks"]
    assert len(lines) == 1


def test_no_mcp_leaves_an_existing_mcp_entry_alone(claude_home: Path) -> None:
    run("claude", claude_home, agent="/old/bin/hikmah-agent")
    before = (claude_home / CLAUDE_JSON).read_bytes()
    run("claude", claude_home, mcp=False)
    assert (claude_home / CLAUDE_JSON).read_bytes() == before


def test_remove_takes_out_mcp_even_with_no_mcp(claude_home: Path) -> None:
    run("claude", claude_home)
    run("claude", claude_home, remove=True, mcp=False)
    assert "hikmah" not in read_json(claude_home, CLAUDE_JSON)["mcpServers"]


def test_invalid_json_is_refused_and_nothing_changes(claude_home: Path) -> None:
    write(claude_home, SETTINGS, '{\n  "model": "opus",\n}\n')
    before = snapshot(claude_home)

    with pytest.raises(SetupError, match=r"~/\.claude/settings\.json: invalid JSON at line 3"):
        run("claude", claude_home)

    assert snapshot(claude_home) == before  # ~/.claude.json untouched too


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        (SETTINGS, {"hooks": []}, r"\$\.hooks is an array, expected an object"),
        (SETTINGS, {"hooks": {"UserPromptSubmit": {}}}, r"UserPromptSubmit is an object"),
        (SETTINGS, {"hooks": {"SessionStart": ["x"]}}, r"SessionStart\[0\] is a string"),
        (SETTINGS, {"hooks": {"SessionStart": [{}]}}, r"SessionStart\[0\]\.hooks is missing"),
        (SETTINGS, [1, 2], r"the top level is an array, expected an object"),
        (CLAUDE_JSON, {"mcpServers": None}, r"\$\.mcpServers is null, expected an object"),
    ],
)
def test_unexpected_structure_is_refused(
    claude_home: Path, name: str, content: Any, problem: str
) -> None:
    write(claude_home, name, json.dumps(content))
    before = snapshot(claude_home)
    with pytest.raises(SetupError, match=problem) as caught:
        run("claude", claude_home)
    assert f"~/{name}" in str(caught.value)
    assert snapshot(claude_home) == before


def test_someone_elses_hikmah_mcp_server_is_not_clobbered(claude_home: Path) -> None:
    foreign = {"command": "docker", "args": ["run", "hikmah"]}
    state = {**CLAUDE_STATE, "mcpServers": {"hikmah": foreign}}
    write(claude_home, CLAUDE_JSON, state)
    before = snapshot(claude_home)

    with pytest.raises(SetupError, match=r"not written by hikmah setup.*--no-mcp"):
        run("claude", claude_home)
    assert snapshot(claude_home) == before

    lines = run("claude", claude_home, remove=True)
    assert read_json(claude_home, CLAUDE_JSON) == state
    assert "left alone" in lines[1]


def test_new_files_are_private(tmp_path: Path) -> None:
    run("claude", tmp_path)
    run("codex", tmp_path)
    for name in (SETTINGS, CLAUDE_JSON, CODEX_HOOKS, CODEX_CONFIG):
        assert mode(tmp_path / name) == 0o600, name
    assert mode(tmp_path / ".claude") == 0o700
    assert mode(tmp_path / ".codex") == 0o700


def test_existing_modes_are_kept(claude_home: Path) -> None:
    os.chmod(claude_home / SETTINGS, 0o640)
    os.chmod(claude_home / CLAUDE_JSON, 0o604)
    run("claude", claude_home)
    assert mode(claude_home / SETTINGS) == 0o640
    assert mode(claude_home / f"{SETTINGS}.hikmah-backup") == 0o640
    assert mode(claude_home / CLAUDE_JSON) == 0o604


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"model": "opus"}))
    (tmp_path / ".claude").mkdir()
    (tmp_path / SETTINGS).symlink_to(real)

    run("claude", tmp_path, mcp=False)

    assert (tmp_path / SETTINGS).is_symlink()
    assert json.loads(real.read_text())["hooks"]["SessionStart"] == [
        {"hooks": [ours("session-start")]}
    ]


# --- Codex ---


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


def test_claude_config_dir_is_where_both_files_go(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "claude"
    environ = {"CLAUDE_CONFIG_DIR": str(moved)}
    home = tmp_path / "home"
    home.mkdir()
    lines = run("claude", home, environ=environ)
    assert snapshot(home) == {}  # ~/.claude.json and ~/.claude/ are not what Claude Code reads
    settings = read_json(moved, "settings.json")
    assert settings["hooks"]["SessionStart"] == [{"hooks": [ours("session-start")]}]
    assert read_json(moved, ".claude.json")["mcpServers"]["hikmah"]["command"] == AGENT
    assert lines[0] == f"created {moved}/settings.json with hooks SessionStart, UserPromptSubmit"
    lines = run("claude", home, environ=environ, remove=True)
    assert snapshot(moved) == {}  # setup had made both files, for its entries alone
    assert (
        lines[0] == f"deleted {moved}/settings.json: setup had created it, and it held only 2 hooks"
    )


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


def test_the_cli_installs_hooks_that_run(tmp_path: Path) -> None:
    """``hikmah setup claude`` end to end: the installed hook command itself works."""
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    cli = [sys.executable, "-m", "hikmah_cli", "setup", "claude"]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["UserPromptSubmit"]
    command = group["hooks"][0]["command"]
    assert command.endswith(" hook prompt") and Path(command.split()[0]).is_absolute()
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["hikmah"]
    assert Path(server["command"]).name == "hikmah-agent" and Path(server["command"]).exists()
    hook_env = {**env, "HIKMAH_SOCKET": str(tmp_path / "none.sock")}
    ran = subprocess.run(
        command, shell=True, input='{"prompt": "deploy staging now"}', env=hook_env,
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, "")
    removed = subprocess.run([*cli, "--remove"], env=env, capture_output=True, text=True)
    assert removed.returncode == 0, removed.stderr
    # Setup made both files for its entries alone: they go with them.
    assert not (tmp_path / ".claude" / "settings.json").exists()
    assert not (tmp_path / ".claude.json").exists()


# --- Gemini CLI ---

GEMINI_SETTINGS = ".gemini/settings.json"
GEMINI_POLICY = ".gemini/policies/hikmah.toml"
GEMINI_STATE: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"vimMode": True},
    "hooks": {
        "BeforeAgent": [{"hooks": [{"type": "command", "command": "~/bin/scan", "timeout": 500}]}],
        "AfterAgent": [{"matcher": "*", "hooks": [{"type": "command", "command": "~/bin/log"}]}],
    },
    "mcpServers": {"github": {"command": "gh-mcp", "args": [], "trust": True}},
}
# The rule of the policy file, as Gemini CLI 0.61 reads it (docs/reference/policy-engine.md).
GEMINI_RULE = {
    "mcpName": "hikmah",
    "toolName": "*",
    "toolAnnotations": {"readOnlyHint": True},
    "decision": "allow",
    "priority": 100,
}


def gemini_hook(sub: str, hikmah: str = HIKMAH) -> dict[str, Any]:
    # Gemini's timeouts are milliseconds: ten seconds, as Claude Code's 10.
    return {"type": "command", "command": f"{shlex.quote(hikmah)} hook {sub}", "timeout": 10000}


@pytest.fixture
def gemini_home(tmp_path: Path) -> Path:
    write(tmp_path, GEMINI_SETTINGS, GEMINI_STATE)
    return tmp_path


def test_gemini_setup_adds_exactly_our_entries(gemini_home: Path) -> None:
    lines = run("gemini", gemini_home)

    expected = copy.deepcopy(GEMINI_STATE)
    expected["hooks"]["BeforeAgent"].append({"hooks": [gemini_hook("prompt")]})
    expected["hooks"]["SessionStart"] = [{"hooks": [gemini_hook("session-start")]}]
    expected["mcpServers"]["hikmah"] = {"command": AGENT, "args": []}
    settings = read_json(gemini_home, GEMINI_SETTINGS)
    assert settings == expected
    assert list(settings) == list(GEMINI_STATE)

    policy = (gemini_home / GEMINI_POLICY).read_text()
    assert re.match(r"# hikmah:managed sha256=[0-9a-f]{16}\n", policy)
    assert tomllib.loads(policy) == {"rule": [GEMINI_RULE]}
    assert mode(gemini_home / GEMINI_POLICY) == 0o600

    assert lines == [
        "updated ~/.gemini/settings.json with hooks SessionStart, BeforeAgent and MCP server"
        " hikmah (backup: ~/.gemini/settings.json.hikmah-backup)",
        "created ~/.gemini/policies/hikmah.toml",
    ]


def test_gemini_a_new_install_path_replaces_the_old_entries(gemini_home: Path) -> None:
    run("gemini", gemini_home, hikmah=OLD_HIKMAH, agent="/old/bin/hikmah-agent")
    lines = run("gemini", gemini_home)
    settings = read_json(gemini_home, GEMINI_SETTINGS)
    assert settings["hooks"]["SessionStart"] == [{"hooks": [gemini_hook("session-start")]}]
    assert settings["hooks"]["BeforeAgent"][-1] == {"hooks": [gemini_hook("prompt")]}
    assert settings["mcpServers"]["hikmah"] == {"command": AGENT, "args": []}
    assert lines[1] == "already set up: ~/.gemini/policies/hikmah.toml"  # no path in it


def test_gemini_remove_gives_back_the_persons_bytes(gemini_home: Path) -> None:
    before = snapshot(gemini_home)
    run("gemini", gemini_home)

    lines = run("gemini", gemini_home, remove=True)

    assert snapshot(gemini_home) == before
    assert lines == [
        "removed 2 hooks and MCP server hikmah from ~/.gemini/settings.json; deleted setup's"
        " backup ~/.gemini/settings.json.hikmah-backup (nothing else changed)",
        "deleted ~/.gemini/policies/hikmah.toml",
    ]


def test_gemini_fresh_home_and_gemini_cli_home(tmp_path: Path) -> None:
    # GEMINI_CLI_HOME is the folder that holds .gemini, not .gemini itself.
    moved = tmp_path / "elsewhere"
    home = tmp_path / "home"
    home.mkdir()
    environ = {"GEMINI_CLI_HOME": str(moved)}
    lines = run("gemini", home, environ=environ)
    assert snapshot(home) == {}
    assert sorted(snapshot(moved)) == [GEMINI_POLICY, GEMINI_SETTINGS]
    assert read_json(moved, GEMINI_SETTINGS) == {
        "hooks": {
            "SessionStart": [{"hooks": [gemini_hook("session-start")]}],
            "BeforeAgent": [{"hooks": [gemini_hook("prompt")]}],
        },
        "mcpServers": {"hikmah": {"command": AGENT, "args": []}},
    }
    assert lines[0] == (
        f"created {moved}/.gemini/settings.json with hooks SessionStart, BeforeAgent and MCP"
        " server hikmah"
    )
    run("gemini", home, environ=environ, remove=True)
    assert snapshot(moved) == {}


def test_gemini_keeps_a_persons_hikmah_server_and_policy(tmp_path: Path) -> None:
    own = {"mcpServers": {"hikmah": {"command": "docker", "args": ["run", "hikmah"]}}}
    write(tmp_path, GEMINI_SETTINGS, own)
    write(tmp_path, GEMINI_POLICY, '[[rule]]\ntoolName = "*"\ndecision = "deny"\n')
    before = snapshot(tmp_path)
    with pytest.raises(SetupError, match=r"\$\.mcpServers\.hikmah is already there"):
        run("gemini", tmp_path)
    assert snapshot(tmp_path) == before
    lines = run("gemini", tmp_path, remove=True)
    assert snapshot(tmp_path) == before
    assert lines == [
        "nothing to remove: ~/.gemini/settings.json ($.mcpServers.hikmah was not written by"
        " hikmah setup; left alone)",
        "nothing to remove: ~/.gemini/policies/hikmah.toml (it was not written by hikmah"
        " setup; left alone)",
    ]


def test_gemini_no_mcp_writes_the_hooks_alone(tmp_path: Path) -> None:
    run("gemini", tmp_path, mcp=False)
    assert sorted(snapshot(tmp_path)) == [GEMINI_SETTINGS]
    assert set(read_json(tmp_path, GEMINI_SETTINGS)) == {"hooks"}


@pytest.mark.parametrize(
    ("environ", "trusted"),
    [
        ({}, "~/.gemini/trustedFolders.json"),
        ({"GEMINI_CLI_HOME": "/srv/g"}, "/srv/g/.gemini/trustedFolders.json"),
        ({"GEMINI_CLI_TRUSTED_FOLDERS_PATH": "/srv/trust.json"}, "/srv/trust.json"),
    ],
)
def test_gemini_next_steps_say_how_to_trust_a_folder(
    tmp_path: Path, environ: dict[str, str], trusted: str
) -> None:
    steps = " ".join(next_steps("gemini", home=tmp_path, environ=environ))
    assert "Restart Gemini CLI" in steps and "/permissions" in steps
    assert f'"TRUST_FOLDER" to {trusted}.' in steps


# --- OpenCode ---

OPENCODE_JSON = ".config/opencode/opencode.json"
OPENCODE_PLUGIN = ".config/opencode/plugins/hikmah.js"
OPENCODE_STATE: dict[str, Any] = {
    "$schema": "https://opencode.ai/config.json",
    "model": "fake/fake-model",
    "mcp": {"docs": {"type": "remote", "url": "https://docs.example/mcp"}},
    "permission": {"hikmah_remember": "ask"},
}
# What OpenCode itself writes into a folder with plugins: it stays.
OPENCODE_OWN = {
    ".config/opencode/.gitignore": "node_modules\npackage.json\n",
    ".config/opencode/package.json": '{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}',
    ".config/opencode/package-lock.json": "{}",
    ".config/opencode/node_modules/@opencode-ai/plugin/package.json": "{}",
}


def opencode_server(agent: str = AGENT) -> dict[str, Any]:
    return {"type": "local", "command": [agent], "enabled": True}


@pytest.fixture
def opencode_home(tmp_path: Path) -> Path:
    write(tmp_path, OPENCODE_JSON, OPENCODE_STATE)
    return tmp_path


def test_opencode_setup_adds_the_server_and_the_plugin(opencode_home: Path) -> None:
    lines = run("opencode", opencode_home)

    config = read_json(opencode_home, OPENCODE_JSON)
    expected = copy.deepcopy(OPENCODE_STATE)
    expected["mcp"]["hikmah"] = opencode_server()
    assert config == expected and list(config) == list(OPENCODE_STATE)

    plugin = (opencode_home / OPENCODE_PLUGIN).read_text()
    assert re.match(r"// hikmah:managed sha256=[0-9a-f]{16}\n", plugin)
    for sub in ("session-start", "prompt"):
        # The hook commands, as Claude Code's hooks run them, in a JavaScript string.
        assert json.dumps(f"{shlex.quote(HIKMAH)} hook {sub}") in plugin
    assert "@SESSION_START@" not in plugin and "@PROMPT@" not in plugin
    assert mode(opencode_home / OPENCODE_PLUGIN) == 0o600

    assert lines == [
        "updated ~/.config/opencode/opencode.json with MCP server hikmah"
        " (backup: ~/.config/opencode/opencode.json.hikmah-backup)",
        "created ~/.config/opencode/plugins/hikmah.js",
    ]


def test_opencode_a_new_install_path_replaces_the_old_entries(opencode_home: Path) -> None:
    run("opencode", opencode_home, hikmah=OLD_HIKMAH, agent="/old/bin/hikmah-agent")
    lines = run("opencode", opencode_home)
    assert lines[1] == "updated ~/.config/opencode/plugins/hikmah.js"
    assert read_json(opencode_home, OPENCODE_JSON)["mcp"]["hikmah"] == opencode_server()
    plugin = (opencode_home / OPENCODE_PLUGIN).read_text()
    assert HIKMAH in plugin and OLD_HIKMAH not in plugin


def test_opencode_remove_restores_and_leaves_opencodes_own_files(opencode_home: Path) -> None:
    before = snapshot(opencode_home)
    run("opencode", opencode_home)
    for name, text in OPENCODE_OWN.items():
        write(opencode_home, name, text)

    lines = run("opencode", opencode_home, remove=True)

    assert snapshot(opencode_home) == {**before, **{n: t.encode() for n, t in OPENCODE_OWN.items()}}
    assert lines == [
        "removed MCP server hikmah from ~/.config/opencode/opencode.json; deleted setup's"
        " backup ~/.config/opencode/opencode.json.hikmah-backup (nothing else changed)",
        "deleted ~/.config/opencode/plugins/hikmah.js",
    ]


@pytest.mark.parametrize(
    ("environ", "folder"),
    [
        ({"XDG_CONFIG_HOME": "{tmp}/xdg"}, "xdg/opencode"),
        # OpenCode loads OPENCODE_CONFIG_DIR besides its global folder: setup writes there.
        ({"OPENCODE_CONFIG_DIR": "{tmp}/oc", "XDG_CONFIG_HOME": "{tmp}/xdg"}, "oc"),
    ],
)
def test_opencode_config_folder_follows_its_variables(
    tmp_path: Path, environ: dict[str, str], folder: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environ = {name: value.format(tmp=tmp_path) for name, value in environ.items()}
    run("opencode", home, environ=environ)
    assert snapshot(home) == {}
    assert sorted(snapshot(tmp_path / folder)) == ["opencode.json", "plugins/hikmah.js"]
    assert read_json(tmp_path / folder, "opencode.json") == {"mcp": {"hikmah": opencode_server()}}
    run("opencode", home, environ=environ, remove=True)
    assert snapshot(tmp_path) == {}


def test_opencode_keeps_a_persons_hikmah_server(tmp_path: Path) -> None:
    own = {"mcp": {"hikmah": {"type": "remote", "url": "https://mine.example/mcp"}}}
    write(tmp_path, OPENCODE_JSON, own)
    before = snapshot(tmp_path)
    with pytest.raises(SetupError, match=r"\$\.mcp\.hikmah is already there"):
        run("opencode", tmp_path)
    assert snapshot(tmp_path) == before
    run("opencode", tmp_path, mcp=False)  # the plugin alone: fine
    assert read_json(tmp_path, OPENCODE_JSON) == own
    assert (tmp_path / OPENCODE_PLUGIN).exists()


# --- Gemini CLI and OpenCode alike ---

# host, its JSON file and the person's content of it, the file setup owns whole, and an
# edit a person might make to that file
BOTH = [
    pytest.param(
        "gemini", GEMINI_SETTINGS, GEMINI_STATE, GEMINI_POLICY,
        ("priority = 100", "priority = 900"), id="gemini",
    ),
    pytest.param(
        "opencode", OPENCODE_JSON, OPENCODE_STATE, OPENCODE_PLUGIN,
        ("TIMEOUT_MS = 10000", "TIMEOUT_MS = 3000"), id="opencode",
    ),
]  # fmt: skip
BOTH_NAMES = ("host", "config", "state", "owned", "edit")


@pytest.mark.parametrize(BOTH_NAMES, BOTH)
def test_a_second_run_changes_nothing(
    tmp_path: Path, host: str, config: str, state: Any, owned: str, edit: Any
) -> None:
    write(tmp_path, config, state)
    run(host, tmp_path)
    after_first = snapshot(tmp_path)
    assert run(host, tmp_path) == [f"already set up: ~/{config}", f"already set up: ~/{owned}"]
    assert snapshot(tmp_path) == after_first


@pytest.mark.parametrize(BOTH_NAMES, BOTH)
def test_a_config_with_comments_is_refused_unchanged(
    tmp_path: Path, host: str, config: str, state: Any, owned: str, edit: Any
) -> None:
    write(tmp_path, config, '{\n  // mine\n  "model": "x", /* and more */\n}\n')
    before = snapshot(tmp_path)
    with pytest.raises(SetupError, match=rf"~/{re.escape(config)}: holds comments") as caught:
        run(host, tmp_path)
    assert "nothing was changed" in str(caught.value)
    assert snapshot(tmp_path) == before  # nor was the file setup owns written


@pytest.mark.parametrize(BOTH_NAMES, BOTH)
def test_an_owned_file_edited_by_hand_is_never_replaced_nor_deleted(
    tmp_path: Path, host: str, config: str, state: Any, owned: str, edit: tuple[str, str]
) -> None:
    write(tmp_path, config, state)
    run(host, tmp_path)
    path = tmp_path / owned
    edited = path.read_text().replace(*edit)
    assert edited != path.read_text()
    path.write_text(edited)
    before = snapshot(tmp_path)

    problem = rf"{re.escape(path.name)}: was edited since hikmah setup wrote it"
    with pytest.raises(SetupError, match=problem):
        run(host, tmp_path, hikmah=OLD_HIKMAH, agent="/other/bin/hikmah-agent")
    assert snapshot(tmp_path) == before  # the JSON file was not written either

    lines = run(host, tmp_path, remove=True)
    assert path.read_text() == edited
    assert read_json(tmp_path, config) == state
    assert lines[1] == (
        f"nothing to remove: ~/{owned} (it was edited since hikmah setup wrote it; left alone)"
    )


def test_slashes_in_a_string_are_no_comment(tmp_path: Path) -> None:
    write(tmp_path, SETTINGS, '{"url": "http://x/*", }')
    with pytest.raises(SetupError, match="invalid JSON at line 1"):
        run("claude", tmp_path)


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_opencode_plugin_is_valid_javascript(tmp_path: Path) -> None:
    run("opencode", tmp_path, hikmah='/tmp/it\'s "here"/hikmah')
    # Node 20 passes a file.js with import/export unchecked: read it as a module.
    checked = subprocess.run(
        [NODE, "--input-type=module", "--check"],
        input=(tmp_path / OPENCODE_PLUGIN).read_bytes(),
        capture_output=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    broken = (tmp_path / OPENCODE_PLUGIN).read_text().replace("const HOOKS", "const")
    failed = subprocess.run(
        [NODE, "--input-type=module", "--check"],
        input=broken.encode(),
        capture_output=True,
        timeout=60,
    )
    assert failed.returncode != 0


# Drives the plugin as OpenCode does: a person's message, a second one, a shell command.
PLUGIN_DRIVER = """
const { HikmahMemory } = await import(process.argv[1])
const hooks = await HikmahMemory({ directory: "/home/ana/app" })
const message = (n, text) => ({
  message: {},
  parts: [{ id: `prt_${n}`, messageID: `msg_${n}`, sessionID: "ses_1", type: "text", text }],
})
const first = message(1, "How do we deploy staging?")
await hooks["chat.message"]({ sessionID: "ses_1" }, first)
const second = message(2, "and production?")
await hooks["chat.message"]({ sessionID: "ses_1" }, second)
const shell = { env: {} }
await hooks["shell.env"]({ cwd: "/", sessionID: "ses_1" }, shell)
console.log(JSON.stringify({ first: first.parts, second: second.parts, env: shell.env }))
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_opencode_plugin_adds_what_the_hooks_print(tmp_path: Path) -> None:
    """A stand-in ``hikmah`` (in a folder with a space and a quote) that records what it
    is given and prints a hook's answer: the plugin runs it through the shell, sends the
    event on stdin and adds the context as synthetic parts."""
    folder = tmp_path / "it's here"
    folder.mkdir()
    hikmah = folder / "hikmah"
    hikmah.write_text(
        "#!/bin/sh\n"
        'cat > "$(dirname "$0")/$2.json"\n'
        'printf \'{"hookSpecificOutput": {"additionalContext": "memory for %s"}}\' "$2"\n'
    )
    hikmah.chmod(0o755)
    run("opencode", tmp_path, hikmah=str(hikmah))
    module = tmp_path / "plugin.mjs"  # what Node reads as a module without a package.json
    module.write_bytes((tmp_path / OPENCODE_PLUGIN).read_bytes())

    done = subprocess.run(
        [NODE, "--input-type=module", "-e", PLUGIN_DRIVER, str(module)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    added = [(p["text"], p.get("synthetic")) for p in result["first"][1:]]
    assert added == [("memory for session-start", True), ("memory for prompt", True)]
    assert [p["id"] for p in result["first"]] == ["prt_1", "prt_1hikmah0", "prt_1hikmah1"]
    # The session-start context comes once a session.
    assert [p["text"] for p in result["second"][1:]] == ["memory for prompt"]
    assert result["env"] == {"OPENCODE_SESSION_ID": "ses_1"}
    prompt = json.loads((folder / "prompt.json").read_text())
    assert prompt == {
        "session_id": "ses_1",
        "cwd": "/home/ana/app",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "and production?",
    }
    start = json.loads((folder / "session-start.json").read_text())
    assert start["hook_event_name"] == "SessionStart" and start["source"] == "startup"


@pytest.mark.parametrize(
    ("host", "said"),
    [("gemini", "TRUST_FOLDER"), ("opencode", "installs @opencode-ai/plugin")],
)
def test_the_cli_sets_up_and_removes_gemini_and_opencode(
    tmp_path: Path, host: str, said: str
) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    for name in ("GEMINI_CLI_HOME", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "OPENCODE_CONFIG_DIR"):
        env.pop(name, None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / ".config")
    cli = [sys.executable, "-m", "hikmah_cli", "setup", host]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert said in done.stdout and "Restart " in done.stdout
    assert len(snapshot(tmp_path)) == 2
    removed = subprocess.run([*cli, "--remove"], env=env, capture_output=True, text=True)
    assert removed.returncode == 0, removed.stderr
    assert snapshot(tmp_path) == {}
