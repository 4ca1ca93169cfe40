"""Files setup owns whole (systemd's units, Gemini CLI's policy rule, OpenCode's
plugin): each starts with a comment line holding the checksum of the rest
(:func:`hikmah.model.managed_block.checksum`), so a file copied by hand or edited since is
never replaced nor deleted."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from hikmah.model.durable import write_atomic
from hikmah.model.managed_block import checksum

from .files import decode, fail, make_dirs, read

_MANAGED = re.compile(r"(?:#|//) hikmah:managed sha256=(?P<sha>[0-9a-f]{16})")


def template(name: str) -> str:
    """A file shipped in ``templates/`` beside this module."""
    return (resources.files(__package__) / "templates" / name).read_text()


def owned_text(comment: str, body: str) -> bytes:
    """``body`` under the managed line, written as a ``comment`` of the file's language."""
    return f"{comment} hikmah:managed sha256={checksum(body)}\n{body}".encode()


@dataclass(frozen=True)
class Owned:
    """One owned file's planned change."""

    path: Path
    shown: str  # e.g. ~/.config/systemd/user/hikmahd.socket
    old: bytes | None  # None: the file does not exist
    action: Literal["create", "update", "delete", "keep"]
    text: bytes = b""  # what create and update write
    said: str = ""  # a file kept as it is: why
    note: str = ""
    mode: int = 0o600

    def check(self) -> None:
        """Raise if the file changed since it was planned."""
        if self.action != "keep" and read(self.path) != self.old:
            raise fail(self.shown, "changed while hikmah setup was writing it; run it again")

    def apply(self) -> str:
        """Write or delete the file; one line saying what was done."""
        if self.action == "keep":
            line = f"{self.said}: {self.shown}"
            return f"{line} ({self.note})" if self.note else line
        if self.action == "delete":
            self.path.unlink()
            return f"deleted {self.shown}"
        make_dirs(self.path.parent)
        write_atomic(self.path, self.text, self.mode)
        return f"{'created' if self.action == 'create' else 'updated'} {self.shown}"


def plan_owned(
    path: Path, shown: str, wanted: bytes, remove: bool, *, advice: str, mode: int = 0o600
) -> Owned:
    """Write ``wanted`` to ``path`` (or, removing, delete what setup wrote there).

    Args:
        advice: what a person does with a file there that setup did not write, or that
            was edited since: "move it away (…)".

    Raises:
        SetupError: such a file is there, and ``remove`` is false.
    """
    old = read(path)
    if old is None:
        if remove:
            return Owned(path, shown, old, "keep", said="nothing to remove")
        return Owned(path, shown, old, "create", wanted, mode=mode)
    lines = decode(old, shown).split("\n", 1)
    marked = _MANAGED.fullmatch(lines[0].rstrip("\r"))
    if marked is None:
        why = "was not written by hikmah setup"
    elif len(lines) < 2 or marked["sha"] != checksum(lines[1]):
        why = "was edited since hikmah setup wrote it"
    elif remove:
        return Owned(path, shown, old, "delete")
    elif wanted == old:
        return Owned(path, shown, old, "keep", said="already set up")
    else:
        return Owned(path, shown, old, "update", wanted, mode=mode)
    if remove:
        return Owned(
            path, shown, old, "keep", said="nothing to remove", note=f"it {why}; left alone"
        )
    raise fail(shown, f"{why}: {advice}, then run this again")
