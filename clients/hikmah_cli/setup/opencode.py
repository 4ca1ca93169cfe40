"""``hikmah setup opencode``: OpenCode's global config and a plugin.

As OpenCode 1.18.33 reads them (its docs, anomalyco/opencode
``packages/web/src/content/docs/{config,mcp-servers,plugins}.mdx``, and its code), in
``$OPENCODE_CONFIG_DIR`` when it is set (OpenCode loads it besides its global folder:
a person who sets it keeps their config there), else
``${XDG_CONFIG_HOME:-~/.config}/opencode``:

- ``opencode.json``, JSON in which OpenCode allows comments:
  ``mcp.<name> = {"type": "local", "command": [...], "enabled": true}``. OpenCode
  merges ``config.json``, ``opencode.json`` and ``opencode.jsonc`` of the folder;
  setup edits ``opencode.json`` alone.
- ``plugins/*.js``: every file there is loaded at start. OpenCode has no command
  hooks; setup's plugin runs ``hikmah hook`` on each prompt (``chat.message``) and
  gives its shell commands the session id (``shell.env``).

OpenCode installs ``@opencode-ai/plugin`` into a folder that has plugins
(``package.json``, ``package-lock.json``, ``node_modules/``, ``.gitignore``): those
files are OpenCode's, and ``--remove`` leaves them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from .entries import edit_server, hook_command
from .files import Step, as_shown, plan_json
from .owned import owned_text, plan_owned, template

_PLUGIN_NOTE = (
    "// Written by `hikmah setup opencode`: running it again replaces this file, and\n"
    "// `hikmah setup opencode --remove` deletes it.\n"
)


def directory(home: Path, environ: Mapping[str, str]) -> Path:
    moved = environ.get("OPENCODE_CONFIG_DIR")
    if moved:
        return Path(moved).expanduser()
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config").expanduser() / "opencode"


def plan(
    home: Path, environ: Mapping[str, str], *, hikmah: str, agent: str, remove: bool, mcp: bool
) -> list[Step]:
    base = directory(home, environ)
    plugin = base / "plugins" / "hikmah.js"
    steps: list[Step] = []
    if mcp or remove:
        config = base / "opencode.json"
        shown_config = as_shown(config, home)
        entry = {"type": "local", "command": [agent], "enabled": True}
        steps.append(
            plan_json(
                config,
                shown_config,
                remove,
                lambda data: edit_server(data, "mcp", entry, remove, shown_config),
            )
        )
    steps.append(
        plan_owned(
            plugin,
            as_shown(plugin, home),
            plugin_text(hikmah),
            remove,
            advice="move it away (a plugin of your own goes in a file of another name there)",
        )
    )
    return steps


def plugin_text(hikmah: str) -> bytes:
    """The plugin as setup writes it: the managed line and the shipped plugin, running
    ``hikmah`` through ``/bin/sh -c`` with the commands of Claude Code's hooks."""
    shipped = template("opencode-plugin.js")
    for sub, placeholder in (("session-start", "@SESSION_START@"), ("prompt", "@PROMPT@")):
        # A JSON string is a JavaScript string literal (ASCII-escaped, so no line breaks).
        shipped = shipped.replace(f'"{placeholder}"', json.dumps(hook_command(hikmah, sub)))
    return owned_text("//", _PLUGIN_NOTE + shipped)


def next_steps(home: Path, environ: Mapping[str, str]) -> list[str]:
    """What the person does once setup has written the files."""
    return [
        "Restart OpenCode to load them. Its next start installs @opencode-ai/plugin into"
        f" {as_shown(directory(home, environ), home)} (OpenCode does so for every folder"
        " with plugins; it needs the npm registry once).",
    ]
