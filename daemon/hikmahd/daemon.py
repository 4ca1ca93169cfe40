"""The daemon: the store, the writer, the policy, and the server around them."""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import trio

from hikmah.errors import Forbidden
from hikmah.policy import KernelPolicy
from hikmah.principal import AgentSession, declared_session
from hikmah.recall import RecallQuery, RecallResult, recall
from hikmah.rules import Outcome, Written
from hikmah.store import DEFAULT_MAP_SIZE, MAX_MAP_SIZE, Store
from hikmah.vocabulary import Status

from . import learning, methods, transfer, vaulting
from .capsules import Capsules
from .connection import Connection
from .context import Context
from .events import Events
from .listen import (
    SocketError,
    bind_socket,
    inherited_socket,
    notify_systemd,
    trio_listener,
    unlink_if_ours,
)
from .notify import DesktopNotifier
from .peers import identify, start_time
from .policywatch import PolicyHolder
from .reminders import Reminders
from .replay import Replay
from .rpc import Dispatcher, error_for, response
from .turns import Turns
from .vaulting import Vault
from .writer import Offload, Writer, in_thread

log = logging.getLogger(__name__)
# Every module of JSON-RPC methods the daemon serves.
REGISTRIES = (methods.registry, learning.registry, transfer.registry, vaulting.registry)

# A recall shorter than the interpreter's switch interval holds the GIL to its
# end in a worker thread too, so the thread gives the event loop nothing and
# costs a hop (about 0.3 ms here); recalls that take longer (large stores) run
# in a thread, where the loop gets the GIL back every interval and timers
# (reminders) stay on time. Decided by the recent average.
INLINE_RECALL_S = sys.getswitchinterval() / 2

