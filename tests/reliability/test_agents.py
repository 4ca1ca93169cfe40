"""Trust: an agent session cannot verify, purge, accept a ledger tail,
reset the head, compact, promote as verified or stop the daemon, through any method of
the live dispatcher with any of its boolean arguments, whether the session is detected
from the environment or declared with ``session.restrict``; nor through the CLI.

Two kinds of check. Explicit refusals for the operations the protocol reserves
for a person; and invariants over the whole ledger afterwards, which also cover
methods added later: every verified trace is one the person wrote, every record
the agent caused is stamped with its session, nothing was purged, redacted or
compacted, the person's records are byte for byte what they were, and with a
forged tail present the head did not move.

Already covered elsewhere, not repeated: another uid cannot connect even with
modes loosened to 0777 (tests/daemon/test_peers.py), every detected variable and
``env -i`` under an agent shell (same file), a second connection of a restricted
process (tests/daemon/test_restrict.py), hikmah-agent's tool list
(tests/agent/test_mcp_server.py).
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import lmdb
import pytest

from hikmah.ledger.chain import decode_record, encode_record
from hikmah.ledger.payloads import (
    CompactedPayload,
    FeedbackPayload,
    FulfillPayload,
    PinPayload,
    PurgePayload,
    RedactedPayload,
    RememberPayload,
    decode_payload,
)
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

from .examples import PersonData, person_setup, variants
from .inprocess import METHODS

ROOT = Path(__file__).resolve().parents[2]
DETECTED = clean_env(CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="reliability-1")
DECLARED = ("session.restrict", {"host": "codex", "session_id": "declared-1"})

# What the protocol reserves for a person: (method, the argument that asks for it).
PERSON_ONLY = [
    ("memory.remember", "verified"),
    ("replay.promote", "verified"),
    ("memory.purge", None),
    ("ledger.verify", "accept_tail"),
    ("ledger.verify", "reset_head"),
    ("ledger.compact", None),
    ("vault.rotate", None),
    ("memory.verify", None),
    ("sync.invite", None),
    ("sync.join", None),
    ("sync.remove", None),
    ("review.accept", None),
    ("review.reject", None),
    ("daemon.stop", None),
]


def ledger_lines(data: Path) -> list[bytes]:
    """Every ledger record as stored (read with LMDB directly, the daemon stopped)."""
    env = lmdb.open(str(data / "lmdb"), max_dbs=16, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            return [bytes(v) for _k, v in txn.cursor(db=env.open_db(b"ledger", txn=txn))]
    finally:
        env.close()


def as_agent(
    daemon: Running, requests: list[tuple[str, dict[str, Any]]], *, declared: bool
) -> list[dict[str, Any]]:
    """Send ``requests`` from a process of its own, detected or declared as an agent."""
    sent = [DECLARED, *requests] if declared else requests
    result = subprocess.run(
        [sys.executable, "-m", "tests.reliability.agent_client", str(daemon.socket)],
        input=json.dumps(sent),
        capture_output=True,
        text=True,
        env=clean_env() if declared else DETECTED,
        cwd=ROOT,
        timeout=120,
        start_new_session=False,  # the agent's session: the detected variable is ours
    )
    assert result.returncode == 0, result.stderr
    replies: list[dict[str, Any]] = json.loads(result.stdout)
    if declared:
        assert replies[0]["result"]["restricted"], replies[0]
        return replies[1:]
    return replies


def every_call(data: PersonData) -> list[tuple[str, dict[str, Any]]]:
    """Every method of the live dispatcher with each of its boolean arguments, and a
    correction aimed at the person's verified rule."""
    correction = {"content": "Deploys on Friday are fine", "kind": "correction",
                  "supersedes": data.verified}  # fmt: skip
    return [
        ("memory.remember", correction),
        *(
            (name, params)
            for name, method in sorted(METHODS.items())
            for params in variants(name, method, data)
        ),
    ]


def reason(reply: dict[str, Any]) -> str | None:
    error = reply.get("error")
    return None if error is None else (error.get("data") or {}).get("reason")


def check_refusals(calls: list[tuple[str, dict[str, Any]]], replies: list[dict[str, Any]]) -> None:
    for (name, params), reply in zip(calls, replies, strict=True):
        for method, flag in PERSON_ONLY:
            if name == method and (flag is None or params.get(flag)):
                assert reason(reply) in ("agent_restricted", "invalid"), (name, params, reply)
        if params.get("supersedes"):
            assert reason(reply) == "provenance", reply
        if name == "memory.import":
            assert reply["result"]["written"] == 0 and reply["result"]["refused"], reply
        if name == "memory.import_source" and not params.get("dry_run"):
            assert reply["result"]["written"] + reply["result"]["already"] == 5, reply
        if name == "memory.import_ledger" and not params.get("check_only"):
            refused = reply.get("result", {}).get("refused", [])
            assert len(refused) == 2, reply  # the verified remember and the purge


