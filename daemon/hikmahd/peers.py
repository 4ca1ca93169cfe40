"""Who is on the other end of a connection: uid by SO_PEERCRED, the very process by a
pidfd, agent session and terminal by /proc.

A connection is bound at accept to the process that opened it
(:class:`BoundProcess`: the kernel's ``SO_PEERPIDFD``, a pidfd of the connecting
process itself, where the kernel has it, since Linux 6.5; else ``pidfd_open``
of its pid and its start time). Its tree is examined then, and the connection
serves only while that process lives: a socket handed to another process
(SCM_RIGHTS) and outliving its opener is closed, so a pid that comes back as
the person's shell never speaks on a connection an agent's child opened.

The client never says whether it runs inside a coding-agent session; the
daemon reads the peer and every ancestor up to pid 1 (or the user's service
manager): each one's environment for an agent's variables, and what each runs
for an agent host itself (:func:`hikmah.access.principal.detect_agent_host`). So
``exec env -i hikmah remember --verified`` or ``setsid env -i …`` run from an
agent's shell still have the host above them. A process reparented away from
its agent (``setsid -f``, ``nohup … &`` then exit, a double fork) has no agent
above it: detection is a guard, not authentication, and person presence is
what closes that (docs/security.md). For a person the walk also gives the
:class:`Terminal` a proof of presence binds to.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from hikmah.access.principal import (
    UNKNOWN_PRINCIPAL,
    AgentSession,
    Process,
    detect_agent_host,
    detect_agent_session,
    merge_sessions,
)

log = logging.getLogger(__name__)

_UCRED = struct.Struct("3i")
# getsockopt(SOL_SOCKET, SO_PEERPIDFD): a pidfd of the peer that connected (Linux 6.5);
# Python names it from 3.13 on (the same number on every architecture).
SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
# An environment or command line larger than this is not read further (the kernel
# allows far less).
_MAX_ENVIRON = 4 << 20
_MAX_ANCESTORS = 64
_PTS_MAJORS = range(136, 144)

_CONSEQUENCE = (
    "it is treated as an unknown agent session: its writes are stamped"
    " agent-session:unknown:unknown and person-only actions (verified writes, purge,"
    " accepting a ledger tail, resetting the head) are refused"
)


@dataclass(frozen=True)
class Terminal:
    """Where a person's process runs: the terminal, its session, and the shell that
    started the process. A proof of presence holds for exactly this.

    Attributes:
        tty: The controlling terminal's device number.
        session: The session id, and ``leader_start`` its leader's start time (so a
            later session that reuses the id is another one).
        shell: The parent's pid, and ``shell_start`` its start time: an agent the
            shell started is a child of the shell, so its own children are not.
    """

    tty: int
    session: int
    leader_start: int
    shell: int
    shell_start: int

    @property
    def name(self) -> str:
        """The terminal's device path, for messages (``/dev/pts/3``)."""
        major, minor = (self.tty >> 8) & 0xFFF, (self.tty & 0xFF) | ((self.tty >> 12) & 0xFFF00)
        if major in _PTS_MAJORS:
            return f"/dev/pts/{(major - _PTS_MAJORS.start) * 256 + minor}"
        return f"/dev/tty{minor}" if major == 4 else f"tty {major}:{minor}"


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    gid: int
    session: AgentSession | None
    terminal: Terminal | None = None
    start: int | None = None  # the process's start time: with the pid, one process for good


class _Hidden(Exception):
    """A part of the peer's process tree that cannot be read; the message says which."""


class OverBudget(Exception):
    """A walk given a budget met more command lines and environments to read than it
    allows: walk again without one, off the event loop."""


class _Stat(NamedTuple):
    ppid: int
    session: int
    tty: int
    start: int
    name: str  # the command name, which an exec changes
    size: int | None  # of its command line and environment (None: the kernel does not say)


@dataclass(frozen=True)
class _Seen:
    """What a walk learned of one process: whether it runs privileged, is the user's
    service manager, or else what its environment and program say of an agent (or why
    its environment could not be read)."""

    name: str
    exe: str | None
    privileged: bool = False
    user_manager: bool = False
    detected: tuple[AgentSession | None, AgentSession | None] | None = None
    hidden: str | None = None


