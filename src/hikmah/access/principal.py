"""Detection of coding-agent sessions, and the rules that follow from one.

The daemon reads the connecting peer and every ancestor (from ``/proc``) and
hands each one's environment to :func:`detect_agent_session` and what it runs
(executable, command line, name) to :func:`detect_agent_host`; this module
does no I/O. Inside a detected session writes are stamped with an
``agent-session:<host>:<id>`` locator and operations that need a person
(``remember --verified``, ``verify-ledger --accept-tail``/``--reset-head``,
purge, ...) are refused with a message that tells a person what to do instead.

Detection keeps an agent from verifying its own memory by default, but it is
not authentication: a process reparented away from its agent (``setsid -f``,
a double fork) has no agent above it. A peer whose process tree cannot be
read is :data:`UNKNOWN_PRINCIPAL`, restricted like a detected session. What
detection cannot give, person presence can (:data:`UNPROVEN_PERSON`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import msgspec

from hikmah.model.display import AGENT_LOCATOR_PREFIX
from hikmah.model.errors import AgentRestricted, PresenceRequired
from hikmah.model.secrets import find_secret
from hikmah.model.wire.service import AgentSession

__all__ = [
    "UNKNOWN_PRINCIPAL",
    "UNPROVEN_PERSON",
    "USER_CONFIGURATION",
    "AgentSession",
    "Process",
    "declared_session",
    "detect_agent_host",
    "detect_agent_session",
    "host_of_client",
    "merge_sessions",
    "named_session",
    "presence_message",
    "refuse_in_agent_session",
    "restriction_message",
    "stamp_locator",
    "writer_source",
]

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
    """One agent host: how its variables are recognised, where its session id lives, the
    ``clientInfo.name`` its MCP client introduces itself with (docs/agents.md), and how
    its own process looks (docs/security.md, "Agent hosts by their process")."""

    name: str
    exact: tuple[str, ...]
    prefixes: tuple[str, ...]
    id_variables: tuple[str, ...]
    client_names: tuple[str, ...] = ()
    # Names the host's process goes by: its executable, its argv[0], its process name,
    # or the script an interpreter runs (without .js, .cjs, .mjs, .exe).
    programs: tuple[str, ...] = ()
    # Where its files are installed: part of the executable's or the script's path.
    paths: tuple[str, ...] = ()

    def owns(self, variable: str) -> bool:
        """Whether ``variable`` is one this host sets."""
        return variable in self.exact or variable.startswith(self.prefixes)

    def runs(self, names: set[str], paths: list[str]) -> bool:
        """Whether a process with these names and paths is this host."""
        return bool(names.intersection(self.programs)) or any(
            fragment in path for path in paths for fragment in self.paths
        )


# Order matters: when several hosts are detected the first one names the session
# (an agent launched from inside another host's terminal inherits both sets).
# The processes are what the packages really run (checked on the npm registry's
# packages, docs/security.md): Claude Code's native binary (bin/claude.exe of the npm
# package, ~/.local/share/claude/versions/<v> of the native installer; it names
# itself claude) and, before it, `node .../@anthropic-ai/claude-code/cli.js`; Codex's
# `node .../@openai/codex/bin/codex.js` wrapper and the native `codex` it starts;
# Cursor's agent, a bundled `node .../cursor-agent/versions/<v>/index.js`; Gemini
# CLI's `node .../@google/gemini-cli/bundle/gemini.js`, which starts itself again;
# OpenCode's Bun-compiled `.../opencode-ai/bin/opencode.exe` (it names itself opencode).
_HOSTS: tuple[_Host, ...] = (
    _Host(
        "claude-code",
        ("CLAUDECODE",),
        ("CLAUDE_CODE_",),
        ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_REMOTE_SESSION_ID"),
        ("claude-code",),
        programs=("claude",),
        paths=("/@anthropic-ai/claude-code/", "/claude/versions/", "/.claude/local/"),
    ),
    _Host(
        "codex",
        (),
        ("CODEX_",),
        ("CODEX_SESSION_ID", "CODEX_THREAD_ID"),
        ("codex-mcp-client",),
        programs=("codex",),
        paths=("/@openai/codex/", "/@openai/codex-"),
    ),
    _Host(
        "cursor",
        (),
        ("CURSOR_",),
        ("CURSOR_SESSION_ID", "CURSOR_TRACE_ID"),
        programs=("cursor-agent",),
        paths=("/cursor-agent/",),
    ),
    _Host(
        "gemini-cli",
        # Exact: GEMINI_CLI_HOME and the other GEMINI_CLI_* are a person's settings.
        ("GEMINI_CLI",),
        (),
        ("GEMINI_SESSION_ID",),  # only its hooks get it; shells and MCP servers have no id
        ("gemini-cli-mcp-client",),
        programs=("gemini",),
        paths=("/@google/gemini-cli/",),
    ),
    _Host(
        "opencode",
        # Exact: the many documented OPENCODE_* variables are a person's settings; these
        # two are what OpenCode sets itself for everything it starts.
        ("OPENCODE", "OPENCODE_PID"),
        (),
        ("OPENCODE_SESSION_ID",),  # set for its shell commands by setup's plugin
        ("opencode",),
        programs=("opencode",),
        paths=("/opencode-ai/", "/opencode-linux-", "/opencode-darwin-", "/.opencode/bin/"),
    ),
    _Host("ai-agent", ("AI_AGENT",), (), ()),
)
# What every counted variable starts with: most of an environment is skipped at once.
_ANY_VARIABLE = tuple(start for host in _HOSTS for start in (*host.exact, *host.prefixes))
# Programs that run a script named by their first argument that is not an option.
_INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno"})
# Their options that take the next argument as a value; and those after which no
# script follows (the code is on the command line).
_VALUED_OPTIONS = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader"})
_CODE_OPTIONS = frozenset({"-e", "--eval", "-p", "--print"})
_SUFFIXES = (".js", ".cjs", ".mjs", ".exe")

# The id goes verbatim into a locator, so it must not carry separators (";",
# ":"), whitespace or control characters. The explicit ASCII class keeps
# Unicode digits and letters out as well.
_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

_MAX_NAMED = 5

_AGENT_ADVICE = (
    "If you are an agent, do not work around this check: stop and ask a person to run the command."
)

# An exact name is matched with its "=", so that a person's own settings that merely
# start with it (GEMINI_CLI_HOME, OPENCODE_CONFIG) are not listed.
_CHECK_COMMAND = "env | grep -E '^({})'".format(
    "|".join(start for host in _HOSTS for start in (*(f"{n}=" for n in host.exact), *host.prefixes))
)


# Whoever sent a request whose process tree could not be read (no /proc, a hidden
# environment): it could be an agent, so it is restricted like one, never a person.
UNKNOWN_PRINCIPAL = AgentSession(host=UNKNOWN_SESSION, session_id=UNKNOWN_SESSION, variables=())

# A person, as far as detection can tell, while person presence is on and no proof of
# theirs holds for this connection (docs/security.md, "Person presence"). It may do
# all a person does but what only a present person may: those are refused with
# ``presence_required``; its writes are not stamped, since it is no detected agent.
UNPROVEN_PERSON = AgentSession(host="person", session_id="unproven", variables=())


class Process(msgspec.Struct, frozen=True, kw_only=True):
    """What one process runs, as /proc says: ``exe`` (the executable, resolved by the
    kernel), ``argv`` (its command line) and ``name`` (its process name, ``comm``)."""

    exe: str | None
    argv: tuple[str, ...]
    name: str


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
        if not name.startswith(_ANY_VARIABLE) or not _counts(name, value):
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


def detect_agent_host(process: Process) -> AgentSession | None:
    """Detect an agent host by what its process runs.

    Returns:
        The session of the host it is (its id unknown: a host keeps it in what it
        passes its children), naming the executable or script that gave it away;
        ``None`` when it is no known host.
    """
    script = _script(process)
    names = {_program(path) for path in (process.exe, *process.argv[:1], script) if path}
    names.add(process.name)
    paths = [path for path in (process.exe, script) if path]
    for host in _HOSTS:
        if host.runs(names, paths):
            shown = script or process.exe or process.name
            return AgentSession(
                host=host.name, session_id=UNKNOWN_SESSION, variables=(), processes=(shown,)
            )
    return None


def _program(path: str) -> str:
    """The program a path names: its last part, without a script's or binary's suffix."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _script(process: Process) -> str | None:
    """The script an interpreter (node, bun, deno) runs, if the process is one."""
    if process.exe is None or _program(process.exe) not in _INTERPRETERS:
        return None
    arguments = iter(process.argv[1:])
    for argument in arguments:
        if argument in _CODE_OPTIONS:
            return None
        if argument in _VALUED_OPTIONS:
            next(arguments, None)
        elif argument == "run" and _program(process.exe) == "bun":
            continue
        elif not argument.startswith("-"):
            return argument
    return None


