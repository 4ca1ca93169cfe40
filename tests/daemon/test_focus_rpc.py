"""Focus capsules through the daemon and the CLI."""

from __future__ import annotations

import json

from hikmahd.capsules import Capsules
from tests.harness.daemon import Running


def test_recall_absorbs_into_a_capsule_within_the_limit(daemon: Running) -> None:
    daemon.policy.write_text("working_set_limit = 3\n")
    daemon.kill(15)
    daemon.start()
    for i in range(6):
        daemon.call("memory.remember", content=f"kafka consumer lag note {i}", salience=i / 10)
    first = daemon.call("memory.recall", query="kafka lag", focus="task:lag", limit=3)
    assert first["evicted"] == []
    view = daemon.call("focus.read", name="task:lag")
    assert len(view["traces"]) == 3 and view["limit"] == 3
    held = [t["trace"]["id"] for t in view["traces"]]
    absorbed = daemon.call("focus.absorb", name="task:lag", query="kafka consumer", limit=8)
    assert len(absorbed["traces"]) == 3
    assert absorbed["evicted"]  # something had to leave to stay at 3
    pinned = daemon.call("focus.pin", name="task:lag", id=held[-1])
    assert any(t["pinned"] and t["trace"]["id"] == held[-1] for t in pinned["traces"])
    daemon.call("focus.absorb", name="task:lag", query="kafka", limit=8)
    assert held[-1] in [
        t["trace"]["id"] for t in daemon.call("focus.read", name="task:lag")["traces"]
    ]


def test_capsule_lifecycle_from_the_cli(daemon: Running) -> None:
    trace_id = daemon.call("memory.remember", content="the flaky test is test_login_timeout")[
        "trace"
    ]["id"]
    assert daemon.cli("focus", "open", "bug:42").returncode == 0
    assert daemon.cli("recall", "flaky test", "--focus", "bug:42").returncode == 0
    shown = json.loads(daemon.cli("focus", "show", "bug:42", "--json").stdout)
    assert [t["trace"]["id"] for t in shown["traces"]] == [trace_id]
    noted = daemon.cli(
        "focus", "note", "bug:42", "reproduces only under load", "--importance", "0.9"
    )
    assert noted.returncode == 0, noted.stderr
    assert daemon.cli("focus", "pin", "bug:42", trace_id).returncode == 0
    listed = json.loads(daemon.cli("focus", "list", "--json").stdout)
    assert listed["capsules"][0]["name"] == "bug:42"
    assert listed["capsules"][0]["pinned"] == 1 and listed["capsules"][0]["notes"] == 1
    assert "focus     bug:42" in daemon.cli("status").stdout
    assert daemon.cli("focus", "close", "bug:42").returncode == 0
    assert daemon.cli("focus", "show", "bug:42").returncode == 4
    assert daemon.cli("focus", "note", "bug:42", "password=hunter2hunter2").returncode == 3
    assert daemon.cli("focus", "note", "new", "x", "--importance", "2").returncode == 2
    assert json.loads(daemon.cli("focus", "list", "--json").stdout) == {"capsules": []}


def test_notes_are_bounded_and_never_reach_the_ledger(daemon: Running) -> None:
    for i in range(25):
        daemon.call("focus.note", name="wm", text=f"step {i}", importance=(i % 5) / 5)
    notes = daemon.call("focus.read", name="wm")["notes"]
    assert len(notes) == 20
    assert daemon.call("ledger.verify")["records"] == 0


def test_idle_capsules_are_closed() -> None:
    capsules = Capsules()
    capsules.open("a", 12, now_ms=0)
    capsules.open("b", 12, now_ms=0)
    capsules.get("b", now_ms=50_000)  # used since
    assert capsules.close_idle(now_ms=60_000, idle_ms=60_000) == ["a"]
    assert capsules.names() == ["b"]
