"""Hikmah's entries in a host's parsed JSON config: the hooks, in the matcher-group shape
Claude Code, Codex and Gemini CLI share, and the ``hikmah`` MCP server. Each is put in
where it is missing, replaced where an older one of ours is, taken out on removal;
what a person wrote is never changed."""

from __future__ import annotations

import copy
import os
import shlex
from dataclasses import dataclass
from typing import Any

from .files import MISSING, JSONObject, expect, fail

SERVER = "hikmah"
# Executable names recognised as ours besides the exact paths passed in, so that
# rerunning setup from another install replaces the old entries instead of adding more.
_HIKMAH_NAMES = frozenset({"hikmah"})
_AGENT_NAMES = frozenset({"hikmah-agent"})


@dataclass(frozen=True)
class Hooks:
    """A host's hooks: (event, ``hikmah hook`` subcommand) pairs, and the timeout of each
    handler in the host's unit (a hook that hangs holds up the session or the prompt)."""

    events: tuple[tuple[str, str], ...]
    timeout: int

    @property
    def named(self) -> str:
        return f"hooks {', '.join(event for event, _ in self.events)}"


def edit_hooks(settings: JSONObject, hooks: Hooks, hikmah: str, remove: bool, shown: str) -> str:
    """Leave exactly one handler of ours per event in ``settings["hooks"]`` (none when
    removing); what changed: the hooks put in, how many were taken out, or ""."""
    before = copy.deepcopy(settings.get("hooks", MISSING))
    container = settings.get("hooks", {})
    expect(container, dict, "$.hooks", shown)
    removed = 0
    for event, sub in hooks.events:
        groups = container.get(event, [])
        expect(groups, list, f"$.hooks.{event}", shown)
        for i, group in enumerate(groups):
            expect(group, dict, f"$.hooks.{event}[{i}]", shown)
            expect(group.get("hooks", MISSING), list, f"$.hooks.{event}[{i}].hooks", shown)
        wanted = None
        if not remove:
            command = hook_command(hikmah, sub)
            wanted = {"type": "command", "command": command, "timeout": hooks.timeout}
        taken = _place(groups, wanted, hikmah, sub)
        removed += taken
        # Drop a container only when it is empty because we took ours out of it.
        if groups:
            container[event] = groups
        elif taken:
            del container[event]
    if container:
        settings["hooks"] = container
    elif removed:
        del settings["hooks"]
    if remove:
        return f"{removed} hook{'s' * (removed != 1)}" if removed else ""
    return hooks.named if settings.get("hooks", MISSING) != before else ""


def hook_command(hikmah: str, sub: str) -> str:
    """The shell command of a hook: ``<hikmah> hook <sub>``, the path quoted."""
    return f"{shlex.quote(hikmah)} hook {sub}"


def _place(groups: list[Any], wanted: JSONObject | None, hikmah: str, sub: str) -> int:
    """Replace our first handler with ``wanted`` in place (so its position is kept),
    take out any others, append a new group if there was none; return how many of ours
    were taken out."""
    placed = wanted is None
    removed = 0
    kept_groups: list[Any] = []
    for group in groups:
        handlers = group["hooks"]
        kept: list[Any] = []
        for handler in handlers:
            if not _is_our_hook(handler, hikmah, sub):
                kept.append(handler)
            elif not placed:
                kept.append(wanted)
                placed = True
            else:
                removed += 1
        group["hooks"] = kept
        if kept or not handlers:
            kept_groups.append(group)
    groups[:] = kept_groups
    if not placed:
        groups.append({"hooks": [wanted]})
    return removed


def _is_our_hook(handler: object, hikmah: str, sub: str) -> bool:
    """``<hikmah> hook <sub>`` and nothing more: a person's own command that merely
    mentions hikmah, or passes extra arguments, is not ours."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str) or not command.endswith(f" hook {sub}"):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    return (
        len(argv) == 3
        and argv[1:] == ["hook", sub]
        and (argv[0] == hikmah or os.path.basename(argv[0]) in _HIKMAH_NAMES)
    )


def edit_server(
    data: JSONObject, key: str, entry: JSONObject, remove: bool, shown: str
) -> tuple[str, str]:
    """Make ``entry`` the ``hikmah`` server of ``data[key]``, or take ours out; what
    changed ("" for nothing) and a note.

    Raises:
        SetupError: the ``hikmah`` server there is not ours (removing leaves it, noted).
    """
    where = f"$.{key}.{SERVER}"
    servers = data.get(key, {})
    expect(servers, dict, f"$.{key}", shown)
    current = servers.get(SERVER, MISSING)
    if current is not MISSING and not _is_our_server(current, _command(entry)):
        if remove:
            return "", foreign_note(where)
        raise fail(shown, foreign_problem(where))
    if remove:
        if current is MISSING:
            return "", ""
        del servers[SERVER]
        if not servers:
            del data[key]
    elif current == entry:
        return "", ""
    else:
        servers[SERVER] = entry
        data[key] = servers
    return f"MCP server {SERVER}", ""


def _command(entry: object) -> str | None:
    """The executable of a server entry: ``command``, or its first word when it is a
    list (OpenCode's shape)."""
    command = entry.get("command") if isinstance(entry, dict) else None
    if isinstance(command, list) and command:
        command = command[0]
    return command if isinstance(command, str) else None


def _is_our_server(entry: object, agent: str | None) -> bool:
    command = _command(entry)
    return command is not None and (command == agent or os.path.basename(command) in _AGENT_NAMES)


def foreign_problem(where: str) -> str:
    return (
        f"{where} is already there and was not written by hikmah setup; rename or remove "
        "it, or pass --no-mcp to set up the hooks only"
    )


def foreign_note(where: str) -> str:
    return f"{where} was not written by hikmah setup; left alone"
