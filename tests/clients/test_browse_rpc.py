"""The browser's asyncio JSON-RPC client against a real daemon, and the pure pieces
under its screens (search params, local filters, correction params)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hikmah.model.trace import Provenance, Trace, source_class
from hikmah_browse.api import correction_params
from hikmah_browse.query import Search
from hikmah_browse.rpc import Connection, RemoteError, Unavailable
from tests.harness.daemon import Running


def run(scenario: Any) -> Any:
    return asyncio.run(scenario)


async def opened(daemon: Running, **callbacks: Any) -> Connection:
    return await Connection.open(daemon.socket, autostart=False, daemon_args=[], **callbacks)


def test_a_cancelled_call_drops_its_answer_and_the_next_gets_its_own(daemon: Running) -> None:
    daemon.call("memory.remember", content="the deploy cache is warm")

    async def scenario() -> None:
        connection = await opened(daemon)
        stale = asyncio.ensure_future(connection.call("memory.recall", {"query": "deploy"}))
        await asyncio.sleep(0)  # sent, not yet answered
        stale.cancel()
        status = await connection.call("daemon.status")
        assert "pid" in status and "results" not in status
        found = await connection.call("memory.recall", {"query": "deploy cache"})
        assert [r["trace"]["content"] for r in found["results"]] == ["the deploy cache is warm"]
        await connection.aclose()

    run(scenario())


def test_refusals_carry_the_daemons_words_and_reason(daemon: Running) -> None:
    async def scenario() -> None:
        connection = await opened(daemon)
        with pytest.raises(RemoteError) as refused:
            await connection.call("memory.show", {"id": "tr_000000000000aaaaaaaaaa"})
        assert refused.value.reason == "not_found"
        assert str(refused.value) == "no trace has id tr_000000000000aaaaaaaaaa"
        await connection.aclose()
        with pytest.raises(Unavailable):
            await connection.call("daemon.status")

    run(scenario())


def test_notifications_reach_the_callback(daemon: Running) -> None:
    async def scenario() -> list[tuple[str, dict[str, Any]]]:
        seen: list[tuple[str, dict[str, Any]]] = []
        connection = await opened(daemon, on_notification=lambda m, p: seen.append((m, p)))
        await connection.call("events.subscribe")
        written = await asyncio.to_thread(daemon.call, "memory.remember", content="a new note")
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        await connection.aclose()
        assert seen == [("memory.changed", {"id": written["trace"]["id"], "status": "active"})]
        return seen

    run(scenario())


def test_a_daemon_that_dies_fails_every_waiting_call(daemon: Running) -> None:
    async def scenario() -> None:
        lost = asyncio.Event()
        connection = await opened(daemon, on_lost=lost.set)
        await connection.call("daemon.status")
        await asyncio.to_thread(daemon.kill)
        await asyncio.wait_for(lost.wait(), 10)
        assert connection.closed
        with pytest.raises(Unavailable):
            await connection.call("daemon.status")

    run(scenario())


def test_open_without_a_daemon_says_so(short_tmp: Any) -> None:
    async def scenario() -> None:
        with pytest.raises(Unavailable, match="no hikmahd answers"):
            await Connection.open(short_tmp / "none.sock", autostart=False, daemon_args=[])

    run(scenario())


# --- pure pieces ------------------------------------------------------------------------


def trace(**fields: Any) -> Trace:
    provenance = Provenance(**fields.pop("provenance", {}))
    return Trace(id="tr_0", kind=fields.pop("kind", "belief"), content="c", created_at=1,
                 provenance=provenance, **fields)  # fmt: skip


def test_search_params_and_tags() -> None:
    search = Search(text="deploy #ops cache", kind="belief", scope="project:/a", status="all")
    assert search.params() == {
        "query": "deploy cache", "tags": ["ops"], "limit": 200, "kinds": ["belief"],
        "scope": "project:/a", "include_superseded": True,
    }  # fmt: skip
    assert Search().params() == {"query": "", "tags": [], "limit": 200}
    # Every filter is the daemon's, so a filtered search ranks every trace that passes.
    assert Search(status="fulfilled", source="tool", verified="unverified").params() == {
        "query": "", "tags": [], "limit": 200, "statuses": ["fulfilled"], "sources": ["tool"],
        "verified": False,
    }  # fmt: skip
    assert "statuses" not in Search(status="current").params()


def test_source_classes() -> None:
    assert source_class(trace(provenance={"source": "human:ana"})) == "person"
    assert source_class(trace(provenance={"source": "agent:claude"})) == "agent"
    stamped = {"source": "human:ana", "locator": "agent-session:codex:1"}
    assert source_class(trace(provenance=stamped)) == "agent"  # the daemon's stamp wins
    assert source_class(trace(provenance={"source": "tool:ci"})) == "tool"
    assert source_class(trace(provenance={"source": "doc:runbook"})) == "other"


def test_a_correction_keeps_what_the_original_was() -> None:
    original = trace(kind="commitment", tags=("ops",), scope="project:/a", deadline=99,
                     claim_key="k", claim_value="1", privacy="public", salience=0.9)  # fmt: skip
    params = correction_params(original, "new", "2", verified=True, source="human:ana")
    assert params == {
        "content": "new", "kind": "commitment", "tags": ["ops"], "scope": "project:/a",
        "privacy": "public", "salience": 0.9, "confidence": 0.5, "source": "human:ana",
        "verified": True, "supersedes": "tr_0", "deadline": 99, "claim_key": "k",
        "claim_value": "2",
    }  # fmt: skip
    prediction = correction_params(trace(kind="prediction"), "x", None, verified=False, source="s")
    assert prediction["kind"] == "correction" and "claim_key" not in prediction
