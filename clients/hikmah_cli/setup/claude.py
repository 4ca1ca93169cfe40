"""``hikmah setup claude``: Claude Code's user configuration.

- Hooks, ``~/.claude/settings.json``: event -> list of matcher groups
  ``{"matcher"?, "hooks": [{"type": "command", "command", "timeout"?}]}``, the
  timeout in seconds (https://code.claude.com/docs/en/hooks, "Hooks reference").
- MCP servers, user scope: top-level ``"mcpServers"`` in ``~/.claude.json``, what
  ``claude mcp add --scope user`` writes (https://code.claude.com/docs/en/mcp).

With ``CLAUDE_CONFIG_DIR`` set, both files are in that directory
(``$CLAUDE_CONFIG_DIR/settings.json``, ``$CLAUDE_CONFIG_DIR/.claude.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .entries import Hooks, edit_hooks, edit_server
from .files import Step, as_shown, plan_json

HOOKS = Hooks((("SessionStart", "session-start"), ("UserPromptSubmit", "prompt")), timeout=10)


def plan(
    home: Path, environ: Mapping[str, str], *, hikmah: str, agent: str, remove: bool, mcp: bool
) -> list[Step]:
    moved = environ.get("CLAUDE_CONFIG_DIR")
    if moved:
        directory = Path(moved).expanduser()
        settings, state = directory / "settings.json", directory / ".claude.json"
    else:
        settings, state = home / ".claude" / "settings.json", home / ".claude.json"
    shown_settings, shown_state = as_shown(settings, home), as_shown(state, home)
    steps: list[Step] = [
        plan_json(
            settings,
            shown_settings,
            remove,
            lambda data: (edit_hooks(data, HOOKS, hikmah, remove, shown_settings), ""),
        )
    ]
    if mcp or remove:
        entry = {"type": "stdio", "command": agent, "args": [], "env": {}}
        steps.append(
            plan_json(
                state,
                shown_state,
                remove,
                lambda data: edit_server(data, "mcpServers", entry, remove, shown_state),
            )
        )
    return steps


def next_steps(home: Path, environ: Mapping[str, str]) -> list[str]:
    """What the person does once setup has written the files."""
    return ["Restart Claude Code to load them."]
