"""``kill -9`` at random moments: under 16 writers, and in the middle of compaction,
an index rebuild and a transcript ingest. Shared by the suite (few rounds) and
``bench/stress/crash_loop.py`` (30 rounds)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hikmah.store.core import Store
from tests.harness.daemon import Running
from tests.harness.sockets import Conn

from .harness import (
    Book,
    check_data_dir,
    hikmahd,
    pipelined,
    read_ledger,
    restart,
    writers,
)

Say = Callable[[str], None]


@dataclass
class Tally:
    """What a run survived, for the report."""

    kills: int = 0
    interrupted: int = 0  # kills that landed before the maintenance call finished
    unacked_present: int = 0
    unacked_absent: int = 0
    records: int = 0
    notes: list[str] = field(default_factory=list)


def crash_loop(
    daemon: Running, book: Book, rng: random.Random, rounds: int, say: Say = print
) -> Tally:
    """16 writers through the socket, ``kill -9`` after a random time, check, restart."""
    tally = Tally()
    for round_ in range(rounds):
        if daemon.process is None:
            restart(daemon)
        delay = rng.uniform(0.05, 0.8)
        with writers(daemon.socket, book, round_):
            time.sleep(delay)
            daemon.kill(signal.SIGKILL)
        checked = check_data_dir(daemon.data, book)
        tally.kills += 1
        # The books keep every round's writes, so the last check counts them all.
        tally.unacked_present = checked.unacked_present
        tally.unacked_absent = checked.unacked_absent
        tally.records = checked.records
        say(
            f"round {round_ + 1}/{rounds}: killed after {delay:.2f} s; {book.summary()};"
            f" in flight at the kill: {checked.unacked_present} written whole,"
            f" {checked.unacked_absent} absent; {checked.records} ledger records verify"
        )
        restart(daemon)
    return tally


def _purge_some(daemon: Running, book: Book, count: int) -> None:
    candidates = [i for i in book.acked if i not in book.purged][:count]
    with daemon.connect() as conn:
        replies = pipelined(
            conn, [("memory.purge", {"id": i, "reason": "before compaction"}) for i in candidates]
        )
    for trace_id, reply in zip(candidates, replies, strict=True):
        if "result" in reply:
            book.purged.add(trace_id)


def fill(daemon: Running, book: Book, count: int, tag: str) -> None:
    """``count`` acknowledged writes, pipelined (fast: they share group commits)."""
    requests = [
        ("memory.remember", {"content": f"fill {tag} {n}: deploy cache note {n % 97}"})
        for n in range(count)
    ]
    with daemon.connect() as conn:
        for start in range(0, count, 500):
            for reply in pipelined(conn, requests[start : start + 500]):
                book.acked[reply["result"]["trace"]["id"]] = reply["result"]["trace"]


class _Call(threading.Thread):
    """One request on its own connection; ``answered`` if a reply came before the kill."""

    def __init__(self, socket: Path, method: str, params: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.socket, self.method, self.params = socket, method, params
        self.reply: dict[str, Any] | None = None
        self.started_at = self.answered_at = 0.0

    def run(self) -> None:
        try:
            with Conn(self.socket) as conn:
                self.started_at = time.monotonic()
                self.reply = conn.request(self.method, **self.params)
                self.answered_at = time.monotonic()
        except (OSError, EOFError, ValueError):
            pass


def kill_during_compaction(
    daemon: Running, book: Book, rng: random.Random, rounds: int, say: Say = print
) -> Tally:
    """Purge some traces, then compact while 16 writers write; ``kill -9`` at a random
    moment of the compaction (its duration measured by an uninterrupted one first)."""
    tally = Tally()
    if daemon.process is None:
        restart(daemon)
    _purge_some(daemon, book, 50)
    measured = _Call(daemon.socket, "ledger.compact", {})
    measured.run()
    assert measured.reply is not None and "result" in measured.reply, measured.reply
    estimate = measured.answered_at - measured.started_at
    say(f"an uninterrupted compaction took {estimate * 1000:.0f} ms")
    for round_ in range(rounds):
        if daemon.process is None:
            restart(daemon)
        _purge_some(daemon, book, 50)
        call = _Call(daemon.socket, "ledger.compact", {})
        with writers(daemon.socket, book, 1000 + round_):
            call.start()
            delay = rng.uniform(0.0, estimate)
            time.sleep(delay)
            daemon.kill(signal.SIGKILL)
        call.join(timeout=30)
        interrupted = call.reply is None
        tally.kills += 1
        tally.interrupted += interrupted
        checked = check_data_dir(daemon.data, book)
        tally.records = checked.records
        say(
            f"compaction round {round_ + 1}/{rounds}: killed {delay * 1000:.0f} ms in,"
            f" {'before' if interrupted else 'after'} it answered; {checked.records} records"
        )
        restart(daemon)
    return tally


def kill_during_rebuild(
    daemon: Running, book: Book, rng: random.Random, rounds: int, say: Say = print
) -> Tally:
    """``hikmahd --rebuild-index`` killed at a random moment of its work (after its
    imports: from when it holds the data directory's lock)."""
    tally = Tally()
    daemon.stop()
    daemon.process = None
    lock = daemon.data / "hikmahd.lock"

    def launch() -> tuple[subprocess.Popen[bytes], float]:
        lock.write_text("")
        with daemon.log.open("ab") as log:
            process = subprocess.Popen(
                hikmahd("--data-dir", str(daemon.data), "--rebuild-index"),
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 20
        while lock.read_text().strip() != str(process.pid):
            assert time.monotonic() < deadline and process.poll() is None, "no rebuild started"
            time.sleep(0.001)
        return process, time.monotonic()

    process, locked = launch()
    assert process.wait(timeout=60) == 0
    work = time.monotonic() - locked
    say(f"an uninterrupted rebuild worked {work * 1000:.0f} ms after taking the lock")
    for round_ in range(rounds):
        process, locked = launch()
        delay = rng.uniform(0.0, work)
        time.sleep(max(0.0, locked + delay - time.monotonic()))
        process.send_signal(signal.SIGKILL)
        code = process.wait(timeout=20)
        tally.kills += 1
        tally.interrupted += code == -signal.SIGKILL
        checked = check_data_dir(daemon.data, book)
        tally.records = checked.records
        say(
            f"rebuild round {round_ + 1}/{rounds}: killed {delay * 1000:.0f} ms in"
            f" (exit {code}); the indexes equal a fresh rebuild"
        )
    restart(daemon)
    return tally


def claude_transcript(path: Path, session: str, messages: int) -> list[tuple[str, str]]:
    """A Claude Code session of ``messages`` lines the person typed; their (uuid, text)."""
    said = []
    with path.open("w") as out:
        for n in range(messages):
            uuid = f"{session[:8]}-0000-4000-8000-{n:012d}"
            text = f"message {n} of {session}: keep the staging cache warm before deploys"
            record = {
                "type": "user",
                "sessionId": session,
                "cwd": "/work/crash",
                "uuid": uuid,
                "timestamp": f"2026-01-01T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "message": {"role": "user", "content": text},
            }
            out.write(json.dumps(record) + "\n")
            said.append((uuid, text))
    return said


def kill_during_ingest(
    daemon: Running,
    book: Book,
    rng: random.Random,
    rounds: int,
    tmp: Path,
    say: Say = print,
    *,
    messages: int = 400,
) -> Tally:
    """``replay.ingest`` of a long transcript killed at a random moment: each message is
    then there whole or not at all, and ingesting again completes it exactly once."""
    tally = Tally()
    for round_ in range(rounds):
        if daemon.process is None:
            restart(daemon)
        path = tmp / f"session-{round_}.jsonl"
        said = claude_transcript(path, f"{rng.getrandbits(32):08x}-crash-{round_}", messages)
        call = _Call(daemon.socket, "replay.ingest", {"path": str(path)})
        call.start()
        delay = rng.uniform(0.0, messages / 1200)  # about how long the ingest takes here
        time.sleep(delay)
        daemon.kill(signal.SIGKILL)
        call.join(timeout=30)
        tally.kills += 1
        tally.interrupted += call.reply is None
        check_data_dir(daemon.data, book)
        with Store(daemon.data) as store:
            view = read_ledger(store)
        mine = {t.provenance.locator: t for t in view.traces.values()}
        present = 0
        for uuid, text in said:
            trace = mine.get(f"transcript:{path}#{uuid}")
            if trace is not None:
                present += 1
                assert (trace.content, trace.kind) == (text, "episode"), trace
                assert set(trace.tags) == {"transcript", "claude-code"}, trace
        restart(daemon)
        with daemon.connect() as conn:
            again = conn.call("replay.ingest", path=str(path))
        assert (again["written"], again["already"]) == (len(said) - present, present), again
        say(
            f"ingest round {round_ + 1}/{rounds}: killed {delay * 1000:.0f} ms in,"
            f" {present}/{len(said)} messages were in; ingesting again wrote the rest once"
        )
    return tally


class _Import(threading.Thread):
    """``memory.import`` of ``lines`` in calls of 500, as the CLI sends a file."""

    def __init__(self, socket: Path, lines: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.socket, self.lines = socket, lines
        self.answered = 0

    def run(self) -> None:
        try:
            with Conn(self.socket) as conn:
                for start in range(0, len(self.lines), 500):
                    conn.call("memory.import", lines=self.lines[start : start + 500])
                    self.answered += 1
        except (OSError, EOFError, ValueError):
            pass


def kill_during_import(
    daemon: Running,
    book: Book,
    rng: random.Random,
    rounds: int,
    say: Say = print,
    *,
    count: int = 1500,
) -> Tally:
    """``memory.import`` of JSON Lines traces killed at a random moment: each line is
    then there whole (its id, its fields) or not at all, and importing the file again
    writes exactly the missing ones."""
    tally = Tally()
    for round_ in range(rounds):
        if daemon.process is None:
            restart(daemon)
        tag = f"{rng.getrandbits(32):08x}"
        lines = [
            {"line": n + 1, "trace": {"id": f"imp-{tag}-{n}", "kind": "belief",
                                      "content": f"imported {tag} {n}: the cache is warm",
                                      "tags": ["imported"], "created_at": 1_700_000_000_000 + n}}
            for n in range(count)
        ]  # fmt: skip
        call = _Import(daemon.socket, lines)
        call.start()
        delay = rng.uniform(0.0, count / 2000)
        time.sleep(delay)
        daemon.kill(signal.SIGKILL)
        call.join(timeout=30)
        tally.kills += 1
        tally.interrupted += call.answered < len(range(0, count, 500))
        check_data_dir(daemon.data, book)
        with Store(daemon.data) as store:
            view = read_ledger(store)
        present = 0
        for line in lines:
            trace = view.traces.get(line["trace"]["id"])
            if trace is not None:
                present += 1
                wanted = line["trace"]
                assert (trace.content, trace.kind, trace.tags, trace.created_at) == (
                    wanted["content"], "belief", ("imported",), wanted["created_at"],
                ), trace  # fmt: skip
        restart(daemon)
        written = already = 0
        with daemon.connect() as conn:
            for start in range(0, count, 500):
                done = conn.call("memory.import", lines=lines[start : start + 500])
                written, already = written + done["written"], already + done["already"]
                assert not done["refused"], done["refused"][:3]
        assert (written, already) == (count - present, present)
        say(
            f"import round {round_ + 1}/{rounds}: killed {delay * 1000:.0f} ms in,"
            f" {present}/{count} lines were in; importing again wrote the rest once"
        )
    return tally
