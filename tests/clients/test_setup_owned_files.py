"""``hikmah setup`` for Gemini CLI and OpenCode alike: a second run changes nothing, a file
setup owns whole is never replaced nor deleted once a person edited it, a configuration with
comments is refused (a string's slashes are no comment), and the CLI sets both up and removes
them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import SetupError
from tests.clients.setup_cases import (
    GEMINI_POLICY,
    GEMINI_SETTINGS,
    GEMINI_STATE,
    OLD_HIKMAH,
    OPENCODE_JSON,
    OPENCODE_PLUGIN,
    OPENCODE_STATE,
    SETTINGS,
    read_json,
    run,
    snapshot,
    write,
)

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
