"""What a method declares at registration, enforced by the dispatcher alone: person-only
methods, cross-field params checks, and blocking handlers run through the offload hook."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from hikmah.access.principal import AgentSession
from hikmah.model.errors import InvalidInput
from hikmah.model.wire.base import NoParams, Params
from hikmahd.daemon import REGISTRIES
from hikmahd.rpc import JSON, Dispatcher, Registry

AGENT = AgentSession(host="codex", session_id="1", variables=("CODEX_SESSION_ID",))


@dataclass
class Caller:
    session: AgentSession | None = None


class Both(Params, frozen=True):
    a: bool = False
    b: bool = False

    def check(self) -> None:
        if self.a and self.b:
            raise InvalidInput("a and b exclude each other")


def registry() -> Registry:
    methods = Registry()

    @methods.method("x.open", NoParams, str)
    async def x_open(ctx: Caller, params: NoParams) -> JSON:
        return "open"

    @methods.method("x.guarded", Both, str, person=lambda p: "guarded b" if p.b else None)
    async def x_guarded(ctx: Caller, params: Both) -> JSON:
        return "done"

    @methods.method("x.early", NoParams, str, early=True)
    async def x_early(ctx: Caller, params: NoParams) -> JSON:
        return "early"

    @methods.blocking("x.slow", NoParams, int)
    def x_slow(ctx: Caller, params: NoParams) -> JSON:
        return threading.get_ident()

    return methods


async def call(dispatcher: Dispatcher, method: str, caller: Caller, **params: Any) -> Any:
    request = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
    return await dispatcher.frame(msgspec.json.encode(request), caller)


async def test_a_person_only_call_is_refused_to_an_agent_session_only() -> None:
    dispatcher = Dispatcher(registry())
    refused = await call(dispatcher, "x.guarded", Caller(AGENT), b=True)
    assert refused["error"]["data"]["reason"] == "agent_restricted"
    assert "guarded b needs a person" in refused["error"]["message"]
    assert (await call(dispatcher, "x.guarded", Caller(AGENT), a=True))["result"] == "done"
    assert (await call(dispatcher, "x.guarded", Caller(), b=True))["result"] == "done"


async def test_params_are_checked_across_fields_before_the_person_check() -> None:
    dispatcher = Dispatcher(registry())
    reply = await call(dispatcher, "x.guarded", Caller(AGENT), a=True, b=True)
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["reason"] == "invalid"
    assert reply["error"]["message"] == "a and b exclude each other"


async def test_a_blocking_handler_runs_through_the_offload_hook() -> None:
    offloaded: list[Callable[[], Any]] = []

    async def inline(work: Callable[[], Any]) -> Any:
        offloaded.append(work)
        return work()

    dispatcher = Dispatcher(registry(), offload=inline)
    assert (await call(dispatcher, "x.slow", Caller()))["result"] == threading.get_ident()
    assert (await call(dispatcher, "x.open", Caller()))["result"] == "open"
    assert len(offloaded) == 1
    # The default hook is a worker thread.
    thread = (await call(Dispatcher(registry()), "x.slow", Caller()))["result"]
    assert thread != threading.get_ident()


def test_the_served_person_only_and_blocking_methods_are_declared() -> None:
    methods = Dispatcher(*REGISTRIES).registry.methods
    person = {name for name, m in methods.items() if m.person is not None}
    assert person == {
        "ledger.compact", "ledger.verify", "memory.verify", "vault.rotate",
        "presence.set", "presence.change", "presence.remove",
        "sync.invite", "sync.join", "sync.remove", "review.accept", "review.reject",
        "daemon.stop",
    }  # fmt: skip
    blocking = {name for name, m in methods.items() if m.blocking}
    assert blocking == {"memory.export", "memory.calibration", "replay.consolidate"}
    # What an agent's session start and a status ask first, answered while presence is
    # still read from the ledger; none of them reads the caller's session.
    early = {name for name, m in methods.items() if m.early}
    assert early == {"daemon.status", "memory.recall", "memory.context"}


async def test_only_early_methods_are_served_before_the_daemon_is_ready() -> None:
    # Person presence is read from the ledger at start (seconds at a million records):
    # a method that may read the caller's session waits for it; an early one does not.
    read = trio.Event()

    async def ready() -> None:
        await read.wait()

    dispatcher = Dispatcher(registry(), ready=ready)
    answered: dict[str, Any] = {}

    async def ask(method: str) -> None:
        answered[method] = (await call(dispatcher, method, Caller()))["result"]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "x.open")
        nursery.start_soon(ask, "x.early")
        await trio.testing.wait_all_tasks_blocked()
        assert answered == {"x.early": "early"}
        read.set()
    assert answered == {"x.early": "early", "x.open": "open"}


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","method":"x.open","id":1e999}',  # a number out of range
        b'{"jsonrpc":"2.0","method":"x.open","id":"\xc3("}',  # a string that is not UTF-8
        b'{"jsonrpc":"2.0","method":"x.nope","params":{"a":1e999},"id":1}',
        b'{"jsonrpc":"2.0","method":"x.guarded","params":{"a":"\xc3("},"id":1}',
        b'[{"jsonrpc":"2.0","method":"x.open","id":1},{"jsonrpc":"2.0","method":"x.open","id":1e999}]',
    ],
)
async def test_a_frame_whose_member_is_not_json_is_unparseable_as_a_whole(frame: bytes) -> None:
    """A frame is read member by member; one member's bytes that are not JSON make the
    whole frame a parse error, answered with a null id, and nothing of it runs."""
    reply = await Dispatcher(registry()).frame(frame, Caller())
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert reply["error"]["message"].startswith("parse error: ")
