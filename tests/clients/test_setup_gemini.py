"""``hikmah setup gemini``: our hooks and MCP server in settings.json and a policy file of our
own, given back on removal; GEMINI_CLI_HOME and the trust a folder needs."""

from __future__ import annotations

import copy
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import SetupError, next_steps
from tests.clients.setup_cases import (
    AGENT,
    GEMINI_POLICY,
    GEMINI_SETTINGS,
    GEMINI_STATE,
    HIKMAH,
    OLD_HIKMAH,
    mode,
    read_json,
    run,
    snapshot,
    write,
)

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
