"""The daemon's composition root: it builds every part, serves the methods, owns the server.

:class:`Daemon` makes the writer, the recall scheduler, the reminders, the
events, the focus capsules and the policy watcher around one open store, hands
the method handlers a :class:`~hikmahd.services.Services` of them (never
itself), and serves every handler module's registry (:data:`REGISTRIES`).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import logging
import os
import resource
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

import msgspec
import trio

from hikmah.access.principal import AgentSession
from hikmah.model.errors import Forbidden, Unavailable
from hikmah.model.policy import KernelPolicy
from hikmah.store.core import DEFAULT_MAP_SIZE, MAX_MAP_SIZE, Store

from .capsules import Capsules
from .connection import Connection
from .context import Context
from .events import Events
from .handlers import (
    focus,
    learning,
    ledger,
    memory,
    presence,
    promises,
    replay,
    review,
    service,
    sync,
    transfer,
    vault,
)
from .inbox import Inbox
from .listen import (
    SocketError,
    bind_socket,
    inherited_socket,
    notify_systemd,
    trio_listener,
    unlink_if_ours,
)
from .notify import DesktopNotifier
from .peers import (
    BoundProcess,
    KnownProcesses,
    OverBudget,
    Peer,
    Restrictions,
    credentials,
    examine,
)
from .policywatch import PolicyHolder
from .prescreen import Prescreen
from .reminders import Reminders
from .replay import Replay
from .rpc import Dispatcher, error_for, response
from .scheduling import (
    IdleThread,
    Offload,
    OwnThread,
    QueryThread,
    Recalls,
    in_thread,
    threads_of_their_own,
    wall_ms,
)
from .semantics import Semantics
from .services import Services
from .syncing import Syncing
from .tickets import Tickets
from .vaulting import Vault
from .writer import Writer

log = logging.getLogger(__name__)
_ENCODER = msgspec.json.Encoder()
# Every module of JSON-RPC methods the daemon serves.
REGISTRIES = tuple(
    module.registry
    for module in (
        memory,
        learning,
        transfer,
        replay,
        ledger,
        promises,
        focus,
        vault,
        presence,
        review,
        sync,
        service,
    )
)

# How long after the daemon takes connections its background work starts (the first
# answers after a start come within a tenth of a second).
SETTLE_S = 0.15
# How long in-flight replies may take once a stop was asked for.
STOP_GRACE_S = 2.0
IDLE_SWEEP_S = 60.0
# Connections one process may hold at once: a runaway client (or an agent opening
# connections in a loop) cannot take every descriptor the daemon has.
MAX_CONNECTIONS_PER_PROCESS = 64
# Threads that walk /proc for new peers, apart from the shared pool (recalls, exports).
IDENTIFY_THREADS = 4
# A walk of the peer's process tree reads this much of new processes' command lines and
# environments on the event loop at most (a shell's are a few KiB), the rest in a thread.
INLINE_READ_BYTES = 64 << 10


@dataclass(frozen=True)
class Config:
    socket_path: Path
    data_dir: Path
    policy_path: Path
    durable: bool = True
    max_store_bytes: int = MAX_MAP_SIZE


class DaemonError(Exception):
    """The daemon cannot start; the message says why and what to do."""


class Daemon:
    def __init__(
        self,
        config: Config,
        store: Store,
        *,
        now_ms: Callable[[], int] = wall_ms,
        notifier: DesktopNotifier | None = None,
        offload: Offload = in_thread,
        background: Offload | None = None,
        vault: Vault | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.now_ms = now_ms
        self.policies = PolicyHolder(config.policy_path, vault_on=vault is not None)
        self.events = Events()
        policy = self.policies.in_force
        # The writer's commits and the vectors' follower each run on a thread of their own
        # (tests pass an offload): the follower's at idle priority.
        own = offload is in_thread
        self.writer_thread = OwnThread("hikmahd-writer") if own else None
        self.writer = Writer(store, policy, now_ms=now_ms, offload=self.writer_thread or offload)
        notifier = notifier or DesktopNotifier()
        self.reminders = Reminders(
            store,
            self.writer,
            self.events,
            notifier,
            now_ms,
            self.policy.reminders.lead_minutes,
            offload,
        )
        self.inbox = Inbox(store, self.events, notifier, policy, offload)
        self.background = IdleThread("hikmahd-vectors") if own else None
        self.semantics = Semantics(store, policy, offload, background or self.background or offload)
        self.syncing = Syncing(
            store, self.writer, self.policies, vault, self.reminders, now_ms, offload
        )
        # Every durable batch updates the promise queue, tells the subscribers, is
        # published to the sync folder, and marks when the vectors may fold and save.
        self.writer.listeners = (
            self.reminders.on_commit,
            self.events.changed,
            self.syncing.on_commit,
            self.semantics.on_commit,
            self.inbox.on_commit,
        )
        self.replay = Replay(store, self.events, offload, policy)
        self.capsules = Capsules()
        self.query_thread = QueryThread()
        self.prescreen = Prescreen()
        self.services = Services(
            store=store,
            writer=self.writer,
            recalls=Recalls(store, policy, now_ms, offload, self.query_thread),
            reminders=self.reminders,
            events=self.events,
            capsules=self.capsules,
            policies=self.policies,
            semantics=self.semantics,
            prescreen=self.prescreen,
            restrictions=Restrictions(),
            tickets=Tickets(),
            vault=vault,
            syncing=self.syncing,
            now_ms=now_ms,
            offload=offload,
            started=time.monotonic(),
            socket_path=config.socket_path,
            stop=self.stop,
        )
        self.dispatcher = Dispatcher(
            *REGISTRIES, offload=offload, ready=self.services.presence_read
        )
        self.connections: set[Connection] = set()
        self.per_process: Counter[int] = Counter()
        self._capped: set[int] = set()
        self._identify = threads_of_their_own(IDENTIFY_THREADS)
        self._known = KnownProcesses()
        self._stopping = trio.Event()

    def _policy_changed(self) -> None:
        self.reminders.set_lead(self.policy.reminders.lead_minutes)
        self.semantics.policy_changed()
        self.inbox.policy_changed()

    async def _close_idle_capsules(self) -> None:
        while True:
            await trio.sleep(IDLE_SWEEP_S)
            idle_ms = self.policy.focus.idle_minutes * 60_000
            for name in self.capsules.close_idle(self.now_ms(), idle_ms):
                log.info("closed focus capsule %r after %d idle minutes", name, idle_ms // 60_000)

    @property
    def policy(self) -> KernelPolicy:
        return self.policies.policy

    def stop(self, why: str) -> None:
        """Stop serving: :meth:`_serve` then commits the queued writes and exits."""
        if not self._stopping.is_set():
            log.info("stopping %s", why)
            self._stopping.set()

    async def serve(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until SIGTERM, SIGINT or ``daemon.stop``; writes queued by then are
        committed first."""
        # Signals are ours before the socket exists: a client that sees the socket may
        # signal at once (a reload right after the start), and SIGHUP's default kills.
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            raw = inherited_socket()
            inode = None
            try:
                if raw is None:
                    raw = bind_socket(self.config.socket_path)
                    inode = self.config.socket_path.stat().st_ino
                else:
                    self.services.socket_activated = True
            except (SocketError, OSError) as exc:
                raise DaemonError(str(exc)) from None
            address = raw.getsockname()
            if isinstance(address, str) and address:
                self.services.socket_path = Path(address)  # under socket activation, systemd's
            try:
                await self._serve(trio_listener(raw), signals, task_status)
            finally:
                if inode is not None:
                    unlink_if_ours(self.config.socket_path, inode)

    async def _serve(
        self,
        listener: trio.SocketListener,
        signals: AsyncIterator[int],
        task_status: trio.TaskStatus[None],
    ) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.writer.run)
            # What the first answers need, read in threads at once; and the review inbox's
            # count, which a write's notification is told from.
            nursery.start_soon(self._read_columns)
            nursery.start_soon(self._read_presence)
            nursery.start_soon(self.inbox.run)
            nursery.start_soon(self.prescreen.run)
            # Before any write: a store restored behind what it published takes it back.
            await nursery.start(self.syncing.run)
            accept_scope = trio.CancelScope()
            connections = await nursery.start(self._accept, listener, accept_scope)
            semantic_scope = trio.CancelScope()
            nursery.start_soon(self._background, nursery, semantic_scope)
            notify_systemd("READY=1")
            log.info("hikmahd %d serving %s", os.getpid(), self.config.socket_path)
            task_status.started()
            nursery.start_soon(self._on_signals, signals)
            await self._stopping.wait()
            notify_systemd("STOPPING=1")
            accept_scope.cancel()
            self.semantics.interrupt()
            semantic_scope.cancel()
            await self.writer.close()
            await self.semantics.save()
            with trio.move_on_after(STOP_GRACE_S):
                while any(not c.closed for c in self.connections):
                    await trio.sleep(0.05)
            connections.cancel()
            nursery.cancel_scope.cancel()
        self.query_thread.close()
        for thread in (self.writer_thread, self.background):
            if thread is not None:
                thread.close()

    async def _on_signals(self, signals: AsyncIterator[int]) -> None:
        """SIGHUP reloads the policy; SIGTERM and SIGINT stop the daemon."""
        async for signum in signals:
            if signum == signal.SIGHUP:
                if self.policies.reload():
                    self._policy_changed()
            else:
                self.stop(f"on signal {signum}")

    async def _background(self, nursery: trio.Nursery, semantic_scope: trio.CancelScope) -> None:
        """What runs beside the requests, started :data:`SETTLE_S` after connections are
        taken: loading (the policy watch's library, the promise queue, the model and the
        vectors) holds the interpreter for a second or more at a million traces, and the
        first callers after a start (the command that started the daemon, an agent's
        session start) are answered first. Each catches up with what was written
        meanwhile. The promise queue comes before the semantic channel: reminders are
        due on time."""
        await trio.sleep(SETTLE_S)
        nursery.start_soon(self.policies.watch, self._policy_changed)
        nursery.start_soon(self.replay.run)
        nursery.start_soon(self._close_idle_capsules)
        await nursery.start(self.reminders.run)
        nursery.start_soon(self._semantics, semantic_scope)

    async def _read_presence(self) -> None:
        """Person presence off the loop: the store reads it from every ledger record on
        first use, which would otherwise be the first person-only request's, on the loop."""
        await self.services.offload(lambda: self.store.presence)

    async def _read_columns(self) -> None:
        """The feature columns off the loop, as soon as the daemon serves: read on first
        use otherwise, by the first recall or status, which would wait for all of them."""

        def read() -> None:
            with self.store.snapshot() as snapshot:
                snapshot.dated()

        await self.services.offload(read)

    async def _semantics(self, scope: trio.CancelScope) -> None:
        with scope:
            await self.semantics.run()

    async def _accept(
        self,
        listener: trio.SocketListener,
        accept_scope: trio.CancelScope,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections until ``accept_scope`` is cancelled; connections live in a
        nursery of their own whose scope is handed back, so a stop can end them later."""
        async with trio.open_nursery() as connections:
            task_status.started(connections.cancel_scope)
            with accept_scope:
                async with listener:
                    while True:
                        try:
                            stream = await listener.accept()
                        except OSError as exc:
                            log.warning("accept failed: %s", exc)
                            await trio.sleep(0.1)
                            continue
                        connections.start_soon(self._connection, stream)

    async def _connection(self, stream: trio.SocketStream) -> None:
        """Serve one accepted connection: bound to the process that opened it and its
        peer identified now, in this task of its own (a worker thread walks /proc), so
        the accept loop never waits for /proc and nothing the process does later (exit
        and leave its socket to another) changes who it was."""
        async with stream:
            sock = stream.socket
            try:
                pid, uid, gid = credentials(sock)  # type: ignore[arg-type]
            except OSError as exc:
                log.warning("cannot identify a peer: %s", exc)
                return
            if uid != os.getuid():
                log.warning("refused a connection from uid %d (pid %d)", uid, pid)
                await self._refuse(stream, Forbidden("hikmahd serves only its own user"))
                return
            if self.per_process[pid] >= MAX_CONNECTIONS_PER_PROCESS:
                if pid not in self._capped:  # once until its connections are gone
                    self._capped.add(pid)
                    log.warning(
                        "pid %d holds %d connections: refusing more", pid, self.per_process[pid]
                    )
                busy = f"this process holds {MAX_CONNECTIONS_PER_PROCESS} connections to hikmahd"
                await self._refuse(stream, Unavailable(f"{busy} already: close some, or reuse one"))
                return
            try:
                bound = BoundProcess.of(sock, pid)  # type: ignore[arg-type]
            except ProcessLookupError:
                log.info("pid %d connected and exited before its connection was accepted", pid)
                return
            self.per_process[pid] += 1
            try:
                await self._serve_peer(stream, bound, uid, gid)
            finally:
                self._release(pid)
                bound.close()

    def _release(self, pid: int) -> None:
        self.per_process[pid] -= 1
        if self.per_process[pid] <= 0:
            del self.per_process[pid]
            self._capped.discard(pid)

    async def _refuse(self, stream: trio.SocketStream, error: Exception) -> None:
        """Send one error line (best effort: the peer may be gone) before closing."""
        assert isinstance(error, Forbidden | Unavailable)
        line = _ENCODER.encode(response(None, error=error_for(error))) + b"\n"
        with (
            trio.move_on_after(1.0),
            contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
        ):
            await stream.send_all(line)

    async def _serve_peer(
        self, stream: trio.SocketStream, bound: BoundProcess, uid: int, gid: int
    ) -> None:
        pid = bound.pid

        def walk(budget: int | None) -> tuple[Peer, AgentSession | None]:
            session, terminal = examine(pid, known=self._known, budget=budget)
            peer = Peer(
                pid=pid, uid=uid, gid=gid, session=session, terminal=terminal, start=bound.start
            )
            return peer, self.services.restrictions.of(peer)

        # Ancestors met before are known (only their stat is read again), so a walk
        # mostly reads the new peer's own small files: on the loop, it costs less than
        # a thread's round trip. One with more to read goes to a thread.
        # A process that restricted itself once stays restricted on every connection.
        try:
            peer, declared = walk(INLINE_READ_BYTES)
        except OverBudget:
            peer, declared = await self._identify(partial(walk, None))
        if not bound.alive():
            # What /proc said may be of another process that took the pid since.
            log.info("pid %d exited while it was identified", pid)
            return
        context = Context(self.services, peer)
        context.declared = declared
        connection = Connection(stream, context, self.dispatcher, bound)
        self.connections.add(connection)
        try:
            await connection.serve()
        except Exception:
            log.exception("connection from pid %d failed", pid)
        finally:
            self.connections.discard(connection)


class DataDirLock:
    """One daemon per data directory: an advisory lock held while it runs."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = data_dir / "hikmahd.lock"
        self._file: IO[str] | None = None

    def __enter__(self) -> DataDirLock:
        file = self.path.open("a+")
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            raise DaemonError(
                f"another hikmahd is using {self.path.parent}; stop it first"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()


def settle_collector() -> None:
    """Keep the cyclic garbage collector off what lives as long as the daemon: the
    modules, the store and what opening it read are frozen, never walked again by a
    full collection. Its time in a 100k import went from about 1.1 to 0.65 s. No
    collection comes first: it would hold the first answers for about 15 ms, and finds
    a few dozen objects. How often it collects stays Python's: a reference cycle that
    holds a resource (a read transaction's reader slot) lasts no longer than before."""
    gc.freeze()


def raise_descriptor_limit() -> None:
    """Allow as many open descriptors as the hard limit does: each connection holds one,
    and a soft limit of 1,024 would refuse connections long before the per-process cap."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the descriptor limit from %d: %s", soft, exc)


def run(config: Config, vault: Vault | None) -> None:
    """Open the store (with the vault's keys when the policy enabled it: ``vault``) and
    serve until stopped."""
    raise_descriptor_limit()
    with (
        DataDirLock(config.data_dir),
        Store(
            config.data_dir,
            durable=config.durable,
            map_size=min(DEFAULT_MAP_SIZE, config.max_store_bytes),
            max_map_size=config.max_store_bytes,
            vault=None if vault is None else vault.load,
        ) as store,
    ):
        if vault is not None:
            vault.settle(store)
        daemon = Daemon(config, store, vault=vault)
        settle_collector()
        trio.run(daemon.serve)
