"""``hikmah setup codex``: Codex's user configuration.

- MCP servers: ``[mcp_servers.<name>]`` with ``command``, ``args``, ``env_vars``
  (variables passed through from Codex's environment) and ``startup_timeout_sec`` in
  ``~/.codex/config.toml`` (https://developers.openai.com/codex/mcp). Setup edits the
  TOML text, not a parsed copy, so that comments and layout survive: its table lives
  between marker comments at the end of the file.
- Hooks: ``~/.codex/hooks.json``, the same event -> matcher group -> handler shape as
  Claude Code's; on by default since hooks went GA, and Codex runs a new or changed
  hook only once the person has reviewed it in ``/hooks``
  (https://developers.openai.com/codex/hooks, "Hooks";
  https://developers.openai.com/codex/config-advanced).

Both files live in ``$CODEX_HOME`` when it is set.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import claude
from .entries import SERVER, edit_hooks, foreign_note, foreign_problem
from .files import Edit, Step, as_shown, decode, fail, plan_json, read

BEGIN = "# hikmah:begin (managed by hikmah setup; remove with hikmah setup codex --remove)"
END = "# hikmah:end"
# Codex gives its MCP servers only HOME, PATH, USER and a few more: these say where the
# person's daemon is (its socket, data, policy, and for a daemon the agent starts, the
# session bus and keyring it would use), as they do for the CLI in the person's shell.
FORWARDED = (
    "HIKMAH_SOCKET", "HIKMAH_DATA_DIR", "HIKMAH_POLICY",
    "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND",
)  # fmt: skip
# How long Codex waits for the server's handshake before giving up on it (its default
# is 10 s); hikmah-agent answers in well under a second (bench/agent.py).
STARTUP_TIMEOUT_S = 20


def plan(
    home: Path, environ: Mapping[str, str], *, hikmah: str, agent: str, remove: bool, mcp: bool
) -> list[Step]:
    directory = Path(environ.get("CODEX_HOME") or home / ".codex").expanduser()
    hooks_file, config = directory / "hooks.json", directory / "config.toml"
    shown_hooks = as_shown(hooks_file, home)
    edit = plan_json(
        hooks_file,
        shown_hooks,
        remove,
        lambda data: (edit_hooks(data, claude.HOOKS, hikmah, remove, shown_hooks), ""),
    )
    if edit.new is not None and not remove:
        # Codex runs a new or changed hook only once the person has trusted it.
        note = "Codex skips them until you review them with /hooks in Codex"
        edit = dataclasses.replace(edit, note=note)
    steps: list[Step] = [edit]
    if mcp or remove:
        steps.append(_plan_mcp(config, as_shown(config, home), agent, remove))
    return steps


def _plan_mcp(path: Path, shown: str, agent: str, remove: bool) -> Edit:
    what = f"MCP server {SERVER}"
    old = read(path)
    if remove and old is None:
        return Edit(path, shown, None, None, what, remove=True)
    text = "" if old is None else decode(old, shown)
    _load_toml(text, shown, "")
    newline = "\r\n" if "\r\n" in text else "\n"
    # Split on "\n" only: str.splitlines would also split inside comments (on \x0c, U+2028).
    lines = [line for line in re.split(r"(?<=\n)", text) if line]
    block = _find_block(lines, shown)
    if block is None:
        at, outside = len(lines), lines
    else:
        start, end = block
        # Codex writes tables of its own (the /hooks review's trust) at the end of the
        # file, which puts them inside our block: they are kept, after it.
        at = start
        outside = lines[:start] + _foreign_tables(lines[start:end]) + lines[end:]
    servers = _load_toml("".join(outside), shown, "").get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise fail(shown, "mcp_servers is not a table")
    if SERVER in servers:
        if remove:
            note = foreign_note(f"[mcp_servers.{SERVER}]")
            return Edit(path, shown, old, None, what, note, remove=True)
        raise fail(shown, foreign_problem(f"[mcp_servers.{SERVER}]"))
    if remove:
        new_lines = outside
    else:
        if at == len(outside) and outside and not outside[-1].endswith("\n"):
            outside = [*outside[:-1], outside[-1] + newline]
        # A blank line before the block reads better; it belongs to the block, so that
        # remove gives back the original text exactly.
        separator = [newline] if at else []
        table = [f"[mcp_servers.{SERVER}]"]
        table += [f"{key} = {_toml_value(value)}" for key, value in _server(agent).items()]
        ours = [f"{line}{newline}" for line in (BEGIN, *table, END)]
        new_lines = outside[:at] + separator + ours + outside[at:]
    new_text = "".join(new_lines)
    parsed = _load_toml(new_text, shown, "after the edit, ")
    if not remove and parsed["mcp_servers"][SERVER] != _server(agent):
        raise fail(shown, f"[mcp_servers.{SERVER}] would not read back as written")
    new = new_text.encode()
    # Only our block's lines go (tables Codex wrote into it stay, as they were).
    return Edit(path, shown, old, new if new != old else None, what, exact=remove, remove=remove)


def _find_block(lines: list[str], shown: str) -> tuple[int, int] | None:
    """Where our block is, as a slice of ``lines`` that includes the blank line we put
    before it; None if there is none."""
    begins = [i for i, line in enumerate(lines) if line.startswith("# hikmah:begin")]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        numbers = ", ".join(str(i + 1) for i in sorted(begins + ends))
        raise fail(shown, f"the hikmah:begin/hikmah:end marker lines ({numbers}) do not pair up")
    start = begins[0]
    if start and lines[start - 1] in ("\n", "\r\n"):
        start -= 1
    return start, ends[0] + 1


_HEADER = re.compile(r"\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(#.*)?\r?\n?")


def _foreign_tables(block: list[str]) -> list[str]:
    """The lines of ``block`` that are tables other than ``[mcp_servers.hikmah]`` and its
    subtables, each with the blank line before it."""
    foreign: list[str] = []
    current: list[str] = []  # the section being read: ours (dropped) or foreign (kept)
    for line in block:
        header = _HEADER.fullmatch(line)
        if header is not None:
            name = re.sub(r"\s*\.\s*", ".", header["name"]).replace('"', "").replace("'", "")
            ours = name == f"mcp_servers.{SERVER}" or name.startswith(f"mcp_servers.{SERVER}.")
            blank = current[-1:] if current and not current[-1].strip() else []
            del current[len(current) - len(blank) :]
            current = [] if ours else foreign
            current += blank
        if line.startswith("# hikmah:begin") or line.rstrip("\r\n") == END:
            current = []
            continue
        current.append(line)
    return foreign


def _server(agent: str) -> dict[str, Any]:
    """Our ``[mcp_servers.hikmah]`` table, as it reads back."""
    return {
        "command": agent,
        "args": [],
        "env_vars": list(FORWARDED),
        "startup_timeout_sec": STARTUP_TIMEOUT_S,
    }


def _toml_value(value: str | int | list[str]) -> str:
    if isinstance(value, list):
        return f"[{', '.join(map(_toml_string, value))}]"
    return _toml_string(value) if isinstance(value, str) else str(value)


def _toml_string(value: str) -> str:
    """A TOML basic string: escape what the spec requires escaped."""
    escaped = "".join(
        "\\" + char
        if char in '"\\'
        else f"\\u{ord(char):04x}"
        if char < " " or char == "\x7f"
        else char
        for char in value
    )
    return f'"{escaped}"'


def _load_toml(text: str, shown: str, when: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise fail(shown, f"{when}invalid TOML: {error}") from None


def next_steps(home: Path, environ: Mapping[str, str]) -> list[str]:
    """What the person does once setup has written the files."""
    return ["Restart Codex to load them."]
