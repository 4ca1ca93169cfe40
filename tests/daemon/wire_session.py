"""The machinery of the recorded wire session: daemons with clocks the test moves, a
relay process per caller, the frames a session records, and the normaliser that replaces
what differs between runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from hikmah.model.wire.methods import METHODS
from hikmahd.daemon import REGISTRIES
from tests.daemon.memory_keyring import BACKEND
from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.sockets import wait_for_socket

T0 = 1_780_000_000_000  # 2026-05-28T20:26:40Z: the main daemon's clock at start
SYNC_T0 = 1_790_000_000_000  # the sync daemons' own clock at start
STEP_MS = 1_000  # each recorded call is one second after the one before
REPLY_TIMEOUT_S = 30.0

MAIN_POLICY = """\
allow_sensitive_persistence = true

[semantic]
enabled = false

[replay]
interval_minutes = 0

[vault]
enabled = true

[presence]
tickets_with_tiocsti = true
"""

SYNC_POLICY = """\
[semantic]
enabled = false

[replay]
interval_minutes = 0

[sync]
folder = "{folder}"
name = "{name}"
watch = false
interval_seconds = 86400
"""


# -- what varies between runs --------------------------------------------------------

# Values drawn at random (or from them: a record's hash chains its trace's id), each
# distinct one replaced by a numbered placeholder in order of first appearance, so that
# which replies share a value stays part of the recording.
NUMBERED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tr", re.compile(r"\btr_[0-9a-f]{22}\b")),  # trace ids: 12 hex of time, 10 random
    ("hash", re.compile(r"\b[0-9a-f]{64}\b")),  # record hashes, the head, digests
    ("hex16", re.compile(r'(?<=")[0-9a-f]{16}(?=")')),  # vault and key ids, selections
    ("device", re.compile(r"\bhd[a-z2-7]{26}\b")),  # sync device ids (of random keys)
    ("code", re.compile(r"\bHKS1(?:-[A-Z2-7]{1,5}){2,}")),  # pairing codes
    ("pr", re.compile(r"\bpr_[0-9a-f]{16}\b")),  # proposal ids (digests of trace ids)
    ("pts", re.compile(r"(?<=/dev/pts/)\d+")),  # the relay's pseudo-terminal
)
# Values of the process and the machine, replaced outright.
ERASED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'"pid":\d+'), '"pid":<pid>'),
    (re.compile(r'"uptime_s":[0-9.e+-]+'), '"uptime_s":<uptime_s>'),
    (re.compile(r'"version":"[^"]*"'), '"version":"<version>"'),  # hikmah's, in the status
    (re.compile(r'"hikmah":"[^"]*"'), '"hikmah":"<version>"'),  # and in a backup's manifest
    # The size of a backup's copy of the store: LMDB's page size and allocation.
    (re.compile(r'"data_bytes":\d+'), '"data_bytes":<data_bytes>'),
    # Whether the kernel lets a process push keys into its terminal (a sysctl).
    (re.compile(r'"tiocsti":(?:true|false)'), '"tiocsti":<tiocsti>'),
)


class Normaliser:
    """Replaces what legitimately differs between runs, and nothing else: the temp
    directory's path, :data:`NUMBERED` values by placeholders (``<tr#3>``), and
    :data:`ERASED` values. Key order, spacing and every other byte stay as they were."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.seen: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        text = text.replace(self.root, "<tmp>")
        for kind, pattern in NUMBERED:
            text = pattern.sub(partial(self._placeholder, kind), text)
        for pattern, replacement in ERASED:
            text = pattern.sub(replacement, text)
        return text

    def _placeholder(self, kind: str, found: re.Match[str]) -> str:
        value = found[0]
        if (kind, value) not in self.seen:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.seen[kind, value] = f"<{kind}#{self.counts[kind]}>"
        return self.seen[kind, value]


# -- the daemons, their clocks, and the callers ----------------------------------------


class Clock:
    """A daemon's wall clock (read by ``clocked_hikmahd``), moved by the test."""

    def __init__(self, path: Path, start_ms: int) -> None:
        self.path, self.now = path, start_ms
        self._write()

    def tick(self) -> None:
        self.now += STEP_MS
        self._write()

    def _write(self) -> None:
        staged = self.path.with_suffix(".new")  # renamed into place: never read half-written
        staged.write_text(str(self.now))
        staged.replace(self.path)


