"""Reading the past (``as_of``) against a real daemon whose clock the test moves.

The store is built step by step at known times, with corrections, conflicts,
fulfilments, feedback, pins and a purge; after each step the present-time views
(recall, show, conflicts, commitments, export, a claim's history) are recorded.
Then, later, every view as of each step's time, and as of its ledger record, must
be exactly what was recorded then, but for the purged trace, whose text stays
gone: it is shown as purged, with when.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Running, wait_state

T0 = 1_780_000_000_000  # 2026-05-28T20:26:40Z
HOUR = 3_600_000


class Clocked:
    """A daemon on a clock the test sets."""

    def __init__(self, root: Path) -> None:
        self.clock = root / "clock"
        self.set(T0)
        self.daemon = Running(root, module=("tests.daemon.clocked_hikmahd", str(self.clock)))

    def set(self, ms: int) -> None:
        # Renamed into place: the daemon reads the file at any moment, and a file being
        # rewritten reads empty (which once stopped the daemon mid-test).
        staged = self.clock.with_suffix(".new")
        staged.write_text(str(ms))
        staged.replace(self.clock)

    def call(self, method: str, **params: Any) -> Any:
        return self.daemon.call(method, **params)


@pytest.fixture
def clocked(short_tmp: Path) -> Iterator[Clocked]:
    world = Clocked(short_tmp)
    world.daemon.start()
    # Views recorded before the semantic channel is ready would be lexical, and the
    # same views read later through the vectors would not be: the test is of time.
    wait_state(world.daemon, "ready")
    try:
        yield world
    finally:
        world.daemon.stop()


def views(world: Clocked, ids: dict[str, str], **as_of: Any) -> dict[str, Any]:
    """Every view the test compares, as of ``as_of`` (or now), without the reply's own
    ``as_of`` key."""

    def read(method: str, **params: Any) -> Any:
        reply = world.call(method, **params, **as_of)
        assert ("as_of" in reply) == bool(as_of), reply
        reply.pop("as_of", None)
        return reply

    recalls = {
        query: [
            (
                r["trace"]["id"],
                r["status"],
                round(r["score"], 9),
                r["conflicts"],
                r["why"]["pinned"],
            )
            for r in read("memory.recall", query=query, include_superseded=True)["results"]
        ]
        for query in ("database host", "release notes", "locker poster", "")
    }
    shown = {}
    for name, trace_id in ids.items():
        with world.daemon.connect() as conn:
            reply = conn.request("memory.show", id=trace_id, **as_of)
        if "error" in reply:
            shown[name] = reply["error"]["data"]["reason"]
        else:
            result = reply["result"]
            shown[name] = {
                "status": result["status"],
                "content": result["trace"]["content"],
                "superseded_by": result["superseded_by"],
                "history": [(e["trace"]["id"], e["status"]) for e in result["history"]],
                "record": result["record"],
                "purged": result.get("purged"),
            }
    exported = []
    after = None
    while True:
        page = read("memory.export", include_superseded=True, limit=2, after=after)
        exported += [(line["id"], line["status"], line["content"]) for line in page["traces"]]
        after = page["next"]
        if after is None:
            break
    return {
        "recall": recalls,
        "show": shown,
        "conflicts": read("memory.conflicts")["conflicts"],
        "conflict on db.host": read("memory.conflicts", key="DB.Host")["conflicts"],
        "commitments": read("promises.list")["commitments"],
        "overdue": [c["trace"]["id"] for c in read("promises.list", overdue=True)["commitments"]],
        "history": read("memory.history", key="db.host")["values"],
        "export": exported,
    }


def remember(world: Clocked, content: str, **fields: Any) -> str:
    return str(world.call("memory.remember", content=content, **fields)["trace"]["id"])


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_every_view_as_of_each_moment_is_what_it_was_then(clocked: Clocked) -> None:
    world, ids = clocked, {}
    recorded: list[tuple[int, int, dict[str, Any]]] = []  # (time, seq, views)

    def step(hours: int) -> None:
        world.set(T0 + hours * HOUR)

    def record() -> None:
        # The writes' vectors follow in the background: a view read before they are made
        # is judged by words, and read again later it would not be.
        wait_state(world.daemon, "ready")
        head = world.call("daemon.status")["head"]["seq"]
        recorded.append((int(world.clock.read_text()), head, views(world, ids)))

    step(1)
    person = {"source": "human:ana", "verified": True}
    ids["alpha"] = remember(
        world, "the staging database host is alpha", kind="preference",
        claim_key="db.host", claim_value="alpha", **person,
    )  # fmt: skip
    ids["call"] = remember(world, "call the database vendor", kind="commitment", deadline="+5h")
    ids["notes"] = remember(world, "draft the release notes", kind="commitment", deadline="+30h")
    ids["secret"] = remember(world, "the locker code is taped behind the poster")
    record()

    step(2)
    ids["beta"] = remember(
        world, "the staging database host is beta", source="agent:claude",
        claim_key="db.host", claim_value="beta",
    )  # fmt: skip
    record()

    step(3)
    ids["alpha2"] = remember(
        world, "the staging database host is beta now", kind="preference",
        claim_key="db.host", claim_value="beta", supersedes=ids["alpha"], **person,
    )  # fmt: skip
    world.call("memory.feedback", ids=[ids["secret"]], outcome="good")
    world.call("memory.pin", id=ids["notes"])
    record()

    step(7)  # the call is overdue now
    record()
    world.set(T0 + 7 * HOUR + 60_000)  # a time names every record written by then
    world.call("memory.fulfill", id=ids["call"])
    record()

    step(8)
    world.call("memory.purge", id=ids["secret"], reason="retention")
    world.call("memory.unpin", id=ids["notes"])
    world.call("memory.feedback", ids=[ids["alpha2"]], outcome="bad")
    record()

    step(9)
    ids["gamma"] = remember(
        world, "the staging database host is gamma", source="tool:terraform",
        claim_key="db.host", claim_value="gamma",
    )  # fmt: skip
    record()

    # What was recorded is worth comparing: each moment differs from the next.
    values = [[v["value"] for v in g["values"]] for g in recorded[1][2]["conflicts"]]
    assert values == [["alpha", "beta"]] and recorded[2][2]["conflicts"] == []
    assert recorded[3][2]["overdue"] == [ids["call"]] and recorded[4][2]["overdue"] == []
    assert [r[4] for r in recorded[2][2]["recall"]["release notes"]] == [True]  # pinned then
    assert [r[0] for r in recorded[2][2]["recall"]["locker poster"]] == [ids["secret"]]
    assert len(recorded[-1][2]["history"]) == 4 and len(recorded[-1][2]["conflicts"]) == 1
    assert len({str(then) for _at, _seq, then in recorded}) == len(recorded)

    step(30)
    purged_at, purged_seq = recorded[5][0], None
    # As of a time: the records written by then, read at that time. As of a record:
    # read at the time it was written, so as the first view recorded with it.
    points = [(at, iso(at), then) for at, _seq, then in recorded]
    first = {seq: (at, then) for at, seq, then in reversed(recorded)}
    points += [(at, seq, then) for seq, (at, then) in first.items()]
    assert len(first) == len(recorded) - 1  # the call fell overdue without a record
    for at, point, then in points:
        as_of = {"as_of": point}
        got = views(world, ids, **as_of)
        expected = _without_purged_text(then, ids["secret"], at >= purged_at)
        for view in expected:
            if view == "show":
                continue
            assert got[view] == expected[view], (view, as_of)
        for name, was in expected["show"].items():
            now = got["show"][name]
            if name == "secret" and at < purged_at:
                assert isinstance(now, dict) and isinstance(was, dict)
                assert now["purged"]["at"] == purged_at, as_of
                purged_seq = now["purged"]["seq"]
                assert now["content"] == "" and was["content"] != ""
                assert {**now, "content": "", "purged": None} == {**was, "content": ""}
            else:
                assert now == was, (name, as_of)
    assert purged_seq is not None and recorded[4][1] < purged_seq <= recorded[5][1]


def _without_purged_text(then: dict[str, Any], purged: str, gone: bool) -> dict[str, Any]:
    """The views recorded then, as they read once ``purged`` was purged: no recall
    finds its text, no export carries it (it is shown, purged, by ``show``). It shares
    no word with another trace, so it changed no other result's score."""
    if gone:
        return then
    return {
        **then,
        "recall": {
            query: [r for r in results if r[0] != purged]
            for query, results in then["recall"].items()
        },
        "export": [line for line in then["export"] if line[0] != purged],
    }


