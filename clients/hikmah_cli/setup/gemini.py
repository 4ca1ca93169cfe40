"""``hikmah setup gemini``: Gemini CLI's user settings and a policy rule.

As Gemini CLI 0.61.0 reads them (its docs, shipped in its npm package under
``bundle/docs``, and its code), all in ``${GEMINI_CLI_HOME:-$HOME}/.gemini``
(``GEMINI_CLI_HOME`` is the folder that holds ``.gemini``):

- ``settings.json``, JSON in which Gemini allows comments: ``mcpServers.<name>`` with
  ``command`` and ``args`` (docs/tools/mcp-server.md), and ``hooks.<event>``, the
  matcher groups of Claude Code's shape, ``timeout`` in milliseconds
  (docs/hooks/reference.md). ``BeforeAgent`` is its event for a prompt.
- ``policies/*.toml``, the person's policy rules (docs/reference/policy-engine.md):
  setup's own file lets the read-only tools run without asking.

Gemini starts neither stdio MCP servers nor any hook in a folder the person has not
trusted; setup cannot trust folders for them, so :func:`next_steps` says how.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .entries import Hooks, edit_hooks, edit_server
from .files import JSONObject, Step, as_shown, plan_json
from .owned import owned_text, plan_owned, template

HOOKS = Hooks((("SessionStart", "session-start"), ("BeforeAgent", "prompt")), timeout=10_000)
_POLICY_NOTE = (
    "# Written by `hikmah setup gemini`: running it again replaces this file, and\n"
    "# `hikmah setup gemini --remove` deletes it. Rules of your own go in another file.\n"
)


def directory(home: Path, environ: Mapping[str, str]) -> Path:
    return Path(environ.get("GEMINI_CLI_HOME") or home).expanduser() / ".gemini"


def plan(
    home: Path, environ: Mapping[str, str], *, hikmah: str, agent: str, remove: bool, mcp: bool
) -> list[Step]:
    base = directory(home, environ)
    settings = base / "settings.json"
    shown_settings = as_shown(settings, home)

    def change(data: JSONObject) -> tuple[str, str]:
        what = [edit_hooks(data, HOOKS, hikmah, remove, shown_settings)]
        note = ""
        if mcp or remove:
            entry = {"command": agent, "args": []}
            server, note = edit_server(data, "mcpServers", entry, remove, shown_settings)
            what.append(server)
        return " and ".join(filter(None, what)), note

    steps: list[Step] = [plan_json(settings, shown_settings, remove, change)]
    if mcp or remove:
        policy = base / "policies" / "hikmah.toml"
        steps.append(
            plan_owned(
                policy,
                as_shown(policy, home),
                owned_text("#", _POLICY_NOTE + template("gemini-policy.toml")),
                remove,
                advice="move it away (rules of your own go in a file of another name there)",
            )
        )
    return steps


def next_steps(home: Path, environ: Mapping[str, str]) -> list[str]:
    """What the person does once setup has written the files."""
    trusted = environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    folders = (
        Path(trusted).expanduser() if trusted else directory(home, environ) / "trustedFolders.json"
    )
    return [
        "Restart Gemini CLI to load them.",
        "Gemini CLI starts neither MCP servers nor hooks in a folder it does not trust:"
        " trust each project folder you use it in. Start `gemini` there and choose"
        ' "Trust folder" (or "Trust parent folder") in its dialog, or run /permissions in it;'
        f' or add "<the folder\'s path>": "TRUST_FOLDER" to {as_shown(folders, home)}.',
    ]