# How long in-flight replies may take once a stop was asked for.
STOP_GRACE_S = 2.0
IDLE_SWEEP_S = 60.0


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def changes(written: Written) -> list[tuple[str, Status]]:
    """(trace id, new status) of every trace one write changed."""
    trace = written.trace
    if trace is None:
        return [(written.id, written.status)]  # a fulfil or a purge
    found: list[tuple[str, Status]] = [(trace.id, "active")]
    if trace.supersedes is not None:
        found.append((trace.supersedes, "superseded"))
    if trace.fulfills is not None:
        found.append((trace.fulfills, "fulfilled"))
    return found


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
        vault: Vault | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.vault = vault
        self.now_ms = now_ms
        self.started = time.monotonic()
        self.policies = PolicyHolder(config.policy_path, vault_on=vault is not None)
        self.offload = offload
        # Recall runs one at a time, readers first (turns.py); off the event loop
        # while recalls take long (see INLINE_RECALL_S). Assumed long until measured:
        # the first one loads the feature columns.
        self.recall_turns = Turns()
        self._recall_s = INLINE_RECALL_S
        self.writer = Writer(store, lambda: self.policies.policy, self._on_commit, now_ms, offload)
        self.events = Events()
        self.reminders = Reminders(
            store,
            self.writer,
            self.events,
            notifier or DesktopNotifier(),
            now_ms,
            self.policy.reminders.lead_minutes,
        )
        self.replay = Replay(store, self.events, offload, lambda: self.policy)
        self.capsules = Capsules()
        self.dispatcher = Dispatcher(*REGISTRIES)
        self.connections: set[Connection] = set()
        self.listening: Path | None = None
        # Processes (pid, start time) that lowered their own privileges.
        self.restricted: dict[tuple[int, int | None], AgentSession] = {}

    async def recall(
        self, query: RecallQuery, unread: Callable[[], int] = lambda: 0
    ) -> list[RecallResult]:
        """Resonance Recall over the store, in a worker thread, one recall at a time.

        ``unread`` is the asking connection's unread reply bytes (see turns.py).
        """
        async with self.recall_turns.turn(unread):
            now, policy = self.now_ms(), self.policy

            def run() -> list[RecallResult]:
                return self.store.read(recall, query, now_ms=now, policy=policy)

            began = time.perf_counter()
            if self._recall_s < INLINE_RECALL_S:
                results = run()
            else:
                results = await self.offload(run)
            took = time.perf_counter() - began
            self._recall_s += (took - self._recall_s) / 5  # a moving average
        return results

    def restrict(self, context: Context, host: str, session_id: str | None) -> AgentSession:
        """Lower a connection, and every later one of its process, to agent privileges.

        One way: a connection already restricted keeps the session it has.
        """
        if context.declared is None:
            context.declared = declared_session(host, session_id)
        # Forget processes that have exited (their pid may come back as another).
        self.restricted = {k: v for k, v in self.restricted.items() if start_time(k[0]) == k[1]}
        key = (context.peer.pid, start_time(context.peer.pid))
        self.restricted.setdefault(key, context.declared)
        session = context.session
        assert session is not None
        return session

    def _on_commit(self, outcomes: Sequence[Outcome]) -> None:
        self.reminders.on_commit(outcomes)
        for outcome in outcomes:
            if isinstance(outcome, Written):
                for trace_id, status in changes(outcome):
                    self.events.publish("memory.changed", {"id": trace_id, "status": status})

    def _policy_changed(self) -> None:
        self.reminders.set_lead(self.policy.reminders.lead_minutes)

    async def _close_idle_capsules(self) -> None:
        while True:
            await trio.sleep(IDLE_SWEEP_S)
            idle_ms = self.policy.focus.idle_minutes * 60_000
            for name in self.capsules.close_idle(self.now_ms(), idle_ms):
                log.info("closed focus capsule %r after %d idle minutes", name, idle_ms // 60_000)

    @property
    def policy(self) -> KernelPolicy:
        return self.policies.policy

    @property
    def policy_error(self) -> str | None:
        return self.policies.error

    @property
    def policy_path(self) -> Path:
        return self.config.policy_path

    @property
    def socket_path(self) -> Path:
        """Where the daemon listens (under socket activation: where systemd listens)."""
        return self.listening or self.config.socket_path

    async def serve(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until SIGTERM or SIGINT; writes queued by then are committed first."""
        raw = inherited_socket()
        inode = None
        try:
            if raw is None:
                raw = bind_socket(self.config.socket_path)
                inode = self.config.socket_path.stat().st_ino
        except (SocketError, OSError) as exc:
            raise DaemonError(str(exc)) from None
        address = raw.getsockname()
        if isinstance(address, str) and address:
            self.listening = Path(address)
        try:
            await self._serve(trio_listener(raw), task_status)
        finally:
            if inode is not None:
                unlink_if_ours(self.config.socket_path, inode)

    async def _serve(
        self, listener: trio.SocketListener, task_status: trio.TaskStatus[None]
    ) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.writer.run)
                nursery.start_soon(self.policies.watch, self._policy_changed)
                nursery.start_soon(self.reminders.run)
                nursery.start_soon(self.replay.run)
                nursery.start_soon(self._close_idle_capsules)
                accept_scope = trio.CancelScope()
                connections = await nursery.start(self._accept, listener, accept_scope)
                notify_systemd("READY=1")
                log.info("hikmahd %d serving %s", os.getpid(), self.config.socket_path)
                task_status.started()
                async for signum in signals:
                    if signum == signal.SIGHUP:
                        if self.policies.reload():
                            self._policy_changed()
                        continue
                    log.info("stopping on signal %d", signum)
                    break
                notify_systemd("STOPPING=1")
                accept_scope.cancel()
                await self.writer.close()
                with trio.move_on_after(STOP_GRACE_S):
                    while any(not c.closed for c in self.connections):
                        await trio.sleep(0.05)
                connections.cancel()
                nursery.cancel_scope.cancel()

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
        async with stream:
            sock = stream.socket
            try:
                peer = identify(sock)  # type: ignore[arg-type]
            except OSError as exc:
                log.warning("cannot identify a peer: %s", exc)
                return
            if peer.uid != os.getuid():
                log.warning("refused a connection from uid %d (pid %d)", peer.uid, peer.pid)
                error = error_for(Forbidden("hikmahd serves only its own user"))
                await Connection(stream, Context(self, peer), self.dispatcher).send(
                    response(None, error=error)
                )
                return
            # A process that restricted itself once stays restricted on every connection.
            declared = self.restricted.get((peer.pid, start_time(peer.pid)))
            context = Context(self, peer, declared=declared)
            connection = Connection(stream, context, self.dispatcher)
            self.connections.add(connection)
            try:
                await connection.serve()
            except Exception:
                log.exception("connection from pid %d failed", peer.pid)
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


def run(config: Config, vault: Vault | None) -> None:
    """Open the store (with the vault's keys when the policy enabled it: ``vault``) and
    serve until stopped."""
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
        trio.run(Daemon(config, store, vault=vault).serve)
