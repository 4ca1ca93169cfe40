"""``hikmah setup claude|codex|systemd``: wire Hikmah into a coding agent's user
configuration, or into systemd's user units.

For an agent, setup adds two hooks (``hikmah hook session-start`` on SessionStart, ``hikmah hook
prompt`` on UserPromptSubmit) and the ``hikmah`` MCP server; ``remove=True`` takes out
exactly those. Nothing a person wrote is ever changed, a file whose content would stay
the same is not rewritten, and every file is planned and validated before any is
written, so a SetupError leaves all of them as they were. A changed file is first saved
as ``FILE.hikmah-backup``; a removal that moves no byte but our entries needs none, and
deletes the one setup left. Standard library only.

The formats, as documented:

- Claude Code hooks, ``~/.claude/settings.json``: event -> list of matcher groups
  ``{"matcher"?, "hooks": [{"type": "command", "command", "timeout"?}]}``
  (https://code.claude.com/docs/en/hooks, "Hooks reference").
- Claude Code MCP servers, user scope: top-level ``"mcpServers"`` in ``~/.claude.json``,
  what ``claude mcp add --scope user`` writes (https://code.claude.com/docs/en/mcp).
  With ``CLAUDE_CONFIG_DIR`` set, both files are in that directory
  (``$CLAUDE_CONFIG_DIR/settings.json``, ``$CLAUDE_CONFIG_DIR/.claude.json``).
- Codex MCP servers: ``[mcp_servers.<name>]`` with ``command``, ``args``, ``env_vars``
  (variables passed through from Codex's environment) and ``startup_timeout_sec`` in
  ``~/.codex/config.toml`` (https://developers.openai.com/codex/mcp).
- Codex hooks: ``~/.codex/hooks.json``, the same event -> matcher group -> handler shape
  as Claude Code's; on by default since hooks went GA, and Codex runs a new or changed
  hook only once the person has reviewed it in ``/hooks``
  (https://developers.openai.com/codex/hooks, "Hooks";
  https://developers.openai.com/codex/config-advanced). Both files live in
  ``$CODEX_HOME`` when it is set.

docs/agents.md has what each host was seen to do with them, and the versions seen.

For systemd, setup writes ``hikmahd.socket`` and ``hikmahd.service`` (shipped in
``systemd/`` beside this module) into the user unit directory, the service's
``ExecStart=`` naming the ``hikmahd`` of this install; ``remove=True`` deletes exactly
the units it wrote. Each starts with a line holding the checksum of the rest
(:func:`hikmah.managed_block.checksum`), so a unit copied by hand or edited since is
never replaced nor deleted: a person's own settings belong in a drop-in
(``systemctl --user edit hikmahd.service``), which setup never touches. It runs no
``systemctl``; the CLI prints what to run.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from hikmah.durable import write_atomic
from hikmah.managed_block import checksum

BACKUP_SUFFIX = ".hikmah-backup"
SERVER = "hikmah"
BEGIN = "# hikmah:begin (managed by hikmah setup; remove with hikmah setup codex --remove)"
END = "# hikmah:end"
HOOK_TIMEOUT_S = 10  # a hook that hangs holds up the agent's session or prompt
# Codex gives its MCP servers only HOME, PATH, USER and a few more: these say where the
# person's daemon is (its socket, data, policy, and for a daemon the agent starts, the
# session bus and keyring it would use), as they do for the CLI in the person's shell.
CODEX_FORWARDED = (
    "HIKMAH_SOCKET", "HIKMAH_DATA_DIR", "HIKMAH_POLICY",
    "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND",
)  # fmt: skip
# How long Codex waits for the server's handshake before giving up on it (its default
# is 10 s); hikmah-agent answers in well under a second (bench/agent.py).
CODEX_STARTUP_TIMEOUT_S = 20
# (event, ``hikmah hook`` subcommand)
HOOKS = (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt"))
# Executable names recognised as ours besides the exact paths passed in, so that
# rerunning setup from another install replaces the old entries instead of adding more.
_HIKMAH_NAMES = frozenset({"hikmah"})
_AGENT_NAMES = frozenset({"hikmah-agent"})
_MISSING = object()

JSONObject = dict[str, Any]


class SetupError(Exception):
    """A configuration file cannot be edited safely; the message names the file and the
    problem. No file was changed."""


@dataclass(frozen=True)
class _Edit:
    path: Path
    shown: str  # the path as the person knows it, e.g. ~/.claude.json
    old: bytes | None  # None: the file does not exist
    new: bytes | None  # None: leave the file as it is
    what: str  # "hooks SessionStart, UserPromptSubmit", "2 hooks", "MCP server hikmah"
    note: str = ""
    # A removal that changes nothing in the file but our entries: no backup is needed.
    exact: bool = False


def setup(
    host: Literal["claude", "codex"],
    *,
    home: Path,
    remove: bool = False,
    mcp: bool = True,
    hikmah: str,
    hikmah_agent: str,
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """Put Hikmah's hooks and MCP server into (or take them out of) a host's user config.

    Args:
        host: the coding agent.
        home: the home directory whose configuration to edit (unless ``environ`` moves
            it: ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``).
        remove: take out our entries instead; applies to hooks and MCP server alike.
        mcp: with ``remove=False``, also write the MCP server entry; ``False`` leaves
            any existing entry alone.
        hikmah: absolute path of the ``hikmah`` executable, used in hook commands.
        hikmah_agent: absolute path of the MCP server executable.
        environ: where the hosts' own variables are read.

    Returns:
        One line per file: what was changed (and where its backup is), or that it
        already was as wanted.

    Raises:
        SetupError: a file is not valid JSON/TOML, has a shape the docs do not allow,
            already has a ``hikmah`` MCP server that setup did not write, or changed
            while being edited. Nothing was written.
    """
    hooks_file, mcp_file = config_files(host, home, environ)
    codex = host == "codex"
    edits = [_plan_hooks(hooks_file, _shown(hooks_file, home), hikmah, remove, codex=codex)]
    if mcp or remove:
        plan_mcp = _plan_codex_mcp if codex else _plan_claude_mcp
        edits.append(plan_mcp(mcp_file, _shown(mcp_file, home), hikmah_agent, remove))
    for edit in edits:
        # The agent may rewrite its config (Claude Code rewrites ~/.claude.json often);
        # checking all files before writing any keeps "nothing changed" true on error.
        if edit.new is not None and _read(edit.path) != edit.old:
            raise _fail(edit.shown, "changed while hikmah setup was editing it; run it again")
    return [_apply(edit, remove) for edit in edits]


def config_files(host: str, home: Path, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """(hooks file, MCP file) of a host, where the host itself reads them."""
    if host == "claude":
        moved = environ.get("CLAUDE_CONFIG_DIR")
        if moved:
            directory = Path(moved).expanduser()
            return directory / "settings.json", directory / ".claude.json"
        return home / ".claude" / "settings.json", home / ".claude.json"
    if host == "codex":
        directory = Path(environ.get("CODEX_HOME") or home / ".codex").expanduser()
        return directory / "hooks.json", directory / "config.toml"
    raise ValueError(f"unknown host {host!r}")


# --- hooks (Claude Code settings.json, Codex hooks.json) ---


def _plan_hooks(path: Path, shown: str, hikmah: str, remove: bool, *, codex: bool) -> _Edit:
    old = _read(path)
    if remove and old is None:
        return _Edit(path, shown, None, None, "")
    data = _load_json(old, shown)
    new = copy.deepcopy(data)
    removed = _edit_hooks(new, hikmah, remove, shown)
    if new == data:
        return _Edit(path, shown, old, None, "")
    if remove:
        what = f"{removed} hook{'s' * (removed != 1)}"
        return _removal(path, shown, old, new, what)
    # Codex runs a new or changed hook only once the person has trusted it.
    note = "Codex skips them until you review them with /hooks in Codex" if codex else ""
    return _Edit(path, shown, old, _dump_json(new), "hooks SessionStart, UserPromptSubmit", note)


def _edit_hooks(settings: JSONObject, hikmah: str, remove: bool, shown: str) -> int:
    """Leave exactly one handler of ours per event in ``settings["hooks"]`` (none when
    removing); return how many of ours were taken out."""
    hooks = settings.get("hooks", {})
    _expect(hooks, dict, "$.hooks", shown)
    removed = 0
    for event, sub in HOOKS:
        groups = hooks.get(event, [])
        _expect(groups, list, f"$.hooks.{event}", shown)
        for i, group in enumerate(groups):
            _expect(group, dict, f"$.hooks.{event}[{i}]", shown)
            _expect(group.get("hooks", _MISSING), list, f"$.hooks.{event}[{i}].hooks", shown)
        wanted = None
        if not remove:
            command = f"{shlex.quote(hikmah)} hook {sub}"
            wanted = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
        taken = _place(groups, wanted, hikmah, sub)
        removed += taken
        # Drop a container only when it is empty because we took ours out of it.
        if groups:
            hooks[event] = groups
        elif taken:
            del hooks[event]
    if hooks:
        settings["hooks"] = hooks
    elif removed:
        del settings["hooks"]
    return removed


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


# --- MCP server ---


def _plan_claude_mcp(path: Path, shown: str, agent: str, remove: bool) -> _Edit:
    what = f"MCP server {SERVER}"
    old = _read(path)
    if remove and old is None:
        return _Edit(path, shown, None, None, what)
    data = _load_json(old, shown)
    new = copy.deepcopy(data)
    servers = new.get("mcpServers", {})
    _expect(servers, dict, "$.mcpServers", shown)
    current = servers.get(SERVER, _MISSING)
    if current is not _MISSING and not _is_our_server(current, agent):
        if remove:
            return _Edit(path, shown, old, None, what, _foreign_note(f"$.mcpServers.{SERVER}"))
        raise _fail(shown, _foreign_problem(f"$.mcpServers.{SERVER}"))
    if remove:
        if current is not _MISSING:
            del servers[SERVER]
            if not servers:
                del new["mcpServers"]
    else:
        servers[SERVER] = {"type": "stdio", "command": agent, "args": [], "env": {}}
        new["mcpServers"] = servers
    if new == data:
        return _Edit(path, shown, old, None, what)
    if remove:
        return _removal(path, shown, old, new, what)
    return _Edit(path, shown, old, _dump_json(new), what)


def _is_our_server(entry: object, agent: str) -> bool:
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    return isinstance(command, str) and (
        command == agent or os.path.basename(command) in _AGENT_NAMES
    )


def _plan_codex_mcp(path: Path, shown: str, agent: str, remove: bool) -> _Edit:
    """Edit the TOML text, not a parsed copy, so that comments and layout survive: our
    table lives between marker comments at the end of the file."""
    what = f"MCP server {SERVER}"
    old = _read(path)
    if remove and old is None:
        return _Edit(path, shown, None, None, what)
    text = "" if old is None else _decode(old, shown)
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
        raise _fail(shown, "mcp_servers is not a table")
    if SERVER in servers:
        if remove:
            note = _foreign_note(f"[mcp_servers.{SERVER}]")
            return _Edit(path, shown, old, None, what, note)
        raise _fail(shown, _foreign_problem(f"[mcp_servers.{SERVER}]"))
    if remove:
        new_lines = outside
    else:
        if at == len(outside) and outside and not outside[-1].endswith("\n"):
            outside = [*outside[:-1], outside[-1] + newline]
        # A blank line before the block reads better; it belongs to the block, so that
        # remove gives back the original text exactly.
        separator = [newline] if at else []
        table = [f"[mcp_servers.{SERVER}]"]
        table += [f"{key} = {_toml_value(value)}" for key, value in _codex_server(agent).items()]
        ours = [f"{line}{newline}" for line in (BEGIN, *table, END)]
        new_lines = outside[:at] + separator + ours + outside[at:]
    new_text = "".join(new_lines)
    parsed = _load_toml(new_text, shown, "after the edit, ")
    if not remove and parsed["mcp_servers"][SERVER] != _codex_server(agent):
        raise _fail(shown, f"[mcp_servers.{SERVER}] would not read back as written")
    new = new_text.encode()
    # Only our block's lines go (tables Codex wrote into it stay, as they were).
    return _Edit(path, shown, old, new if new != old else None, what, exact=remove)


def _find_block(lines: list[str], shown: str) -> tuple[int, int] | None:
    """Where our block is, as a slice of ``lines`` that includes the blank line we put
    before it; None if there is none."""
    begins = [i for i, line in enumerate(lines) if line.startswith("# hikmah:begin")]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        numbers = ", ".join(str(i + 1) for i in sorted(begins + ends))
        raise _fail(shown, f"the hikmah:begin/hikmah:end marker lines ({numbers}) do not pair up")
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


def _codex_server(agent: str) -> dict[str, Any]:
    """Our ``[mcp_servers.hikmah]`` table, as it reads back."""
    return {
        "command": agent,
        "args": [],
        "env_vars": list(CODEX_FORWARDED),
        "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_S,
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
        raise _fail(shown, f"{when}invalid TOML: {error}") from None


def _foreign_problem(where: str) -> str:
    return (
        f"{where} is already there and was not written by hikmah setup; rename or remove "
        "it, or pass --no-mcp to set up the hooks only"
    )


def _foreign_note(where: str) -> str:
    return f"{where} was not written by hikmah setup; left alone"


# --- systemd user units ---

UNITS = ("hikmahd.socket", "hikmahd.service")
# Where the shipped service unit names the daemon; setup writes its path there.
EXECUTABLE = "@HIKMAHD@"
_MANAGED = re.compile(r"# hikmah:managed sha256=(?P<sha>[0-9a-f]{16})")
_MANAGED_NOTE = (
    "# Written by `hikmah setup systemd`: running it again replaces this file, and\n"
    "# `hikmah setup systemd --remove` deletes it. Your own settings go in a drop-in:\n"
    "# systemctl --user edit {unit}\n"
)


@dataclass(frozen=True)
class _Unit:
    path: Path
    shown: str  # e.g. ~/.config/systemd/user/hikmahd.socket
    action: Literal["create", "update", "delete", "keep"]
    text: bytes = b""  # what create and update write
    said: str = ""  # a unit kept as it is: why
    note: str = ""


def setup_systemd(unit_dir: Path, *, home: Path, hikmahd: str, remove: bool = False) -> list[str]:
    """Write hikmahd's user units into ``unit_dir``, or take out the ones setup wrote.

    Args:
        unit_dir: systemd's user unit directory (:func:`hikmah.paths.systemd_user_dir`).
        home: to show paths under it as ``~/…``.
        hikmahd: absolute path of the ``hikmahd`` executable the service runs.
        remove: delete our units instead.

    Returns:
        One line per unit: created, updated, deleted, or as it was (and why).

    Raises:
        SetupError: a unit is there that setup did not write, or edited since (setup
            replaces neither); a unit to delete is still enabled. Nothing was changed.
    """
    units = [
        _plan_unit(unit_dir / name, _shown(unit_dir / name, home), hikmahd, remove)
        for name in UNITS
    ]
    for unit in units:
        # Its enablement links would point at nothing, and systemctl disable then
        # refuses to take them out: disabled first, deleted after.
        if unit.action == "delete" and any(unit_dir.glob(f"*.wants/{unit.path.name}")):
            raise _fail(
                unit.shown,
                "is enabled: first `systemctl --user disable --now hikmahd.socket"
                " hikmahd.service`, then run this again",
            )
    return [_apply_unit(unit, unit_dir) for unit in units]


def unit_text(name: str, hikmahd: str) -> bytes:
    """Unit ``name`` as setup writes it: the managed line (with the checksum of the rest)
    and the shipped unit, naming ``hikmahd``."""
    shipped = (resources.files(__package__) / "systemd" / name).read_text()
    body = _MANAGED_NOTE.format(unit=name) + shipped.replace(EXECUTABLE, _unit_word(hikmahd))
    return f"# hikmah:managed sha256={checksum(body)}\n{body}".encode()


def _unit_word(path: str) -> str:
    """``path`` as the executable of a systemd command line: ``%`` is not a specifier,
    and a path with a space is quoted (systemd expands no variable in the executable,
    so ``$`` stays as it is).

    Raises:
        SetupError: systemd runs no executable whose path holds a quote, a backslash or
            a control character.
    """
    if any(char in "\"'\\" or not char.isprintable() for char in path):
        problem = "systemd runs no executable whose path holds a quote, a backslash or a"
        raise _fail(path, f"{problem} control character")
    word = path.replace("%", "%%")
    return f'"{word}"' if " " in word else word


def _plan_unit(path: Path, shown: str, hikmahd: str, remove: bool) -> _Unit:
    old = _read(path)
    if old is None:
        if remove:
            return _Unit(path, shown, "keep", said="nothing to remove")
        return _Unit(path, shown, "create", unit_text(path.name, hikmahd))
    lines = _decode(old, shown).split("\n", 1)
    marked = _MANAGED.fullmatch(lines[0].rstrip("\r"))
    if marked is None:
        why = "was not written by hikmah setup"
    elif len(lines) < 2 or marked["sha"] != checksum(lines[1]):
        why = "was edited since hikmah setup wrote it"
    elif remove:
        return _Unit(path, shown, "delete")
    else:
        wanted = unit_text(path.name, hikmahd)
        if wanted == old:
            return _Unit(path, shown, "keep", said="already set up")
        return _Unit(path, shown, "update", wanted)
    if remove:
        return _Unit(path, shown, "keep", said="nothing to remove", note=f"it {why}; left alone")
    raise _fail(
        shown,
        f"{why}: move it away (your own settings belong in a drop-in, `systemctl --user"
        f" edit {path.name}`), then run this again",
    )


def _apply_unit(unit: _Unit, unit_dir: Path) -> str:
    if unit.action == "keep":
        line = f"{unit.said}: {unit.shown}"
        return f"{line} ({unit.note})" if unit.note else line
    if unit.action == "delete":
        unit.path.unlink()
        return f"deleted {unit.shown}"
    _make_dirs(unit_dir)
    write_atomic(unit.path, unit.text, 0o644)
    return f"{'created' if unit.action == 'create' else 'updated'} {unit.shown}"


# --- files ---


def _apply(edit: _Edit, remove: bool) -> str:
    if edit.new is None:
        line = f"{'nothing to remove' if remove else 'already set up'}: {edit.shown}"
        return f"{line} ({edit.note})" if edit.note else line
    # Write through a symlink (dotfiles kept in a repository) rather than replace it.
    target = Path(os.path.realpath(edit.path))
    if edit.old is None:
        _make_dirs(target.parent)
        write_atomic(target, edit.new, 0o600)
        line = f"created {edit.shown} with {edit.what}"
    elif remove and edit.new in _EMPTY and not _backup(edit.path).exists():
        # Setup made this file and never changed it since (that would have left a backup):
        # taking our entries out takes the file out too.
        target.unlink()
        line = f"deleted {edit.shown}: setup had created it, and it held only {edit.what}"
    elif remove and edit.exact:
        write_atomic(target, edit.new, stat.S_IMODE(os.stat(target).st_mode))
        line = f"removed {edit.what} from {edit.shown}"
        if _drop_backup(edit.path):
            # It was kept to undo setup's edit: our entries are out and no other byte moved.
            line += f"; deleted setup's backup {edit.shown}{BACKUP_SUFFIX} (nothing else changed)"
    else:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        write_atomic(_backup(edit.path), edit.old, mode)
        write_atomic(target, edit.new, mode)
        backup = f"{edit.shown}{BACKUP_SUFFIX}"
        if remove:
            line = (
                f"removed {edit.what} from {edit.shown}, rewritten in setup's layout; the file"
                f" as it was is kept in {backup} (delete it once checked)"
            )
        else:
            line = f"updated {edit.shown} with {edit.what} (backup: {backup})"
    return f"{line}; {edit.note}" if edit.note else line


# What is left of a file once our entries are out and nothing else was ever in it.
_EMPTY = (b"", b"{}\n")


def _backup(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _drop_backup(path: Path) -> bool:
    """Delete the backup of ``path`` if there is one; whether there was. Setup writes it
    as a regular file: anything else in its place is not setup's, and stays."""
    backup = _backup(path)
    try:
        if not stat.S_ISREG(os.lstat(backup).st_mode):
            return False
        backup.unlink()
    except FileNotFoundError:
        return False
    return True


