"""``hikmah setup systemd``: hikmahd's user units.

Setup writes ``hikmahd.socket`` and ``hikmahd.service`` (shipped in ``templates/``)
into the user unit directory, the service's ``ExecStart=`` naming the ``hikmahd`` of
this install; ``remove=True`` deletes exactly the units it wrote. They are files setup
owns whole (:mod:`.owned`): a person's own settings belong in a drop-in
(``systemctl --user edit hikmahd.service``), which setup never touches. It runs no
``systemctl``; the CLI prints what to run.
"""

from __future__ import annotations

from pathlib import Path

from .files import as_shown, fail
from .owned import owned_text, plan_owned, template

UNITS = ("hikmahd.socket", "hikmahd.service")
# Where the shipped service unit names the daemon; setup writes its path there.
EXECUTABLE = "@HIKMAHD@"
_MANAGED_NOTE = (
    "# Written by `hikmah setup systemd`: running it again replaces this file, and\n"
    "# `hikmah setup systemd --remove` deletes it. Your own settings go in a drop-in:\n"
    "# systemctl --user edit {unit}\n"
)


def setup_systemd(unit_dir: Path, *, home: Path, hikmahd: str, remove: bool = False) -> list[str]:
    """Write hikmahd's user units into ``unit_dir``, or take out the ones setup wrote.

    Args:
        unit_dir: systemd's user unit directory (:func:`hikmah.model.paths.systemd_user_dir`).
        home: to show paths under it as ``~/…``.
        hikmahd: absolute path of the ``hikmahd`` executable the service runs.
        remove: delete our units instead.

    Returns:
        One line per unit: created, updated, deleted, or as it was (and why).

    Raises:
        SetupError: a unit is there that setup did not write, or edited since (setup
            replaces neither); a unit to delete is still enabled. Nothing was changed.
    """
    units = []
    for name in UNITS:
        path = unit_dir / name
        advice = (
            f"move it away (your own settings belong in a drop-in, `systemctl --user edit {name}`)"
        )
        wanted = unit_text(name, hikmahd)
        units.append(
            plan_owned(path, as_shown(path, home), wanted, remove, advice=advice, mode=0o644)
        )
    for unit in units:
        unit.check()
        # Its enablement links would point at nothing, and systemctl disable then
        # refuses to take them out: disabled first, deleted after.
        if unit.action == "delete" and any(unit_dir.glob(f"*.wants/{unit.path.name}")):
            raise fail(
                unit.shown,
                "is enabled: first `systemctl --user disable --now hikmahd.socket"
                " hikmahd.service`, then run this again",
            )
    return [unit.apply() for unit in units]


def unit_text(name: str, hikmahd: str) -> bytes:
    """Unit ``name`` as setup writes it: the managed line (with the checksum of the rest)
    and the shipped unit, naming ``hikmahd``."""
    shipped = template(name).replace(EXECUTABLE, _unit_word(hikmahd))
    return owned_text("#", _MANAGED_NOTE.format(unit=name) + shipped)


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
        raise fail(path, f"{problem} control character")
    word = path.replace("%", "%%")
    return f'"{word}"' if " " in word else word
