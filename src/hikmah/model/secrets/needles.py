"""The needles that let a text skip the scans that cannot match it.

Each shape first checks for a fixed substring every match contains (``ghp_``, ``://``),
so most texts skip most scans; the checks besides the shapes have needles too, and
a text is searched for all of them at once (:mod:`hikmah.model._needles`).
"""

from __future__ import annotations

from typing import Literal

from hikmah.model import _needles
from hikmah.model.secrets.named import NAME_HINTS
from hikmah.model.secrets.shapes import SHAPES

# The checks besides the shapes that a needle of the text selects (see detector.findings).
_Check = Literal[
    "assignments",
    "named values",
    "named assignments",
    "connect calls",
    "prose passwords",
    "command passwords",
    "strong pairs",
]


class _NeedleTable:
    """Needles looked for in a text all at once (:mod:`hikmah.model._needles`), each naming the
    shapes (by position in :data:`SHAPES`) and checks it selects: a text is searched
    once for every needle, not once per shape or check that names it."""

    def __init__(self, selects: dict[str, list[int | _Check]]) -> None:
        self._needles = tuple(needle.encode() for needle in selects)
        self._selects = tuple(selects.values())

    def selected(self, text: str) -> set[int | _Check]:
        """What the needles ``text`` holds select."""
        chosen: set[int | _Check] = set()
        # "surrogatepass": a text may hold lone surrogates (JSON lets it); each is still
        # bytes of its own, and the needles hold none.
        for position in _needles.found(text.encode("utf-8", "surrogatepass"), self._needles):
            chosen.update(self._selects[position])
        return chosen


def _needle_table(folded: bool, checks: dict[_Check, tuple[str, ...]]) -> _NeedleTable:
    """The table of the shapes' needles looked for as they are (``folded`` False) or in
    the lowercased text, and of ``checks``' needles."""
    selects: dict[str, list[int | _Check]] = {}
    for position, shape in enumerate(SHAPES):
        if shape.folded == folded:
            for needle in shape.needles:
                selects.setdefault(needle, []).append(position)
    for check, needles in checks.items():
        for needle in needles:
            selects.setdefault(needle, []).append(check)
    return _NeedleTable(selects)


NEEDLELESS = frozenset(i for i, shape in enumerate(SHAPES) if not shape.needles)

# The assignment keywords all contain one of these.
_ASSIGNMENT_NEEDLES = ("pass", "secret", "api", "token", "private")
# The keywords of the flags, elements and named tokens.
_NAMED_NEEDLES = (*_ASSIGNMENT_NEEDLES, "pwd", "key", "pat", "psk")
_PROSE_NEEDLES = (
    "pass",
    "pw",
    "log",
    "cred",
    "user",
    "use",
    "try",
    "kennwort",
    "contrase",
    "senha",
    "mdp",
    "clave",
    "parola",
    "wachtwoord",
    "lösenord",
    "has",
    "ifre",
)
# Lowercase Cyrillic and Japanese, which the other needles, all ASCII, never meet.
_CYRILLIC_NEEDLES = ("пароль", "パスワード")
# The commands on whose lines the short password flags count.
_COMMAND_NEEDLES = (
    "mysql",
    "mariadb",
    "sshpass",
    "redis-cli",
    "net",
    "securestring",
    "htpasswd",
    "sqlcmd",
    "bcp",
    "osql",
    "ldap",
    "smb",
    "rpcclient",
)

# The needles of the checks besides the shapes, all looked for in the lowercased text
# but the strong pairs' separators. The checks' own patterns decide; a needle only
# lets a text without any skip the check.
CASED_NEEDLES = _needle_table(folded=False, checks={"strong pairs": (" / ", "\t/", "/\t")})
FOLDED_NEEDLES = _needle_table(
    folded=True,
    checks={
        "assignments": _ASSIGNMENT_NEEDLES,
        "named values": _NAMED_NEEDLES,
        "named assignments": NAME_HINTS,
        "connect calls": ("connect", "pdo"),
        "prose passwords": (*_PROSE_NEEDLES, *_CYRILLIC_NEEDLES),
        "command passwords": _COMMAND_NEEDLES,
    },
)