class KnownProcesses:
    """The processes earlier walks read, by pid and start time, so that a connection
    reads only what is new: a client's ancestors (its shell, the terminal, an agent
    host) are the same from one call to the next.

    What is kept stays true while the process runs the same program: a process met
    again is read afresh when its command name or executable changed (an exec), and
    its parent is always read afresh (a process whose parent exits moves to an
    ancestor of it). A process of the same pid with another start time is another
    process. What a process's environment said is only ever kept as it was first
    read: an agent's marks found once stay found.
    """

    def __init__(self, limit: int = 4096, proc: Path = Path("/proc")) -> None:
        self.limit = limit
        self.own_uid, self.own_caps = os.getuid(), _capabilities(proc / "self" / "status")
        self._seen: dict[tuple[int, int], _Seen] = {}

    def get(self, pid: int, stat: _Stat, exe: str | None) -> _Seen | None:
        seen = self._seen.get((pid, stat.start))
        if seen is None or seen.name != stat.name or seen.exe != exe:
            return None
        return seen

    def keep(self, pid: int, stat: _Stat, seen: _Seen) -> None:
        if len(self._seen) >= self.limit:
            # The oldest half goes (most are of processes that have exited).
            for key in list(self._seen)[: self.limit // 2]:
                del self._seen[key]
        self._seen[(pid, stat.start)] = seen


def credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process that connected, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


class BoundProcess:
    """The process a connection was accepted for, as long as it lives.

    With a pidfd (the peer's own from ``SO_PEERPIDFD``, or ``pidfd_open`` of its pid)
    :meth:`alive` is the kernel's word; without pidfds at all (Linux before 5.3), the
    pid's start time must stay the one seen at accept. ``pidfd_open`` of a pid that
    was reused between the connect and the accept would name another process: the
    kernel's own pidfd leaves no such window.
    """

    def __init__(self, pid: int, pidfd: int | None, start: int | None) -> None:
        self.pid, self.pidfd, self.start = pid, pidfd, start

    @classmethod
    def of(cls, sock: socket.socket, pid: int, proc: Path = Path("/proc")) -> BoundProcess:
        """The process that opened ``sock`` (``pid``, by SO_PEERCRED).

        Raises:
            ProcessLookupError: it has exited already.
        """
        pidfd: int | None
        try:
            pidfd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
        except OSError:
            try:
                pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                raise
            except OSError:
                pidfd = None  # no pidfds on this kernel
        bound = cls(pid, pidfd, start_time(pid, proc))
        if not bound.alive():
            bound.close()
            raise ProcessLookupError(pid)
        return bound

    def alive(self) -> bool:
        """Whether the process is still running (a pidfd turns readable when it exits)."""
        if self.pidfd is not None:
            poller = select.poll()
            poller.register(self.pidfd, select.POLLIN)
            return not poller.poll(0)
        return self.start is not None and start_time(self.pid) == self.start

    def close(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None


def agent_session(pid: int, proc: Path = Path("/proc")) -> AgentSession | None:
    """The agent session of ``pid`` or of an ancestor (see :func:`examine`)."""
    return examine(pid, proc)[0]


def examine(
    pid: int,
    proc: Path = Path("/proc"),
    known: KnownProcesses | None = None,
    budget: int | None = None,
) -> tuple[AgentSession | None, Terminal | None]:
    """The agent session of ``pid`` or of any ancestor; for a person, their terminal.
    ``known``: what earlier walks read (:class:`KnownProcesses`), read again only where
    it may have changed. ``budget``: at most this many bytes of command lines and
    environments are read, else :class:`OverBudget` is raised (a walk cheap enough to
    run on the event loop, or none).

    Fails closed: a process of the peer's own session whose environment or parent
    cannot be read may hide an agent's variables (one unprivileged ``prctl`` makes a
    process non-dumpable), so unless a nearer process was detected the peer is
    :data:`UNKNOWN_PRINCIPAL`, never a person. Above the session, a hidden process
    whose parent is privileged (``sshd``'s session process, forked by root) is the
    login's own machinery, and the walk goes on past it.
    """
    walk = _Walk(pid, proc, KnownProcesses(proc=proc) if known is None else known, budget)
    found: list[AgentSession | None] = []
    try:
        for marks in walk:
            found.extend(marks)
    except _Hidden as hidden:
        detected = merge_sessions(found)
        if detected is not None:
            return detected, None
        log.warning(
            "cannot tell whether peer pid %d is a person: %s; %s", pid, hidden, _CONSEQUENCE
        )
        return UNKNOWN_PRINCIPAL, None
    detected = merge_sessions(found)
    return detected, None if detected is not None else walk.terminal()


class _Walk:
    """The peer and its ancestors, as what the environment and the program of each one
    say of an agent (a privileged ancestor's are not read: it is no agent's)."""

    def __init__(self, pid: int, proc: Path, known: KnownProcesses, budget: int | None) -> None:
        self.pid, self.proc, self.known, self.budget = pid, proc, known, budget
        self.stats: dict[int, _Stat] = {}
        self.own_uid, self.own_caps = known.own_uid, known.own_caps

    def __iter__(self) -> Iterator[tuple[AgentSession | None, AgentSession | None]]:
        current = self.pid
        for _ in range(_MAX_ANCESTORS):
            directory = f"{self.proc}/{current}"
            stat = self._stat(directory)  # always afresh: the parent may have changed
            self.stats[current] = stat
            seen = self._seen(current, directory, stat)
            if seen.user_manager:
                return  # the root of the user's own processes
            if seen.hidden is not None and not self._login_machinery(stat):
                raise _Hidden(seen.hidden)
            if seen.detected is not None:
                yield seen.detected
            if stat.ppid <= 1:
                return
            current = stat.ppid
        raise _Hidden(f"its process tree is more than {_MAX_ANCESTORS} processes deep")

    def _seen(self, pid: int, directory: str, stat: _Stat) -> _Seen:
        """What ``pid`` is, as a walk met it before or read now."""
        exe = _exe(directory)
        if (seen := self.known.get(pid, stat, exe)) is not None:
            return seen
        if self._privileged(directory):
            seen = _Seen(stat.name, exe, privileged=True)
        else:
            if self.budget is not None:
                if stat.size is None or stat.size > self.budget:
                    raise OverBudget(f"pid {pid}: {stat.size} bytes to read")
                self.budget -= stat.size
            process = self._process(directory, exe, stat.name)
            if _user_manager(process, stat):
                seen = _Seen(stat.name, exe, user_manager=True)
            else:
                try:
                    environ = self._environ(directory)
                except _Hidden as hidden:
                    return _Seen(stat.name, exe, hidden=str(hidden))  # read again next time
                detected = (detect_agent_session(environ), detect_agent_host(process))
                seen = _Seen(stat.name, exe, detected=detected)
        self.known.keep(pid, stat, seen)
        return seen

    def terminal(self) -> Terminal | None:
        """The peer's terminal, if it has one and is a descendant of its session leader
        (an orphan reparented away from it has no shell to bind a proof to)."""
        peer = self.stats.get(self.pid)
        if peer is None or peer.tty == 0:
            return None
        leader, shell = self.stats.get(peer.session), self.stats.get(peer.ppid)
        if leader is None or shell is None:
            return None
        return Terminal(peer.tty, peer.session, leader.start, peer.ppid, shell.start)

    def _login_machinery(self, stat: _Stat) -> bool:
        """Whether a hidden process is above the peer's session, forked by a privileged
        parent that it dropped privileges from (it can hide nothing an agent set)."""
        if stat.session == self.stats[self.pid].session or stat.ppid <= 1:
            return False
        try:
            return self._privileged(f"{self.proc}/{stat.ppid}")
        except _Hidden:
            return False

    def _privileged(self, directory: str) -> bool:
        """Whether the process runs as another user, or with capabilities we lack."""
        text = self._read(f"{directory}/status").decode("utf-8", "replace")
        uids = _field(text, "Uid:")
        if not uids:
            raise _Hidden(f"{directory}/status is not a process status")
        caps = _capabilities_of(text)
        return any(int(uid) != self.own_uid for uid in uids) or bool(caps & ~self.own_caps)

    def _stat(self, directory: str) -> _Stat:
        """ppid, session, controlling terminal and start time from /proc/<pid>/stat."""
        stat = _parse_stat(self._read(f"{directory}/stat").decode("utf-8", "replace"))
        if stat is None:
            raise _Hidden(f"{directory}/stat is not a process status")
        return stat

    def _process(self, directory: str, exe: str | None, name: str) -> Process:
        raw = self._read(f"{directory}/cmdline")
        argv = tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1])
        return Process(exe=exe, argv=argv, name=name)

    def _read(self, path: str) -> bytes:
        try:
            return _read_proc(path)
        except OSError as exc:
            raise self._unreadable(Path(path), exc) from None

    def _environ(self, directory: str) -> dict[str, str]:
        raw = self._read(f"{directory}/environ")
        environ: dict[str, str] = {}
        for entry in raw.split(b"\0"):
            name, sep, value = entry.partition(b"=")
            if sep and name:
                environ[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        return environ

    def _unreadable(self, path: Path, error: OSError) -> _Hidden:
        """Say plainly why a file of the peer's process tree could not be read."""
        if not (self.proc / "self").exists():
            return _Hidden(
                f"{self.proc} is not available to hikmahd (no {self.proc / 'self'}: not"
                " mounted, or hidden in its mount namespace), so no peer's environment can"
                " be read"
            )
        peer = path.parent.name == str(self.pid)
        whose = "the peer itself" if peer else "an ancestor of the peer"
        return _Hidden(
            f"cannot read {path} ({error.strerror or error}), the process is {whose};"
            " a non-dumpable process or another user's hides its environment, and it could"
            " be an agent session's"
        )


def _parse_stat(text: str) -> _Stat | None:
    # The command name (field 2) is in parentheses and may contain anything.
    end = text.rfind(")")
    name = text[text.find("(") + 1 : end]
    fields = text[end + 2 :].split()
    try:
        ppid, session, tty, start = (int(fields[i]) for i in (1, 3, 4, 19))
    except (IndexError, ValueError):
        return None
    try:  # fields 48 to 51 (since Linux 3.5): where the command line and environment are
        arg_start, arg_end, env_start, env_end = (int(fields[i]) for i in range(45, 49))
        size: int | None = arg_end - arg_start + env_end - env_start
    except (IndexError, ValueError):
        size = None
    return _Stat(ppid, session, tty, start, name, size)


def _exe(directory: str) -> str | None:
    try:
        return os.readlink(f"{directory}/exe")
    except OSError:
        return None  # a kernel thread, or hidden: its environment says which


def _field(status: str, name: str) -> list[str]:
    for line in status.splitlines():
        if line.startswith(name):
            return line[len(name) :].split()
    return []


def _capabilities_of(status: str) -> int:
    effective = _field(status, "CapEff:")
    return int(effective[0], 16) if effective else 0


def _capabilities(path: Path) -> int:
    try:
        return _capabilities_of(path.read_text())
    except OSError:
        return 0


def _user_manager(process: Process, stat: _Stat) -> bool:
    """Whether this is the user's service manager (``systemd --user``, started by pid 1):
    everything of the user's descends from it, and nothing above it is theirs."""
    exe = process.exe or ""
    return stat.ppid == 1 and exe.rsplit("/", 1)[-1] == "systemd" and "--user" in process.argv


def start_time(pid: int, proc: Path = Path("/proc")) -> int | None:
    """When the process started (clock ticks since boot): with the pid, it names one
    process for good, even after the pid is reused."""
    try:
        stat = _parse_stat(_read_proc(f"{proc}/{pid}/stat").decode("utf-8", "replace"))
    except OSError:
        return None
    return None if stat is None else stat.start


def _read_proc(path: str) -> bytes:
    """A file of /proc whole, up to :data:`_MAX_ENVIRON` bytes, in reads of 64 KiB (one
    read of the limit would first make a buffer that large: 20 µs a file)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks: list[bytes] = []
        size = 0
        while size < _MAX_ENVIRON and (chunk := os.read(fd, 64 << 10)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)[:_MAX_ENVIRON]


class Restrictions:
    """The processes that lowered their own privileges (``session.restrict``), by pid and
    start time: every connection such a process makes later is restricted too."""

    def __init__(self) -> None:
        self.restricted: dict[tuple[int, int | None], AgentSession] = {}

    def of(self, peer: Peer) -> AgentSession | None:
        """The session ``peer``'s process declared, if it restricted itself."""
        start = start_time(peer.pid) if peer.start is None else peer.start
        return self.restricted.get((peer.pid, start))

    def restrict(self, peer: Peer, session: AgentSession) -> None:
        """Restrict ``peer``'s process (its first declaration stays)."""
        # Forget processes that have exited (their pid may come back as another).
        self.restricted = {k: v for k, v in self.restricted.items() if start_time(k[0]) == k[1]}
        self.restricted.setdefault((peer.pid, start_time(peer.pid)), session)
