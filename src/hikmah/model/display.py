"""Memory as a person's terminal (or an agent) is shown it: content is data, never a control
sequence, and an agent's write is named as one wherever its source is shown.

Standard library only: the CLI, the hooks, ``hikmah browse`` and the agent's MCP
server import it. The Neovim plugin has the same rules in Lua
(``clients/nvim/lua/hikmah/display.lua``). Stored bytes and ``--json`` stay
exact; only what is rendered as text goes through here.
"""

from __future__ import annotations

import re

# What the daemon puts first in the locator of a write from an agent session
# (hikmah.access.principal.stamp_locator): ``agent-session:<host>:<session id>``.
AGENT_LOCATOR_PREFIX = "agent-session:"

# What a terminal acts on rather than shows, and what reorders or hides text, as
# inclusive code point ranges: C0 controls but tab and newline, DEL and the C1
# controls (ESC/CSI, OSC 52 clipboard writes, BEL), Unicode's format characters
# (bidi overrides and isolates, zero-width characters, the BOM, interlinear and
# tag characters) and its line and paragraph separators. The Neovim plugin's
# ``display.lua`` holds the same table; a test keeps the two equal.
INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605),
    (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2),
    (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_INVISIBLE = re.compile(
    "[" + "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in INVISIBLE) + "]"
)


def visible(text: str) -> str:
    """``text`` with every control and format character shown as an escape (``\\x1b``,
    ``\\u202e``): it prints as what it is and acts on nothing."""
    return _INVISIBLE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def is_agent_locator(locator: str | None) -> bool:
    """Whether a locator was stamped by the daemon for a write from an agent session."""
    return locator is not None and locator.startswith(AGENT_LOCATOR_PREFIX)


def stamped_agent(locator: str | None) -> str | None:
    """``agent:<host>`` when the daemon stamped ``locator`` for an agent session's write."""
    if locator is None or not is_agent_locator(locator):
        return None
    host = locator[len(AGENT_LOCATOR_PREFIX) :].split(";", 1)[0].partition(":")[0]
    return f"agent:{visible(host.strip()) or 'unknown'}"


def stamped_session(locator: str | None) -> str | None:
    """The agent session's id in the daemon's stamp (None: not stamped, or no id)."""
    if locator is None or not is_agent_locator(locator):
        return None
    return locator[len(AGENT_LOCATOR_PREFIX) :].split(";", 1)[0].partition(":")[2].strip() or None


def writer(source: str | None, locator: str | None, verified: bool) -> str:
    """Who wrote a trace, as shown next to it: its source, and when an agent's session
    wrote it (the daemon's stamp in the locator) that agent, whatever source it claimed:

    - ``human:sam, verified``
    - ``agent:claude-code, session 5f1c…, unverified``
    - ``human:sam (claimed), written by agent:claude-code, session 5f1c…, unverified``
    """
    claimed = visible(source or "unknown")
    state = "verified" if verified else "unverified"
    agent = stamped_agent(locator)
    if agent is None:
        return f"{claimed}, {state}"
    session = stamped_session(locator)
    session_text = f", session {visible(_short(session))}" if session else ""
    if claimed in (agent, "unknown", ""):
        return f"{agent}{session_text}, {state}"
    return f"{claimed} (claimed), written by {agent}{session_text}, {state}"


def _short(session: str) -> str:
    return session if len(session) <= 12 else session[:8] + "…"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 trace``, ``2,048 traces``: a count and its noun, in the right number."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
