"""Detection of coding-agent sessions, and the rules that follow from one.

The daemon reads the environment of the connecting peer and of its ancestors
(from ``/proc``) and hands each one to :func:`detect_agent_session`; this
module does no I/O. Inside a detected session writes are stamped with an
``agent-session:<host>:<id>`` locator and operations that need a person
(``remember --verified``, ``verify-ledger --accept-tail``/``--reset-head``,
purge) are refused with a message that tells a person what to do instead.

Detection reads environment variables: it keeps an agent from verifying its
own memory by default, but it is not authentication. A process that clears
those variables is not detected. A peer whose process tree cannot be read is
:data:`UNKNOWN_PRINCIPAL`, restricted like a detected session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import msgspec

from hikmah.errors import AgentRestricted
from hikmah.secrets import find_secret

__all__ = [
    "AGENT_LOCATOR_PREFIX",
    "UNKNOWN_PRINCIPAL",
    "USER_CONFIGURATION",
    "AgentSession",
    "declared_session",
    "detect_agent_session",
    "host_of_client",
    "is_agent_locator",
    "merge_sessions",
    "named_session",
    "refuse_in_agent_session",
    "restriction_message",
    "stamp_locator",
]

AGENT_LOCATOR_PREFIX = "agent-session:"

UNKNOWN_SESSION = "unknown"

# Documented settings a person exports in their own profile to configure an
# agent tool. They say nothing about whether an agent is running this process,
# so counting them would lock people out of their own terminal.
USER_CONFIGURATION: frozenset[str] = frozenset(
    {"CODEX_HOME"}
    | {
        "CLAUDE_CODE_" + suffix
        for suffix in (
            "USE_BEDROCK",
            "USE_VERTEX",
            "USE_FOUNDRY",
            "SKIP_BEDROCK_AUTH",
            "SKIP_VERTEX_AUTH",
            "MAX_OUTPUT_TOKENS",
            "DISABLE_NONESSENTIAL_TRAFFIC",
            "ENABLE_TELEMETRY",
            "ENHANCED_TELEMETRY_BETA",
            "OAUTH_TOKEN",
            "CLIENT_CERT",
            "CLIENT_KEY",
            "CLIENT_KEY_PASSPHRASE",
            "GIT_BASH_PATH",
        )
    }
)


class _Host(msgspec.Struct, frozen=True):
    """One agent host: how its variables are recognised, where its session id lives, and
    the ``clientInfo.name`` its MCP client introduces itself with (docs/agents.md)."""

    name: str
    exact: tuple[str, ...]
    prefixes: tuple[str, ...]
    id_variables: tuple[str, ...]
    client_names: tuple[str, ...] = ()

    def owns(self, variable: str) -> bool:
        """Whether ``variable`` is one this host sets."""
        return variable in self.exact or variable.startswith(self.prefixes)


# Order matters: when several hosts are detected the first one names the session
# (an agent launched from inside another host's terminal inherits both sets).
_HOSTS: tuple[_Host, ...] = (
    _Host(
        "claude-code",
        ("CLAUDECODE",),
        ("CLAUDE_CODE_",),
        ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_REMOTE_SESSION_ID"),
        ("claude-code",),
    ),
    _Host("codex", (), ("CODEX_",), ("CODEX_SESSION_ID", "CODEX_THREAD_ID"), ("codex-mcp-client",)),
    _Host("cursor", (), ("CURSOR_",), ("CURSOR_SESSION_ID", "CURSOR_TRACE_ID")),
    _Host("gemini-cli", ("GEMINI_CLI",), (), ()),
    _Host("ai-agent", ("AI_AGENT",), (), ()),
)

# The id goes verbatim into a locator, so it must not carry separators (";",
# ":"), whitespace or control characters. The explicit ASCII class keeps
# Unicode digits and letters out as well.
_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

_MAX_NAMED = 5

_AGENT_ADVICE = (
    "If you are an agent, do not work around this check: stop and ask a person to run the command."
)

_CHECK_COMMAND = "env | grep -E '^(CLAUDECODE|CLAUDE_CODE_|CODEX_|CURSOR_|GEMINI_CLI|AI_AGENT)'"


class AgentSession(msgspec.Struct, frozen=True, kw_only=True):
    """A detected coding-agent session.

    Attributes:
        host: ``claude-code``, ``codex``, ``cursor``, ``gemini-cli`` or ``ai-agent``.
        session_id: The host's session id, or ``"unknown"``.
        variables: Sorted names (never values) of every detected variable.
    """

    host: str
    session_id: str
    variables: tuple[str, ...]


# Whoever sent a request whose process tree could not be read (no /proc, a hidden
# environment): it could be an agent, so it is restricted like one, never a person.
UNKNOWN_PRINCIPAL = AgentSession(host=UNKNOWN_SESSION, session_id=UNKNOWN_SESSION, variables=())


def _counts(name: str, value: str) -> bool:
    """Whether a variable is set to something and is not a person's configuration."""
    return bool(value.strip()) and name not in USER_CONFIGURATION


