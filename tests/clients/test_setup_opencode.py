"""``hikmah setup opencode``: our MCP server in opencode.json and a plugin of our own, which
Node reads and which adds what the hooks print; OpenCode's own files are left alone."""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hikmah_cli.setup import SetupError
from tests.clients.setup_cases import (
    AGENT,
    HIKMAH,
    OLD_HIKMAH,
    OPENCODE_JSON,
    OPENCODE_PLUGIN,
    OPENCODE_STATE,
    mode,
    read_json,
    run,
    snapshot,
    write,
)

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