def test_as_of_refuses_the_future_and_what_is_not_a_record(clocked: Clocked) -> None:
    remember(clocked, "one trace")
    with clocked.daemon.connect() as conn:
        for bad in (99, -1, "+3d", "yesterday", True, "2999-01-01"):
            reply = conn.request("memory.recall", query="trace", as_of=bad)
            assert reply["error"]["data"]["reason"] == "invalid", (bad, reply)
        reply = conn.request("memory.recall", query="trace", as_of=0, focus="task:x")
        assert reply["error"]["data"]["reason"] == "invalid"
        # Before the first record: nothing at all.
        assert conn.call("memory.recall", query="trace", as_of=0)["results"] == []
        assert conn.call("memory.recall", query="trace", as_of="-1h")["results"] == []


def test_the_cli_reads_the_past(clocked: Clocked) -> None:
    world = clocked
    world.set(T0 + HOUR)
    first = remember(
        world, "the deploy window is friday", claim_key="deploy.day", claim_value="friday"
    )
    world.set(T0 + 2 * HOUR)
    remember(
        world, "the deploy window is monday", claim_key="deploy.day", claim_value="monday",
        supersedes=first, source="human:ana", verified=True,
    )  # fmt: skip
    world.set(T0 + 3 * HOUR)
    then = iso(T0 + HOUR + 60_000)

    def cli(*args: str) -> str:
        done = world.daemon.cli(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "friday" in cli("recall", "deploy window", "--as-of", then)
    assert "friday" not in cli("recall", "deploy window")
    shown = cli("show", first, "--as-of", then)
    assert shown.startswith("as of ledger record 1, ") and "superseded" not in shown
    assert "superseded" in cli("show", first)
    history = cli("history", "deploy.day")
    assert history.index("'friday'") < history.index("'monday'") and "human:ana" in history
    assert "'monday'" not in cli("history", "deploy.day", "--as-of", "-2h")
    exported = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "--socket", str(world.daemon.socket),
         "--no-autostart", "export", "--as-of", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.count("\n") == 1 and "friday" in exported.stdout