def check_ledger(before: list[bytes], after: list[bytes], data: PersonData) -> dict[str, int]:
    """The invariants, over every record written while the agents ran."""
    assert after[: len(before)] == before, "the person's records were rewritten"
    person_verified = {data.verified}
    seen: dict[str, int] = {}
    for line in after:
        payload = decode_payload(decode_record(line))
        if isinstance(payload, RememberPayload) and payload.trace.provenance.verified:
            assert payload.trace.id in person_verified, f"verified by an agent: {payload.trace}"
    for line in after[len(before) :]:
        payload = decode_payload(decode_record(line))
        kind = type(payload).__name__
        seen[kind] = seen.get(kind, 0) + 1
        assert not isinstance(payload, PurgePayload | RedactedPayload | CompactedPayload), kind
        if isinstance(payload, RememberPayload):
            locator = payload.trace.provenance.locator or ""
            assert locator.startswith("agent-session:"), payload.trace
            assert not payload.trace.provenance.verified
            assert payload.trace.supersedes != data.verified, payload.trace
        elif isinstance(payload, FulfillPayload | FeedbackPayload | PinPayload):
            assert payload.by is not None, payload
            assert payload.by.startswith(("agent-session:", "tr_")), payload
    return seen


@pytest.mark.parametrize("declared", [False, True], ids=["detected", "declared"])
def test_no_method_or_argument_lets_an_agent_act_as_a_person(
    daemon: Running, tmp_path: Path, declared: bool
) -> None:
    data = person_setup(daemon, tmp_path)
    daemon.stop()
    before = ledger_lines(daemon.data)
    daemon.start()
    calls = every_call(data)
    replies = as_agent(daemon, calls, declared=declared)
    check_refusals(calls, replies)
    daemon.stop()
    seen = check_ledger(before, ledger_lines(daemon.data), data)
    # The agent did write (stamped): the refusals above are not a dead connection.
    assert seen.get("RememberPayload", 0) >= 3, seen


def forge_tail(data: Path) -> int:
    """Append a well-chained record behind the daemon's back, as another process could
    (LMDB lets two processes write one environment). Returns its seq."""
    env = lmdb.open(str(data / "lmdb"), max_dbs=16)
    try:
        ledger = env.open_db(b"ledger")
        with env.begin(write=True) as txn:
            cursor = txn.cursor(db=ledger)
            assert cursor.last()
            last = decode_record(bytes(cursor.value()))
            payload = b'{"type":"fulfill","id":"tr_forged"}'
            forged = encode_record(last.seq + 1, last.hash, payload)
            txn.put(struct.pack(">Q", forged.seq), forged.line, db=ledger)
        return forged.seq
    finally:
        env.close()


def test_with_a_forged_tail_no_agent_call_moves_the_head(daemon: Running, tmp_path: Path) -> None:
    data = person_setup(daemon, tmp_path)
    head = daemon.call("daemon.status")["head"]  # the acknowledged head
    seq = forge_tail(daemon.data)  # while the daemon runs
    with daemon.connect() as conn:
        assert reason(conn.request("memory.remember", content="refused")) == "conflict"
    calls = every_call(data)
    for declared in (False, True):
        replies = as_agent(daemon, calls, declared=declared)
        for (name, params), reply in zip(calls, replies, strict=True):
            if name == "ledger.verify" and (params.get("accept_tail") or params.get("reset_head")):
                assert reason(reply) in ("agent_restricted", "invalid"), reply
    report = daemon.call("ledger.verify")
    assert not report["ok"] and daemon.call("daemon.status")["head"] == head
    assert report["records"] == seq, report
    assert any("1 unacknowledged record" in error for error in report["errors"]), report
    with daemon.connect() as conn:
        assert reason(conn.request("memory.remember", content="still refused")) == "conflict"
    daemon.kill(signal.SIGTERM)


def test_the_cli_refuses_person_only_commands_in_an_agent_session(
    daemon: Running, tmp_path: Path
) -> None:
    """The commands tests/daemon/test_peers.py does not already drive under agent
    variables: promote --verified, compact, invalidate of a verified rule, and import
    of a verified line."""
    data = person_setup(daemon, tmp_path)
    env = clean_env(CODEX_SESSION_ID="cli-1")
    promoted = daemon.cli("promote", data.proposal, "--verified", env=env)
    assert promoted.returncode == 3 and "CODEX_SESSION_ID" in promoted.stderr, promoted
    daemon.call("memory.purge", id=data.plain, reason="so that compaction has work")
    compacted = daemon.cli("compact", env=env)
    assert compacted.returncode == 3 and "CODEX_SESSION_ID" in compacted.stderr, compacted
    invalidated = daemon.cli(
        "invalidate", data.rule_text, "--reason", "agent", "--yes", "--json", env=env
    )
    assert data.verified in invalidated.stdout + invalidated.stderr
    lines = tmp_path / "verified.jsonl"
    lines.write_text(
        json.dumps({"content": "imported as verified", "provenance": {"verified": True}}) + "\n"
    )
    imported = daemon.cli("import", str(lines), env=env)
    assert imported.returncode == 3, imported
    shown = daemon.call("memory.show", id=data.verified)
    assert shown["status"] == "active" and shown["trace"]["provenance"]["verified"]
    assert daemon.call("memory.recall", query="imported as verified")["results"] == []
    daemon.stop()
    for line in ledger_lines(daemon.data):
        payload = decode_payload(decode_record(line))
        assert not isinstance(payload, RedactedPayload | CompactedPayload), payload
        if isinstance(payload, RememberPayload) and payload.trace.provenance.verified:
            assert payload.trace.id == data.verified, payload.trace
