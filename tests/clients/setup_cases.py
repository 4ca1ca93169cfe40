"""What the tests of ``hikmah setup`` share: the paths setup is given, the files it edits,
the person's own Gemini CLI and OpenCode configurations, and setup run on a temp home."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path
from typing import Any

from hikmah_cli.setup import setup

# A space in the path, so that quoting in hook commands matters.
HIKMAH = "/opt/hikmah venv/bin/hikmah"
AGENT = "/opt/hikmah venv/bin/hikmah-agent"
OLD_HIKMAH = "/home/someone/.local/bin/hikmah"

SETTINGS = ".claude/settings.json"
CLAUDE_JSON = ".claude.json"
CODEX_HOOKS = ".codex/hooks.json"
CODEX_CONFIG = ".codex/config.toml"


def run(
    host: Any, home: Path, *, hikmah: str = HIKMAH, agent: str = AGENT, **options: Any
) -> list[str]:
    options.setdefault("environ", {})  # neither CLAUDE_CONFIG_DIR nor CODEX_HOME
    return setup(host, home=home, hikmah=hikmah, hikmah_agent=agent, **options)


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


# --- OpenCode ---

OPENCODE_JSON = ".config/opencode/opencode.json"
OPENCODE_PLUGIN = ".config/opencode/plugins/hikmah.js"
OPENCODE_STATE: dict[str, Any] = {
    "$schema": "https://opencode.ai/config.json",
    "model": "fake/fake-model",
    "mcp": {"docs": {"type": "remote", "url": "https://docs.example/mcp"}},
    "permission": {"hikmah_remember": "ask"},
}
