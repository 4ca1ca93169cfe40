"""``hikmah setup claude``: our hooks and MCP server go in and come out, everything else in
the person's files stays as it was (bytes, backups, modes, symlinks), and what is not ours
is refused untouched."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import SetupError
from tests.clients.setup_cases import (
    AGENT,
    CLAUDE_JSON,
    CODEX_CONFIG,
    CODEX_HOOKS,
    HIKMAH,
    OLD_HIKMAH,
    SETTINGS,
    mode,
    ours,
    read_json,
    run,
    snapshot,
    write,
)

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


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    write(tmp_path, SETTINGS, CLAUDE_SETTINGS)
    write(tmp_path, CLAUDE_JSON, CLAUDE_STATE)
    return tmp_path


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
