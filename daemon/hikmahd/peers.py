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

from hikmah.principal import (
    UNKNOWN_PRINCIPAL,
    AgentSession,
    detect_agent_session,
    merge_sessions,
)

log = logging.getLogger(__name__)

_UCRED = struct.Struct("3i")
# An environment larger than this is not read further (the kernel allows far less).
_MAX_ENVIRON = 4 << 20
_MAX_ANCESTORS = 64

_CONSEQUENCE = (
    "it is treated as an unknown agent session: its writes are stamped"
    " agent-session:unknown:unknown and person-only actions (verified writes, purge,"
    " accepting a ledger tail, resetting the head) are refused"
)


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    gid: int
    session: AgentSession | None


class _Hidden(Exception):
    """A part of the peer's process tree that cannot be read; the message says which."""


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

    Fails closed: a process whose environment or parent cannot be read may hide an
    agent's variables (one unprivileged ``prctl`` makes a process non-dumpable), so
    unless a nearer process was detected the peer is :data:`UNKNOWN_PRINCIPAL`,
    never a person.
    """
    found: list[AgentSession | None] = []
    try:
        for environ in _environments(pid, proc):
            found.append(detect_agent_session(environ))
    except _Hidden as hidden:
        detected = merge_sessions(found)
        if detected is not None:
            return detected
        log.warning(
            "cannot tell whether peer pid %d is a person: %s; %s", pid, hidden, _CONSEQUENCE
        )
        return UNKNOWN_PRINCIPAL
    return merge_sessions(found)


def _environments(pid: int, proc: Path) -> Iterator[dict[str, str]]:
    """The environment of the pid, then of each ancestor up to and including the session
    leader (never pid 1).

    Raises:
        _Hidden: when an environment or a parent cannot be read, or the tree is deeper
            than the walk goes.
    """
    current = pid
    for _ in range(_MAX_ANCESTORS):
        directory = proc / str(current)
        yield _environ(directory, pid, proc)
        parent, session = _stat(directory, pid, proc)
        if current == session or parent <= 1:
            return
        current = parent
    raise _Hidden(f"its process tree is more than {_MAX_ANCESTORS} processes deep")


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


def _stat(directory: Path, peer: int, proc: Path) -> tuple[int, int]:
    """(ppid, session id) from /proc/<pid>/stat."""
    try:
        text = (directory / "stat").read_text()
    except OSError as exc:
        raise _unreadable(directory / "stat", exc, peer, proc) from None
    # The command name (field 2) is in parentheses and may contain anything.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[3])
    except (IndexError, ValueError):
        raise _Hidden(f"{directory / 'stat'} is not a process status") from None


def _environ(directory: Path, peer: int, proc: Path) -> dict[str, str]:
    try:
        with (directory / "environ").open("rb") as file:
            raw = file.read(_MAX_ENVIRON)
    except OSError as exc:
        raise _unreadable(directory / "environ", exc, peer, proc) from None
    environ: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            environ[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return environ


def _unreadable(path: Path, error: OSError, peer: int, proc: Path) -> _Hidden:
    """Say plainly why a file of the peer's process tree could not be read."""
    if not (proc / "self").exists():
        return _Hidden(
            f"{proc} is not available to hikmahd (no {proc / 'self'}: not mounted, or"
            " hidden in its mount namespace), so no peer's environment can be read"
        )
    whose = "the peer itself" if path.parent.name == str(peer) else "an ancestor of the peer"
    return _Hidden(
        f"cannot read {path} ({error.strerror or error}), the process is {whose};"
        " a non-dumpable process or another user's hides its environment, and it could"
        " be an agent session's"
    )


class Restrictions:
    """The processes that lowered their own privileges (``session.restrict``), by pid and
    start time: every connection such a process makes later is restricted too."""

    def __init__(self) -> None:
        self.restricted: dict[tuple[int, int | None], AgentSession] = {}

    def of(self, peer: Peer) -> AgentSession | None:
        """The session ``peer``'s process declared, if it restricted itself."""
        return self.restricted.get((peer.pid, start_time(peer.pid)))

    def restrict(self, peer: Peer, session: AgentSession) -> None:
        """Restrict ``peer``'s process (its first declaration stays)."""
        # Forget processes that have exited (their pid may come back as another).
        self.restricted = {k: v for k, v in self.restricted.items() if start_time(k[0]) == k[1]}
        self.restricted.setdefault((peer.pid, start_time(peer.pid)), session)