def _session_id(host: _Host, environ: Mapping[str, str]) -> str:
    """The first acceptable session id among the host's id variables, else ``"unknown"``.

    A candidate is stripped and then taken whole or not at all: it must be 1..64
    characters of ``[A-Za-z0-9._-]``. Rejecting instead of filtering means a
    hostile value can never be shaped into a different, plausible id.
    """
    for variable in host.id_variables:
        candidate = environ.get(variable, "").strip()
        if _acceptable_id(candidate):
            return candidate
    return UNKNOWN_SESSION


def _acceptable_id(candidate: str) -> bool:
    """An id that can go into every locator: the right shape, and not a credential (it
    is written to disk with each write, where no secret may go)."""
    return bool(_SESSION_ID.fullmatch(candidate)) and find_secret(candidate) is None


def detect_agent_session(environ: Mapping[str, str]) -> AgentSession | None:
    """Detect a coding-agent session from one process environment.

    Args:
        environ: Variable names to values, e.g. a parsed ``/proc/<pid>/environ``.

    Returns:
        The session named by the first host in precedence order that set a
        counting variable, with the names of every counting variable of every
        host; ``None`` when there is none.
    """
    detected: list[str] = []
    rank = len(_HOSTS)
    for name, value in environ.items():
        if not _counts(name, value):
            continue
        for index, host in enumerate(_HOSTS):
            if host.owns(name):
                detected.append(name)
                rank = min(rank, index)
                break
    if rank == len(_HOSTS):
        return None
    winner = _HOSTS[rank]
    return AgentSession(
        host=winner.name,
        session_id=_session_id(winner, environ),
        variables=tuple(sorted(detected)),
    )


def host_of_client(client_name: str | None) -> str | None:
    """The host whose MCP client introduces itself as ``client_name``, if it is a known one."""
    for host in _HOSTS:
        if client_name in host.client_names:
            return host.name
    return None


def merge_sessions(found: Iterable[AgentSession | None]) -> AgentSession | None:
    """Combine detections from a process and its ancestors, nearest first.

    The nearest detection names the host and session id; the variable names of
    all detections are unioned so a refusal shows everything a person must unset.

    Returns:
        The merged session, or ``None`` when nothing was detected.
    """
    first: AgentSession | None = None
    names: set[str] = set()
    for session in found:
        if session is None:
            continue
        if first is None:
            first = session
        names.update(session.variables)
    if first is None:
        return None
    return AgentSession(
        host=first.host, session_id=first.session_id, variables=tuple(sorted(names))
    )


DECLARED = "session.restrict"
_HOST_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")


