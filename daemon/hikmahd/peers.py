"""Who is on the other end of a connection: uid by SO_PEERCRED, agent session by /proc.

The client never says whether it runs inside a coding-agent session; the
daemon reads the environment of the peer process and of its ancestors up to
the session leader, so ``env -i hikmah remember --verified`` run from an
agent's shell is still recognised by that shell's variables. A process that
starts a session of its own (``setsid``) with a cleared environment is not:
detection is a guard, not authentication (see docs/security.md).
"""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hikmah.principal import AgentSession, detect_agent_session, merge_sessions

log = logging.getLogger(__name__)

_UCRED = struct.Struct("3i")
# An environment larger than this is not read further (the kernel allows far less).
_MAX_ENVIRON = 4 << 20
_MAX_ANCESTORS = 64

# A peer whose environment cannot be read is never taken for a person.
UNKNOWN_PEER = AgentSession(host="unknown", session_id="unknown", variables=())


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    gid: int
    session: AgentSession | None


def credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process that connected, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


def identify(sock: socket.socket, proc: Path = Path("/proc")) -> Peer:
    """The peer's credentials and, from its process tree, its agent session."""
    pid, uid, gid = credentials(sock)
    return Peer(pid=pid, uid=uid, gid=gid, session=agent_session(pid, proc))


def agent_session(pid: int, proc: Path = Path("/proc")) -> AgentSession | None:
    """The agent session of ``pid`` or of an ancestor up to its session leader.

    Returns :data:`UNKNOWN_PEER` when the peer's own environment cannot be read.
    """
    found: list[AgentSession | None] = []
    for index, process in enumerate(_lineage(pid, proc)):
        environ = _environ(proc / str(process))
        if environ is None:
            if index == 0:
                log.warning(
                    "cannot read the environment of peer pid %d; treating it as an unknown"
                    " (restricted) principal",
                    pid,
                )
                return UNKNOWN_PEER
            break
        found.append(detect_agent_session(environ))
    return merge_sessions(found)


def _lineage(pid: int, proc: Path) -> Iterator[int]:
    """The pid, then its ancestors up to and including the session leader (never pid 1)."""
    current = pid
    for _ in range(_MAX_ANCESTORS):
        yield current
        stat = _stat(proc / str(current))
        if stat is None:
            return
        parent, session = stat
        if current == session or parent <= 1:
            return
        current = parent


def start_time(pid: int, proc: Path = Path("/proc")) -> int | None:
    """When the process started (clock ticks since boot): with the pid, it names one
    process for good, even after the pid is reused."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _stat(directory: Path) -> tuple[int, int] | None:
    """(ppid, session id) from /proc/<pid>/stat."""
    try:
        text = (directory / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain anything.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _environ(directory: Path) -> dict[str, str] | None:
    try:
        with (directory / "environ").open("rb") as file:
            raw = file.read(_MAX_ENVIRON)
    except OSError:
        return None
    environ: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            environ[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return environ