def host_of_client(client_name: str | None) -> str | None:
    """The host whose MCP client introduces itself as ``client_name``, if it is a known one."""
    for host in _HOSTS:
        if client_name in host.client_names:
            return host.name
    return None


def merge_sessions(found: Iterable[AgentSession | None]) -> AgentSession | None:
    """Combine detections from a process and its ancestors, nearest first.

    The nearest detection names the host, and the nearest known session id of that
    host is its id (a host found by its process has none of its own); the variable
    names of all detections are unioned so a refusal shows everything a person must
    unset, and the host processes are kept, nearest first.

    Returns:
        The merged session, or ``None`` when nothing was detected.
    """
    sessions = [session for session in found if session is not None]
    if not sessions:
        return None
    first = sessions[0]
    ids = (s.session_id for s in sessions if s.host == first.host)
    names = {name for session in sessions for name in session.variables}
    processes = dict.fromkeys(p for session in sessions for p in session.processes)
    return AgentSession(
        host=first.host,
        session_id=next((i for i in ids if i != UNKNOWN_SESSION), UNKNOWN_SESSION),
        variables=tuple(sorted(names)),
        processes=tuple(processes),
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
        locator unchanged when there is no session (or an unproven person).
    """
    if session is None or session == UNPROVEN_PERSON:
        return locator
    stamp = f"{AGENT_LOCATOR_PREFIX}{session.host}:{session.session_id}"
    if locator is None or not locator.strip():
        return stamp
    return f"{stamp}; {locator}"


def writer_source(claimed: str | None, session: AgentSession | None, person: str) -> str:
    """The source a write is kept under: the one its writer claimed, else the writer's
    own, ``agent:<host>`` for an agent session and ``person`` (``human:<login>``) for
    anyone else, a person who has not proven presence included (that write is not
    verified, and a claim is never proof: the stamp in the locator says who wrote it).
    """
    if claimed is not None and claimed.strip():
        return claimed
    if session is None or session == UNPROVEN_PERSON:
        return person
    return f"agent:{session.host}"


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
    if session == UNPROVEN_PERSON:
        return presence_message(action)
    shown = [_display(name) for name in session.variables[:_MAX_NAMED]]
    rest = len(session.variables) - len(shown)
    named = ", ".join(shown) or "none recorded"
    if rest:
        named += f" and {rest} more"
    if not session.variables and session.processes:
        return _process_message(session, action)
    return (
        f"Refused: {action} needs a person, and this request comes from a detected "
        f"{session.host} agent session (variables: {named}). "
        "If you are a person, run the command from a terminal where none of these "
        "variables is set, such as a plain system terminal; an editor's integrated "
        "terminal or your own shell profile can set them. Check with "
        f"{_CHECK_COMMAND}. If a variable you set yourself is a documented setting "
        "of your agent tool, please open an issue so it stops counting. " + _AGENT_ADVICE
    )


def _process_message(session: AgentSession, action: str) -> str:
    shown = ", ".join(_display(p) for p in session.processes[:2])
    return (
        f"Refused: {action} needs a person, and this request comes from a process started"
        f" by the {session.host} agent host ({shown} is one of its parents). If you are a"
        " person, run the command from a terminal that was not started from inside an"
        " agent (not its shell escape, nor a terminal an agent or an IDE running one"
        " opened), such as a plain system terminal. " + _AGENT_ADVICE
    )


def presence_message(action: str) -> str:
    """The refusal of a person-only action to a person who has not proven presence."""
    return (
        f"Refused: {action} needs a person's presence: a passphrase is set, and no proof"
        " of it holds for this terminal. Run `hikmah presence` in your terminal (it asks"
        " for the passphrase, then person-only commands from that shell work for a few"
        " minutes), or run the command again from it. A process without a terminal, or"
        " one started by an agent, can never prove presence. " + _AGENT_ADVICE
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
    """Refuse ``action`` inside an agent session, and to an unproven person.

    Raises:
        PresenceRequired: ``session`` is :data:`UNPROVEN_PERSON`.
        AgentRestricted: any other session that is not ``None``.
    """
    if session == UNPROVEN_PERSON:
        raise PresenceRequired(presence_message(action))
    if session is not None:
        raise AgentRestricted(restriction_message(session, action))