def _make_dirs(directory: Path) -> None:
    """Like ``mkdir -p`` but every new directory gets 0o700: they hold agent settings."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for new in reversed(missing):
        new.mkdir(mode=0o700, exist_ok=True)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _decode(raw: bytes, shown: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as error:
        raise _fail(shown, f"not UTF-8 text (byte {error.start})") from None


def _load_json(raw: bytes | None, shown: str) -> JSONObject:
    text = "" if raw is None else _decode(raw, shown)
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        raise _fail(shown, problem) from None
    if not isinstance(data, dict):
        raise _fail(shown, f"the top level is {_kind(data)}, expected an object")
    return data


def _removal(path: Path, shown: str, old: bytes | None, data: JSONObject, what: str) -> _Edit:
    """Our entries out of a JSON file: ``data`` as the bytes the person had, when the
    backup setup made before adding its entries holds exactly that (nothing else changed
    since); else as setup writes JSON. Exact when nothing but our entries changes: the
    person's bytes come back, or the file was in setup's layout already."""
    try:
        backup = _backup(path).read_bytes()
        if json.loads(backup) == data:
            return _Edit(path, shown, old, backup, what, exact=True)
    except (OSError, ValueError):
        pass
    exact = old is not None and old == _dump_json(json.loads(old))
    return _Edit(path, shown, old, _dump_json(data), what, exact=exact)


def _dump_json(data: JSONObject) -> bytes:
    # The layout Claude Code itself writes: two-space indent, UTF-8, final newline.
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def _expect(value: object, kind: type, where: str, shown: str) -> None:
    if not isinstance(value, kind):
        raise _fail(shown, f"{where} is {_kind(value)}, expected {_KINDS[kind]}")


def _kind(value: object) -> str:
    if value is _MISSING:
        return "missing"
    return "null" if value is None else _KINDS.get(type(value), "a number")


def _fail(shown: str, problem: str) -> SetupError:
    return SetupError(f"{shown}: {problem}; nothing was changed")


def _shown(path: Path, home: Path) -> str:
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)
