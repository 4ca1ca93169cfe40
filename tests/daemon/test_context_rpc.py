"""memory.context: what a coding-agent session starts with, through a real daemon."""

from __future__ import annotations

from tests.harness.daemon import Running

PROJECT = "project:/home/ana/app"


def test_context_gathers_standing_rules_due_commitments_and_conflicts(daemon: Running) -> None:
    rule = daemon.call(
        "memory.remember", content="Never force-push main", kind="constraint", verified=True
    )["trace"]
    mine = daemon.call(
        "memory.remember", content="Use uv, not pip", kind="preference", scope=PROJECT
    )["trace"]
    daemon.call("memory.remember", content="Tabs", kind="preference", scope="project:/x")
    daemon.call("memory.remember", content="Lunch was late", kind="observation")
    soon = daemon.call(
        "memory.remember", content="Send the report", kind="commitment", deadline="+2h"
    )["trace"]
    daemon.call("memory.remember", content="Plan Q3", kind="commitment", deadline="+30d")
    for value in ("16", "15"):
        daemon.call(
            "memory.remember", content=f"db is pg {value}", claim_key="db", claim_value=value
        )

    context = daemon.call("memory.context", scope=PROJECT)
    assert context["scope"] == PROJECT
    assert [e["trace"]["id"] for e in context["standing"]] == [rule["id"], mine["id"]]
    assert [c["trace"]["id"] for c in context["commitments"]] == [soon["id"]]
    assert not context["commitments"][0]["overdue"]
    assert [group["key"] for group in context["conflicts"]] == ["db"]

    verified = daemon.call("memory.context", scope=PROJECT, verified_only=True)
    assert [e["trace"]["id"] for e in verified["standing"]] == [rule["id"]]
    later = daemon.call("memory.context", within_hours=24 * 60, limit=1)
    assert len(later["standing"]) == 1 and len(later["commitments"]) == 2


def test_context_rejects_bad_params_with_their_path(daemon: Running) -> None:
    with daemon.connect() as conn:
        reply = conn.request("memory.context", limit=0)
    assert reply["error"]["code"] == -32602
    assert "limit" in reply["error"]["data"]["path"]
