"""Configuration files a person also edits: planned in memory, written only once every
file's plan holds, backed up before a change, given back on removal.

A plan reads a file, changes it in memory and validates the result, raising
SetupError for anything it cannot edit safely; nothing is written until every file
of a host is planned and checked unchanged since it was read.
"""

from __future__ import annotations

import copy
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hikmah.model.durable import write_atomic

BACKUP_SUFFIX = ".hikmah-backup"
MISSING = object()

JSONObject = dict[str, Any]
# Changes a parsed JSON file in place; returns what changed ("" for nothing) and a note.
JSONChange = Callable[[JSONObject], tuple[str, str]]


class Step(Protocol):
    """One file's planned change: checked, then applied, once every file is planned."""

    def check(self) -> None: ...

    def apply(self) -> str: ...


class SetupError(Exception):
    """A configuration file cannot be edited safely; the message names the file and the
    problem. No file was changed."""


@dataclass(frozen=True)
class Edit:
    """One file's planned change."""

    path: Path
    shown: str  # the path as the person knows it, e.g. ~/.claude.json
    old: bytes | None  # None: the file does not exist
    new: bytes | None  # None: leave the file as it is
    what: str  # "hooks SessionStart, UserPromptSubmit", "2 hooks", "MCP server hikmah"
    note: str = ""
    # A removal that changes nothing in the file but our entries: no backup is needed.
    exact: bool = False
    remove: bool = False

    def check(self) -> None:
        """Raise if the file changed since it was planned: the host may rewrite its config
        (Claude Code rewrites ~/.claude.json often), and checking every file before
        writing any keeps "nothing changed" true on error."""
        if self.new is not None and read(self.path) != self.old:
            raise fail(self.shown, "changed while hikmah setup was editing it; run it again")

    def apply(self) -> str:
        """Write the change; one line saying what was done."""
        if self.new is None:
            line = f"{'nothing to remove' if self.remove else 'already set up'}: {self.shown}"
            return f"{line} ({self.note})" if self.note else line
        # Write through a symlink (dotfiles kept in a repository) rather than replace it.
        target = Path(os.path.realpath(self.path))
        if self.old is None:
            make_dirs(target.parent)
            write_atomic(target, self.new, 0o600)
            line = f"created {self.shown} with {self.what}"
        elif self.remove and self.new in _EMPTY and not _backup(self.path).exists():
            # Setup made this file and never changed it since (that would have left a
            # backup): taking our entries out takes the file out too.
            target.unlink()
            line = f"deleted {self.shown}: setup had created it, and it held only {self.what}"
        elif self.remove and self.exact:
            write_atomic(target, self.new, stat.S_IMODE(os.stat(target).st_mode))
            line = f"removed {self.what} from {self.shown}"
            if _drop_backup(self.path):
                # It was kept to undo setup's edit: our entries are out and no other byte moved.
                line += (
                    f"; deleted setup's backup {self.shown}{BACKUP_SUFFIX} (nothing else changed)"
                )
        else:
            mode = stat.S_IMODE(os.stat(target).st_mode)
            write_atomic(_backup(self.path), self.old, mode)
            write_atomic(target, self.new, mode)
            backup = f"{self.shown}{BACKUP_SUFFIX}"
            if self.remove:
                line = (
                    f"removed {self.what} from {self.shown}, rewritten in setup's layout; the"
                    f" file as it was is kept in {backup} (delete it once checked)"
                )
            else:
                line = f"updated {self.shown} with {self.what} (backup: {backup})"
        return f"{line}; {self.note}" if self.note else line


# What is left of a file once our entries are out and nothing else was ever in it.
_EMPTY = (b"", b"{}\n")


def plan_json(path: Path, shown: str, remove: bool, change: JSONChange) -> Edit:
    """The edit of a JSON file that ``change`` makes to its parsed content."""
    old = read(path)
    if remove and old is None:
        return Edit(path, shown, None, None, "", remove=True)
    data = _load_json(old, shown)
    new = copy.deepcopy(data)
    what, note = change(new)
    if new == data:
        return Edit(path, shown, old, None, what, note, remove=remove)
    if remove:
        return _removal(path, shown, old, new, what, note)
    return Edit(path, shown, old, _dump_json(new), what, note)


def _removal(
    path: Path, shown: str, old: bytes | None, data: JSONObject, what: str, note: str
) -> Edit:
    """Our entries out of a JSON file: ``data`` as the bytes the person had, when the
    backup setup made before adding its entries holds exactly that (nothing else changed
    since); else as setup writes JSON. Exact when nothing but our entries changes: the
    person's bytes come back, or the file was in setup's layout already."""
    try:
        backup = _backup(path).read_bytes()
        if json.loads(backup) == data:
            return Edit(path, shown, old, backup, what, note, exact=True, remove=True)
    except (OSError, ValueError):
        pass
    exact = old is not None and old == _dump_json(json.loads(old))
    return Edit(path, shown, old, _dump_json(data), what, note, exact=exact, remove=True)


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


def make_dirs(directory: Path) -> None:
    """Like ``mkdir -p`` but every new directory gets 0o700: they hold agent settings."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for new in reversed(missing):
        new.mkdir(mode=0o700, exist_ok=True)


def read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def decode(raw: bytes, shown: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as error:
        raise fail(shown, f"not UTF-8 text (byte {error.start})") from None


def _load_json(raw: bytes | None, shown: str) -> JSONObject:
    text = "" if raw is None else decode(raw, shown)
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if _has_comment(text):
            # Gemini CLI and OpenCode read their JSON with comments; setup would drop them.
            problem = (
                "holds comments, which hikmah setup cannot keep: take them out, or add"
                " Hikmah's entries by hand (docs/agents.md says what they are)"
            )
        else:
            problem = f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        raise fail(shown, problem) from None
    if not isinstance(data, dict):
        raise fail(shown, f"the top level is {_kind(data)}, expected an object")
    return data


def _has_comment(text: str) -> bool:
    """Whether ``text`` has a ``//`` or ``/*`` comment outside its strings."""
    in_string = escaped = False
    for at, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif text.startswith(("//", "/*"), at):
            return True
    return False


def _dump_json(data: JSONObject) -> bytes:
    # The layout Claude Code itself writes: two-space indent, UTF-8, final newline.
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def expect(value: object, kind: type, where: str, shown: str) -> None:
    if not isinstance(value, kind):
        raise fail(shown, f"{where} is {_kind(value)}, expected {_KINDS[kind]}")


def _kind(value: object) -> str:
    if value is MISSING:
        return "missing"
    return "null" if value is None else _KINDS.get(type(value), "a number")


def fail(shown: str, problem: str) -> SetupError:
    return SetupError(f"{shown}: {problem}; nothing was changed")


def as_shown(path: Path, home: Path) -> str:
    """``path`` as the person knows it: under their home, ``~/…``."""
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)