def declared_session(host: str, session_id: str | None) -> AgentSession:
    """The session a client declares for itself when it lowers its own privileges.

    The host and id are sanitised like detected ones (they go into locators);
    the variables name the declaration, since no environment variable was seen.
    """
    host = host.strip().lower()
    sid = (session_id or "").strip()
    return AgentSession(
        host=host if _HOST_NAME.fullmatch(host) else "agent",
        session_id=sid if _acceptable_id(sid) else UNKNOWN_SESSION,
        variables=(DECLARED,),
    )


def named_session(
    detected: AgentSession | None, declared: AgentSession | None
) -> AgentSession | None:
    """Who is behind a connection: the session detected from its process tree, else the
    one its client declared; None for a person.

    Detection wins, but it may know the host without its session id: Codex's npm
    wrapper leaves a ``CODEX_*`` variable in the tree and no id, and passes its MCP
    servers the id only with each tool call. A declared id for the same host then
    fills the gap; it names the session and changes nothing about the restriction.
    """
    if detected is None:
        return declared
    if (
        declared is not None
        and detected.session_id == UNKNOWN_SESSION
        and declared.session_id != UNKNOWN_SESSION
        and declared.host == detected.host
    ):
        return AgentSession(
            host=detected.host, session_id=declared.session_id, variables=detected.variables
        )
    return detected


def stamp_locator(session: AgentSession | None, locator: str | None) -> str | None:
    """Prefix a write's locator with the agent session that made it.

    Returns:
        ``agent-session:<host>:<id>``, followed by ``"; "`` and the caller's
        locator when one is given (empty or blank counts as none); the caller's
        locator unchanged when there is no session.
    """
    if session is None:
        return locator
    stamp = f"{AGENT_LOCATOR_PREFIX}{session.host}:{session.session_id}"
    if locator is None or not locator.strip():
        return stamp
    return f"{stamp}; {locator}"


def is_agent_locator(locator: str | None) -> bool:
    """Whether a locator was stamped by an agent session."""
    return locator is not None and locator.startswith(AGENT_LOCATOR_PREFIX)


def _display(name: str) -> str:
    """A variable name safe to print: odd names are escaped, never interpreted by a terminal."""
    return name if name.isascii() and name.isprintable() else ascii(name)


def restriction_message(session: AgentSession, action: str) -> str:
    """Explain a refusal to whoever reads it, person or agent.

    Names at most five detected variables (never their values, nor the session
    id, which is a value) and says what a person does instead.
    """
    if session == UNKNOWN_PRINCIPAL:
        return _unknown_message(action)
    shown = [_display(name) for name in session.variables[:_MAX_NAMED]]
    rest = len(session.variables) - len(shown)
    named = ", ".join(shown) or "none recorded"
    if rest:
        named += f" and {rest} more"
    return (
        f"Refused: {action} needs a person, and this request comes from a detected "
        f"{session.host} agent session (variables: {named}). "
        "If you are a person, run the command from a terminal where none of these "
        "variables is set, such as a plain system terminal; an editor's integrated "
        "terminal or your own shell profile can set them. Check with "
        f"{_CHECK_COMMAND}. If a variable you set yourself is a documented setting "
        "of your agent tool, please open an issue so it stops counting. " + _AGENT_ADVICE
    )


def _unknown_message(action: str) -> str:
    return (
        f"Refused: {action} needs a person, and hikmahd cannot tell who sent this "
        "request: it could not read the environment of the requesting process or of "
        "one of its parents (its log says which, and why), so the request counts as "
        "an agent's. If you are a person, run the command from a plain terminal, not "
        "under a program that hides its environment (su, sudo, a non-dumpable "
        "process), and check that /proc is mounted and readable where hikmahd runs. "
        + _AGENT_ADVICE
    )


def refuse_in_agent_session(session: AgentSession | None, action: str) -> None:
    """Refuse ``action`` inside an agent session.

    Raises:
        AgentRestricted: When ``session`` is not ``None``.
    """
    if session is not None:
        raise AgentRestricted(restriction_message(session, action))
