"""``hikmah setup claude|codex|gemini|opencode|systemd``: wire Hikmah into a coding
agent's user configuration, or into systemd's user units.

For an agent, setup adds the ``hikmah`` MCP server and what gives the agent memory
at session start and with every prompt (``hikmah hook session-start`` and ``hikmah hook
prompt``: the host's own hooks, or for OpenCode a plugin that runs them);
``remove=True`` takes out exactly those. Nothing a person wrote is ever changed, a
file whose content would stay the same is not rewritten, and every file is planned
and validated before any is written, so a SetupError leaves all of them as they were.
A changed file is first saved as ``FILE.hikmah-backup``
(:mod:`.files`); a removal that moves no byte but our entries needs none, and deletes
the one setup left. A file setup owns whole (a policy rule, a plugin, a unit) carries
the checksum of its content (:mod:`.owned`), and one edited since is neither replaced
nor deleted. Standard library only.

One module per host says where it reads what, as documented and as seen;
docs/agents.md has what each host was seen to do with them, and the versions seen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from . import claude, codex, gemini, opencode
from .codex import BEGIN, END
from .codex import FORWARDED as CODEX_FORWARDED
from .codex import STARTUP_TIMEOUT_S as CODEX_STARTUP_TIMEOUT_S
from .files import SetupError, Step
from .systemd import setup_systemd

__all__ = [
    "BEGIN",
    "CODEX_FORWARDED",
    "CODEX_STARTUP_TIMEOUT_S",
    "END",
    "SetupError",
    "next_steps",
    "setup",
    "setup_systemd",
]

Host = Literal["claude", "codex", "gemini", "opencode"]


class _Host(Protocol):
    """What each host's module has."""

    def plan(
        self,
        home: Path,
        environ: Mapping[str, str],
        *,
        hikmah: str,
        agent: str,
        remove: bool,
        mcp: bool,
    ) -> list[Step]:
        """Every file's change, none written yet."""

    def next_steps(self, home: Path, environ: Mapping[str, str]) -> list[str]:
        """What the person does once setup has written the files."""


_HOSTS: dict[str, _Host] = {
    "claude": claude,
    "codex": codex,
    "gemini": gemini,
    "opencode": opencode,
}


def setup(
    host: Host,
    *,
    home: Path,
    remove: bool = False,
    mcp: bool = True,
    hikmah: str,
    hikmah_agent: str,
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """Put Hikmah's MCP server and hooks into (or take them out of) a host's user config.

    Args:
        host: the coding agent.
        home: the home directory whose configuration to edit (unless ``environ`` moves
            it: ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``,
            ``OPENCODE_CONFIG_DIR``, ``XDG_CONFIG_HOME``).
        remove: take out our entries instead; applies to hooks and MCP server alike.
        mcp: with ``remove=False``, also write the MCP server entry (and Gemini's policy
            rule for its tools); ``False`` leaves any existing entry alone.
        hikmah: absolute path of the ``hikmah`` executable, used in hook commands.
        hikmah_agent: absolute path of the MCP server executable.
        environ: where the hosts' own variables are read.

    Returns:
        One line per file: what was changed (and where its backup is), or that it
        already was as wanted.

    Raises:
        SetupError: a file is not valid JSON/TOML (or holds comments), has a shape the
            docs do not allow, already has a ``hikmah`` MCP server or a file of setup's
            name that setup did not write, or changed while being edited. Nothing was
            written.
    """
    plan = _HOSTS[host].plan
    steps = plan(home, environ, hikmah=hikmah, agent=hikmah_agent, remove=remove, mcp=mcp)
    for step in steps:
        step.check()
    return [step.apply() for step in steps]


def next_steps(host: Host, *, home: Path, environ: Mapping[str, str] = os.environ) -> list[str]:
    """What the person does once setup has written a host's files."""
    return _HOSTS[host].next_steps(home, environ)
