"""Every JSON-RPC method's reply, byte for byte as the socket carries it, against a recording.

A scripted session drives real daemons over their real Unix sockets and calls every
registered method, with the reply variants that are cheap to reach (a conflict, a
recall with results and one without, errors of each kind, a person-only method refused
to an agent session). Each reply is kept as the raw bytes read from the socket; only
the values that differ from run to run are replaced (:class:`Normaliser`), and the
session must equal ``wire/session.jsonl`` line for line: one line per call (who
called, the method, its params, the reply), then the notifications a subscribed
connection received. A change of any reply's bytes (a key renamed, reordered or added,
a float printed otherwise, a null left out) fails here.

What is made deterministic rather than normalised: the daemons' wall clock (one
second per recorded call, ``clocked_hikmahd``), the login they write as, the policy
(no vectors, no scheduled replay), the vault's keyring (in the daemon's memory,
``memory_keyring``), and who calls: every call goes through a relay process of its
own (``wire_relay``), on a pseudo-terminal of its own for the person, so the replies do
not depend on how pytest was started.

A method registered later fails :func:`test_the_recording_calls_every_method` until
the session calls it. When a reply is meant to change, record again and review the
diff of the recording::

    HIKMAH_RECORD_WIRE=1 pytest tests/daemon/test_wire_recorded.py

Every method has a successful reply recorded. Error replies are recorded besides,
each named by its reason where the script calls :meth:`Session.error`: the deliberate
ones (a secret, a missing trace, bad params, a conflict, a person-only method asked by
an agent session, a wrong passphrase), and those of what a daemon was not set up for:
``sync.exchange`` and ``sync.invite`` on the main daemon, whose sync is off (they
succeed on the two daemons that sync), and ``vault.rotate`` on a sync daemon, whose
vault is off (it succeeds on the main daemon).
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.wire_session import (
    REPLY_TIMEOUT_S,
    T0,
    Normaliser,
    Relay,
    Session,
    World,
    registered_methods,
    started_world,
)

HERE = Path(__file__).resolve().parent
RECORDING = HERE / "wire" / "session.jsonl"
FIXTURES = HERE.parent / "fixtures"
RECORD_ENV = "HIKMAH_RECORD_WIRE"

PASSPHRASE = "correct horse battery staple"


@pytest.fixture
def world() -> Iterator[World]:
    with started_world() as found:
        yield found


def script(world: World, session: Session) -> None:
    """The session: every method, on the daemon and by the caller that reaches it. A
    call through ``error`` is recorded as an error reply, for the reason it names."""
    person = world.relay("person", world.main, terminal=True)
    listener = world.relay("listener", world.main)
    call, result, error = session.call, session.result, session.error

    def remember(via: Relay, content: str, **params: Any) -> str:
        return str(result(via, "memory.remember", content=content, **params)["trace"]["id"])

    # The service. policy.get waits for presence to be read, so the status after it is whole.
    result(person, "policy.get")
    result(person, "policy.get", defaults=True)
    status = result(person, "daemon.status")
    if status["principal"] is not None:
        pytest.skip(
            "the daemon takes this test's process tree for an agent session"
            f" ({status['principal']['host']}): run it from a person's shell"
        )
    result(person, "vault.status")
    result(person, "presence.status")
    result(listener, "events.subscribe")
    result(listener, "events.subscribe")  # already subscribed

    # Writes: a verified rule, a claim and one that conflicts with it, commitments, a
    # sensitive trace, a correction; a secret and bad params refused.
    rule = remember(
        person,
        "Never deploy the payments service on a Friday afternoon",
        kind="constraint",
        tags=["deploy", "payments"],
        verified=True,
        source="human:ana",
    )
    old_db = remember(
        person,
        "The staging database runs Postgres 15",
        kind="belief",
        claim_key="staging.db",
        claim_value="postgres-15",
        source="tool:ansible",
    )
    new_db = remember(
        person,
        "The staging database was upgraded to Postgres 16",
        kind="belief",
        claim_key="staging.db",
        claim_value="postgres-16",
        source="human:bo",
        locator="https://wiki.example.com/staging",
    )
    cert = remember(
        person,
        "Renew the TLS certificate of api.example.com",
        kind="commitment",
        deadline="+2d",
        scope="project:/srv/payments",
    )
    remember(
        person,
        "Send the quarterly access review to security",
        kind="commitment",
        deadline=T0 + 10 * 86_400_000,
    )
    cache = remember(
        person,
        "The staging cache was warm after the deploy",
        tags=["cache"],
        salience=0.7,
        confidence=0.8,
    )
    private = remember(
        person, "Bo's on-call phone number is in the team vault", privacy="sensitive"
    )
    remember(
        person,
        "The database for staging runs Postgres 16 since May",
        supersedes=new_db,
        claim_key="staging.db",
        claim_value="postgres-16",
    )
    secret = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"  # a GitHub token's shape
    error(person, "memory.remember", "secret_detected", content=f"deploy key is {secret}")
    error(person, "memory.remember", "invalid", content="salience as a word", salience="high")
    error(person, "memory.remember", "invalid", content="", kind="observation")
    error(person, "memory.remember", "invalid", content="an unknown field", colour="blue")

    # Reads, now and as of the past.
    result(person, "memory.recall", query="staging database")
    result(person, "memory.recall", query="kubernetes helm chart")  # nothing found
    result(person, "memory.recall", query="", tags=["deploy"], limit=3)
    result(person, "memory.recall", query="database", include_superseded=True, as_of=3)
    result(person, "memory.recall", query="phone", include_sensitive=True)
    error(person, "memory.recall", "invalid", query="x", limit=0)
    result(person, "memory.show", id=old_db)
    result(person, "memory.show", id=new_db, as_of=3)
    error(person, "memory.show", "not_found", id="tr_000000000000ffffffffff")
    result(person, "memory.conflicts")
    result(person, "memory.conflicts", key="staging.db")
    result(person, "memory.history", key="staging.db")
    result(person, "memory.context")
    result(person, "memory.context", scope="project:/srv/payments", within_hours=72)
    result(person, "promises.list")
    result(person, "promises.list", overdue=True)
    result(person, "promises.list", within_hours=72, as_of=4)
    error(person, "promises.list", "invalid", within_hours=-1)

    # Fulfilling, forecasts, feedback, pins, invalidation, verification, purge.
    result(person, "memory.fulfill", id=cert)
    error(person, "memory.fulfill", "conflict", id=cert)
    forecast = result(
        person,
        "memory.predict",
        family="ci.green",
        question="Will CI pass on main tonight?",
        type="noul",
        p=0.8,
        deadline="+1d",
    )["trace"]["id"]
    result(
        person,
        "memory.predict",
        family="release.day",
        question="Which day is the release?",
        type="choice",
        p=0.6,
        value="tuesday",
        answer_space=["monday", "tuesday"],
    )
    result(person, "memory.outcome", prediction=forecast, observed="yes", note="CI was green")
    error(person, "memory.outcome", "conflict", prediction=forecast, observed="no")
    result(person, "memory.calibration")
    result(person, "memory.calibration", family_prefix="ci.")
    result(person, "memory.feedback", ids=[rule, cache], outcome="good")
    error(person, "memory.feedback", "invalid", ids=[], outcome="good")
    result(person, "memory.pin", id=cache)
    result(person, "memory.unpin", id=cache)
    error(person, "memory.pin", "not_found", id="tr_000000000000ffffffffff")
    result(person, "memory.invalidate", pattern="staging cache", reason="flushed", dry_run=True)
    result(person, "memory.invalidate", pattern="staging cache", reason="flushed", stale=True)
    preview = result(person, "memory.verify", source="tool:ansible")
    error(person, "memory.verify", "conflict", source="tool:ansible", confirm="0" * 16)
    result(person, "memory.verify", source="tool:ansible", confirm=preview["selection"])
    result(person, "memory.purge", id=private, reason="it should never have been written")
    error(person, "memory.purge", "conflict", id=private, reason="again")

    # Export, and the three imports.
    page = result(person, "memory.export", limit=3)
    result(person, "memory.export", after=page["next"], limit=500, include_superseded=True)
    result(person, "memory.export", as_of=2)
    line = {
        "id": "tr_018f6a2b3c4d0123456789",
        "kind": "procedure",
        "content": "Rotate the deploy keys every quarter",
        "created_at": 1_700_000_000_000,
        "provenance": {"source": "human:ana", "verified": False},
    }
    imported = {"lines": [{"line": 1, "trace": line}, {"line": 2, "trace": {"kind": "belief"}}]}
    result(person, "memory.import", **imported)
    result(person, "memory.import", **imported)  # idempotent by id
    ledger = (FIXTURES / "reference-ledger-v2.jsonl").read_text().splitlines()
    records = [{"line": n, "text": text} for n, text in enumerate(ledger, 1)]
    result(person, "memory.import_ledger", records=records, check_only=True)
    result(person, "memory.import_ledger", records=records)
    mem0 = world.root / "mem0.json"
    shutil.copy(FIXTURES / "peers" / "mem0" / "mem0-v1.json", mem0)
    result(person, "memory.import_source", source="mem0", path=str(mem0), dry_run=True, limit=2)
    result(person, "memory.import_source", source="mem0", path=str(mem0))
    error(person, "memory.import_source", "invalid", source="mem0", path="mem0.json")

    # Replay: a transcript in, proposals out, one of them promoted.
    transcript = world.root / "session.jsonl"
    shutil.copy(FIXTURES / "transcripts" / "claude-session.jsonl", transcript)
    result(person, "replay.ingest", path=str(transcript))
    result(person, "replay.ingest", path=str(transcript))  # idempotent by message
    error(person, "replay.ingest", "invalid", path=str(world.root / "missing.jsonl"))
    for source in ("human:ana", "tool:terraform"):
        remember(
            person,
            f"The prod database is Postgres ({source})",
            kind="belief",
            claim_key="prod.db",
            claim_value="postgres",
            source=source,
            confidence=0.9,
        )
    proposals = result(person, "replay.consolidate")["proposals"]
    eligible = next(p["id"] for p in proposals if p["eligible"])
    result(person, "replay.promote", id=eligible, source="human:ana")
    error(person, "replay.promote", "not_found", id="not-a-proposal")

    # Focus capsules.
    capsule = "bug:login-timeout"
    result(person, "focus.open", name=capsule)
    result(person, "focus.absorb", name=capsule, query="staging database")
    result(person, "focus.pin", name=capsule, id=rule)
    result(person, "focus.unpin", name=capsule, id=rule)
    result(person, "focus.note", name=capsule, text="Reproduces only with the VPN on")
    error(person, "focus.note", "secret_detected", name=capsule, text=f"token={secret}")
    result(person, "memory.recall", query="deploy payments", focus="task:release")
    result(person, "focus.read", name=capsule)
    result(person, "focus.list")
    result(person, "focus.close", name="task:release")
    error(person, "focus.read", "not_found", name="task:release")
    error(person, "focus.unpin", "not_found", name=capsule, id=old_db)

    # An agent session: its standing rules wait for the person's review, and what only a
    # person may do is refused to it.
    agent = world.relay("agent", world.main)
    result(agent, "session.restrict", host="claude-code", session_id="wire-1")
    held = remember(agent, "Always run the linters before pushing", kind="procedure")
    held_too = remember(agent, "Prefer squash merges", kind="preference")
    error(agent, "memory.remember", "agent_restricted", content="it is true", verified=True)
    result(agent, "memory.recall", query="linters pushing")
    result(agent, "memory.context")
    result(agent, "daemon.status")
    result(agent, "presence.status")
    error(agent, "review.list", "agent_restricted")
    error(agent, "review.accept", "agent_restricted", ids=[held])
    error(agent, "ledger.compact", "agent_restricted")
    error(agent, "presence.prove", "agent_restricted", passphrase=PASSPHRASE)
    result(person, "review.list")
    result(person, "review.accept", ids=[held], content="Always run the linters before a push")
    result(person, "review.reject", ids=[held_too, held], reason="we merge with a merge commit")
    error(person, "review.accept", "invalid", ids=[held, held_too], content="one edit, two ids")

    # The ledger, the store, the vault.
    result(person, "ledger.verify")
    error(person, "ledger.verify", "invalid", accept_tail=True, reset_head=True)
    result(person, "ledger.compact")
    result(person, "ledger.verify")
    result(person, "daemon.backup", dir=str(world.root / "backup"))
    error(person, "daemon.backup", "invalid", dir="backup")
    result(person, "vault.rotate")
    result(person, "vault.status")

    # Sync is off on this daemon (see sync() for the daemons where it is on).
    result(person, "sync.status")
    error(person, "sync.exchange", "policy")
    error(person, "sync.invite", "policy")
    error(person, "sync.join", "invalid", code="HKS1-AAAAA")
    error(person, "sync.remove", "invalid", device="not-a-device")

    # Person presence: on, proven, changed, off.
    error(person, "presence.prove", "conflict", passphrase=PASSPHRASE)
    result(person, "presence.set", passphrase=PASSPHRASE)
    result(person, "presence.status")
    result(person, "presence.end")
    result(person, "presence.prove", passphrase=PASSPHRASE)
    result(person, "presence.change", passphrase=f"{PASSPHRASE} two")
    error(person, "presence.set", "conflict", passphrase=PASSPHRASE)
    error(person, "presence.prove", "presence_denied", passphrase="wrong horse")  # the last try
    result(person, "presence.remove")
    error(person, "presence.remove", "conflict")

    # JSON-RPC itself: an unknown method, a batch, broken frames.
    call(person, "memory.nope")
    batch = [
        {"jsonrpc": "2.0", "method": "focus.list", "id": "a"},
        {"jsonrpc": "2.0", "method": "memory.remember", "params": {"content": "batch note"}},
        {"jsonrpc": "2.0", "method": "nope", "id": "c"},
        {"foo": "boo"},
    ]
    session.frame(person, "(batch)", json.dumps(batch).encode())
    session.frame(person, "(parse error)", b'{"jsonrpc": "2.0", "method": "x", "id": ')
    positional = {"jsonrpc": "2.0", "method": "focus.list", "params": [1], "id": "p"}
    session.frame(person, "(positional params)", json.dumps(positional).encode())
    session.frame(person, "(empty batch)", b"[]")

    result(person, "daemon.status")
    sync(world, session)
    result(person, "daemon.stop")


def sync(world: World, session: Session) -> None:
    """Two devices pairing through a shared folder. They exchange on their own at start
    (waited for) and after a join (raced by no recorded reply that it could change)."""
    desk = world.relay("desk", world.desk)
    laptop = world.relay("laptop", world.laptop)
    result, error = session.result, session.error
    # Each daemon's own first exchange runs at its start: done before any recorded call.
    for relay in (desk, laptop):
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while (state := session.peek(relay, "sync.status"))["last_exchange_ms"] is None:
            assert state["error"] is None and time.monotonic() < deadline, state
            time.sleep(0.02)
    result(desk, "sync.exchange")
    result(desk, "sync.status")
    result(desk, "vault.status")
    error(desk, "vault.rotate", "policy")
    code = result(desk, "sync.invite")["code"]
    error(desk, "sync.join", "conflict", code=code)  # its own invitation
    error(desk, "sync.remove", "not_found", device="hd" + "a" * 26)
    desk_id = result(laptop, "sync.join", code=code)["device"]
    result(laptop, "sync.remove", device=desk_id)
    error(laptop, "sync.remove", "conflict", device=desk_id)


# -- the tests -------------------------------------------------------------------------


def run(world: World) -> list[str]:
    """The session's lines, normalised: each call, then every notification the
    listener received."""
    session = Session()
    script(world, session)
    normalise = Normaliser(world.root)
    lines = [frame.line(normalise) for frame in session.frames]
    listener = next(relay for relay in world.relays if relay.name == "listener")
    lines += [
        json.dumps({"via": "listener", "event": normalise(event.decode())}, ensure_ascii=False)
        for event in drained(listener)
    ]
    return lines


def drained(listener: Relay) -> list[bytes]:
    """Every notification the listener received, up to the end of its connection."""
    events = list(listener.events)
    while True:
        try:
            line = listener.line(REPLY_TIMEOUT_S)
        except EOFError:  # closed by the daemon's stop
            return events
        if line is None:
            raise AssertionError("the listener's connection stayed open after daemon.stop")
        events.append(line)


def first_difference(recorded: str, now: str, context: int = 120) -> str:
    """Where two lines first differ, with ``context`` characters around it."""
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, now, strict=False)) if a != b),
        min(len(recorded), len(now)),
    )
    start = max(0, at - context)
    return (
        f"  first difference at character {at}:\n"
        f"    recorded: …{recorded[start : at + context]}…\n"
        f"    now:      …{now[start : at + context]}…"
    )


def describe(recorded: list[str], now: list[str]) -> str:
    """Which lines differ and where, then a unified diff of the lines."""

    def label(line: str) -> str:
        entry = json.loads(line)
        return f"{entry['via']} {entry.get('method', 'notification')}"

    out = []
    for number, (a, b) in enumerate(zip(recorded, now, strict=False), 1):
        if a != b:
            out.append(f"line {number} ({label(a)} / now {label(b)}):\n{first_difference(a, b)}")
    if len(recorded) != len(now):
        out.append(f"{len(recorded)} lines recorded, {len(now)} now")
    diff = difflib.unified_diff(recorded, now, "recorded", "now", n=0, lineterm="")
    cut = [line if len(line) <= 160 else f"{line[:160]}…" for line in list(diff)[:60]]
    return "\n".join([*out[:20], "", *cut])


def test_the_recording_calls_every_method() -> None:
    """A method added to a registry must be added to the script (and recorded)."""
    entries = [json.loads(line) for line in RECORDING.read_text().splitlines()]
    called = {entry["method"] for entry in entries if "method" in entry}
    missing = sorted(registered_methods() - called)
    assert not missing, f"not called by the recorded session: {missing}; add them to script()"


def test_every_reply_is_byte_for_byte_what_was_recorded(world: World) -> None:
    """The session's replies are the recording's (or become it, with HIKMAH_RECORD_WIRE=1)."""
    now = run(world)
    if os.environ.get(RECORD_ENV) == "1":
        RECORDING.parent.mkdir(exist_ok=True)
        RECORDING.write_text("".join(f"{line}\n" for line in now))
        return
    recorded = RECORDING.read_text().splitlines()
    if recorded != now:
        pytest.fail(
            "the wire changed: replies differ from tests/daemon/wire/session.jsonl"
            f" (record again with {RECORD_ENV}=1 only if the change is intended)\n"
            + describe(recorded, now),
            pytrace=False,
        )