class Relay:
    """One connection to a daemon, held by a ``wire_relay`` process of its own."""

    def __init__(self, name: str, daemon: Running, clock: Clock, *, terminal: bool) -> None:
        self.name, self.clock = name, clock
        argv = [sys.executable, "-m", "tests.daemon.wire_relay", str(daemon.socket)]
        self.process = subprocess.Popen(
            [*argv, "--terminal"] if terminal else argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=clean_env(),
            start_new_session=True,  # a session leader, to take a terminal of its own
        )
        assert self.process.stdout is not None
        self.out = self.process.stdout.fileno()
        self.buffer = b""
        self.events: list[bytes] = []  # notification lines, as read

    def send(self, frame: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()

    def reply(self) -> bytes:
        """The next line that is not a notification, exactly as read."""
        while True:
            try:
                line = self.line(REPLY_TIMEOUT_S)
            except EOFError:
                raise AssertionError(f"{self.name}: the daemon closed the connection") from None
            if line is None:
                raise AssertionError(f"{self.name}: no reply within {REPLY_TIMEOUT_S} s")
            if b'"method"' in line and "method" in json.loads(line):
                self.events.append(line)
            else:
                return line

    def line(self, timeout: float) -> bytes | None:
        """The next line the daemon sent, without its newline; None after ``timeout``.

        Raises:
            EOFError: the daemon closed the connection.
        """
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.out, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(self.out, 1 << 16)
                if not chunk:
                    raise EOFError(self.name)
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def close(self) -> None:
        """End the connection (the relay exits at the end of its stdin) and the relay."""
        assert self.process.stdin is not None and self.process.stdout is not None
        with contextlib.suppress(BrokenPipeError):  # it exited already: the daemon stopped
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


@dataclass
class Frame:
    """One request and its reply, as they crossed the socket."""

    via: str
    method: str
    params: str  # the request's params, as sent
    reply: bytes  # the reply line, as read

    def line(self, normalise: Normaliser) -> str:
        params = json.loads(normalise(self.params))
        entry = {"via": self.via, "method": self.method, "params": params}
        return json.dumps({**entry, "reply": normalise(self.reply.decode())}, ensure_ascii=False)


@dataclass
class Session:
    """The recorded frames of a session, and the request ids it gives out."""

    frames: list[Frame] = field(default_factory=list)
    next_id: int = 0

    def call(self, via: Relay, method: str, /, **params: Any) -> Any:
        """Send one request one tick of ``via``'s clock later; record the raw reply, and
        return it decoded."""
        via.clock.tick()
        raw = self._exchange(via, method, params)
        self.frames.append(Frame(via.name, method, json.dumps(params), raw))
        return json.loads(raw)

    def result(self, via: Relay, method: str, /, **params: Any) -> Any:
        """:meth:`call`, for a reply that must be a result: one its method's Result type
        decodes, strictly (the type every client reads the reply by)."""
        reply = self.call(via, method, **params)
        assert "result" in reply, (method, reply)
        msgspec.convert(reply["result"], METHODS[method].result)
        return reply["result"]

    def error(self, via: Relay, method: str, reason: str, /, **params: Any) -> Any:
        """:meth:`call`, for a reply that must be an error for ``reason``."""
        reply = self.call(via, method, **params)
        assert "error" in reply, (method, reply)
        assert reply["error"].get("data", {}).get("reason") == reason, (method, reply)
        return reply["error"]

    def frame(self, via: Relay, label: str, frame: bytes) -> Any:
        """A frame sent as given (a batch, a broken envelope), recorded under ``label``."""
        via.clock.tick()
        via.send(frame)
        raw = via.reply()
        self.frames.append(Frame(via.name, label, json.dumps(frame.decode()), raw))
        return json.loads(raw)

    def peek(self, via: Relay, method: str, /, **params: Any) -> Any:
        """A call that is not recorded, moves neither the clock nor the request ids (to
        wait for a daemon's background work to settle before the recorded calls)."""
        return json.loads(self._exchange(via, method, params, "peek"))["result"]

    def _exchange(
        self, via: Relay, method: str, params: dict[str, Any], request_id: str | None = None
    ) -> bytes:
        if request_id is None:
            self.next_id += 1
        request = {"jsonrpc": "2.0", "method": method, "params": params}
        via.send(json.dumps({**request, "id": request_id or self.next_id}).encode())
        return via.reply()


def registered_methods() -> set[str]:
    """Every method name the daemon serves."""
    return {name for registry in REGISTRIES for name in registry.methods}


@dataclass
class World:
    """What the script drives: three daemons (the main one, and two that sync through a
    shared folder) and the relays to them."""

    root: Path
    main: Running
    desk: Running
    laptop: Running
    clock: Clock
    sync_clock: Clock
    relays: list[Relay] = field(default_factory=list)

    def relay(self, name: str, daemon: Running, *, terminal: bool = False) -> Relay:
        clock = self.clock if daemon is self.main else self.sync_clock
        relay = Relay(name, daemon, clock, terminal=terminal)
        self.relays.append(relay)
        return relay


def daemon_env(root: Path) -> dict[str, str]:
    """The daemons' environment: a fixed login (the person's own source), time zone and
    keyring; no session bus (no desktop notification leaves the test); no agent
    variables."""
    return clean_env(
        LOGNAME="ana",
        USER="ana",
        TZ="UTC",
        LC_ALL="C.UTF-8",
        PYTHON_KEYRING_BACKEND=BACKEND,
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={root}/no-bus",
    )


@contextlib.contextmanager
def started_world() -> Iterator[World]:
    """The three daemons, started in a temporary directory, and stopped with their relays
    at the end."""
    root = Path(tempfile.mkdtemp(prefix="hkw", dir="/tmp"))  # socket paths must stay short
    clock, sync_clock = Clock(root / "clock", T0), Clock(root / "sync-clock", SYNC_T0)
    (root / "folder").mkdir()

    def daemon(name: str, clock: Clock, policy: str) -> Running:
        (root / name).mkdir()
        running = Running(
            root / name,
            env=daemon_env(root),
            module=("tests.daemon.clocked_hikmahd", str(clock.path)),
        )
        running.policy.write_text(policy)
        return running

    main = daemon("main", clock, MAIN_POLICY)
    desk = daemon("desk", sync_clock, SYNC_POLICY.format(folder=root / "folder", name="desk"))
    laptop = daemon("laptop", sync_clock, SYNC_POLICY.format(folder=root / "folder", name="laptop"))
    found = World(root, main, desk, laptop, clock, sync_clock)
    try:
        started = [main, desk, laptop]
        for running in started:  # started together, waited for together
            with running.log.open("ab") as log:
                running.process = subprocess.Popen(
                    [sys.executable, "-m", *running.module, *running.flags()],
                    stdout=log,
                    stderr=log,
                    env=running.env,
                    start_new_session=True,
                )
        for running in started:
            assert running.process is not None
            wait_for_socket(running.socket, running.process, running.log)
        yield found
    finally:
        for relay in found.relays:
            relay.close()
        for running in (main, desk, laptop):
            running.stop()
        shutil.rmtree(root, ignore_errors=True)
