"""JSON-RPC 2.0 exactly, through the real daemon: the specification's own examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Running
from tests.harness.sockets import Conn

MIB = 1 << 20


def test_error_codes_follow_the_specification() -> None:
    from hikmahd import rpc

    assert (rpc.PARSE_ERROR, rpc.INVALID_REQUEST, rpc.METHOD_NOT_FOUND) == (-32700, -32600, -32601)
    assert (rpc.INVALID_PARAMS, rpc.INTERNAL_ERROR) == (-32602, -32603)
    assert all(-32099 <= code <= -32000 for code in rpc.APPLICATION_CODES.values())
    assert len(set(rpc.APPLICATION_CODES.values())) == len(rpc.APPLICATION_CODES)


def test_every_reason_is_published_once_with_a_code() -> None:
    """Each reason an error can carry is in hikmah.model.errors.REASONS (so the CLI knows its exit
    code), and each has its own application code but invalid (-32602) and internal (-32603)."""
    import hikmahd.__main__  # noqa: F401 -- every module that defines an error
    from hikmah.model.errors import REASONS, HikmahError
    from hikmahd import rpc

    def every(cls: type[HikmahError]) -> list[type[HikmahError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in every(sub))]

    assert {cls.reason for cls in every(HikmahError)} <= set(REASONS)
    assert set(rpc.APPLICATION_CODES) == set(REASONS) - {"invalid", "internal"}


def test_call_with_invalid_json(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send_raw(b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]\n')
        reply = conn.read()
    assert reply["error"]["code"] == -32700 and reply["id"] is None


def test_call_with_invalid_request_object(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send({"jsonrpc": "2.0", "method": 1, "params": "bar"})
        reply = conn.read()
    assert reply["error"]["code"] == -32600 and reply["id"] is None


def test_batch_with_invalid_json(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send_raw(
            b'[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]\n'
        )
        reply = conn.read()
    assert reply["error"]["code"] == -32700 and reply["id"] is None


def test_empty_batch(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send([])
        reply = conn.read()
    assert isinstance(reply, dict)
    assert reply["error"]["code"] == -32600 and reply["id"] is None


@pytest.mark.parametrize("batch", [[1], [1, 2, 3]])
def test_invalid_batches(daemon: Running, batch: list[int]) -> None:
    with daemon.connect() as conn:
        conn.send(batch)
        reply = conn.read()
    assert isinstance(reply, list) and len(reply) == len(batch)
    assert all(r["error"]["code"] == -32600 and r["id"] is None for r in reply)


def test_mixed_batch_with_notifications(daemon: Running) -> None:
    batch: list[Any] = [
        {"jsonrpc": "2.0", "method": "daemon.status", "id": "1"},
        {"jsonrpc": "2.0", "method": "memory.recall", "params": {"query": "x"}},
        {"jsonrpc": "2.0", "method": "memory.conflicts", "params": {}, "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "memory.show", "params": {"id": "tr_none"}, "id": "9"},
    ]
    with daemon.connect() as conn:
        conn.send(batch)
        replies = {r["id"]: r for r in conn.read()}
    assert set(replies) == {"1", "2", None, "5", "9"}
    assert "result" in replies["1"] and replies["2"]["result"] == {"conflicts": []}
    assert replies[None]["error"]["code"] == -32600
    assert replies["5"]["error"]["code"] == -32601
    assert replies["9"]["error"]["code"] == -32003
    assert replies["9"]["error"]["data"]["reason"] == "not_found"


def test_all_notification_batch_gets_no_reply(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send(
            [
                {"jsonrpc": "2.0", "method": "daemon.status"},
                {"jsonrpc": "2.0", "method": "memory.recall", "params": {"query": "x"}},
            ]
        )
        assert conn.nothing_more()
        assert conn.call("daemon.status")["pid"] > 0


def test_a_notification_writes_but_is_not_answered(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send(
            {"jsonrpc": "2.0", "method": "memory.remember", "params": {"content": "quiet write"}}
        )
        assert conn.nothing_more(0.5)
    assert daemon.call("memory.recall", query="quiet write")["results"]


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"limit": "ten"}, "$.limit"),
        ({"limit": 0}, "$.limit"),
        ({"kinds": ["nonsense"]}, "$.kinds[0]"),
        ({"bogus": 1}, "bogus"),
        ({"query": 5}, "$.query"),
    ],
)
def test_invalid_params_name_the_field(daemon: Running, params: dict[str, Any], path: str) -> None:
    with daemon.connect() as conn:
        reply = conn.request("memory.recall", **params)
    assert reply["error"]["code"] == -32602
    assert path in reply["error"]["message"]
    assert reply["error"]["data"]["reason"] == "invalid"
    if path.startswith("$"):
        assert reply["error"]["data"]["path"] == path


def test_positional_params_are_refused(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.send({"jsonrpc": "2.0", "method": "memory.recall", "params": ["x"], "id": 1})
        assert conn.read()["error"]["code"] == -32602


def test_kernel_refusals_are_application_errors(daemon: Running) -> None:
    with daemon.connect() as conn:
        empty = conn.request("memory.remember", content="  ")
        secret = conn.request("memory.remember", content="password=correct-horse-battery-staple")
    assert empty["error"]["code"] == -32602 and empty["error"]["data"]["reason"] == "invalid"
    assert secret["error"]["code"] == -32001
    assert secret["error"]["data"]["reason"] == "secret_detected"
    assert "correct-horse" not in secret["error"]["message"]


def test_oversized_frame_is_refused_and_the_connection_stays_usable(daemon: Running) -> None:
    with daemon.connect() as conn, daemon.connect() as bystander:
        conn.send_raw(
            b'{"jsonrpc":"2.0","method":"memory.remember","params":{"content":"'
            + b"a" * MIB
            + b'"},"id":1}\n'
        )
        reply = conn.read()
        assert reply["error"]["code"] == -32006
        assert reply["error"]["data"]["reason"] == "too_large"
        assert bystander.call("daemon.status")["pid"] > 0
        assert conn.call("daemon.status")["pid"] > 0
    assert daemon.call("daemon.status")["counts"]["active"] == 0


def test_a_frame_just_under_the_limit_is_accepted(short_tmp: Path) -> None:
    content = "word " * ((MIB - 200) // 5)
    running = Running(short_tmp)
    running.policy.write_text(f"max_trace_bytes = {MIB}\n")  # the largest a policy allows
    running.start()
    try:
        with running.connect() as conn:
            result = conn.call("memory.remember", content=content)
    finally:
        running.stop()
    assert result["trace"]["id"].startswith("tr_")


def test_a_text_over_the_policys_limit_is_refused_saying_so(daemon: Running) -> None:
    with daemon.connect() as conn:
        reply = conn.request("memory.remember", content="word " * 60_000)  # 293 KiB
    assert reply["error"]["data"]["reason"] == "invalid"
    assert "over the policy's max_trace_bytes (256 KiB)" in reply["error"]["message"]


def test_a_half_frame_then_hang_up_harms_nobody(daemon: Running) -> None:
    conn = Conn(daemon.socket)
    conn.send_raw(b'{"jsonrpc":"2.0","method":"memory.remem')
    conn.sock.close()
    assert daemon.call("daemon.status")["pid"] > 0


def test_a_silent_client_never_blocks_others(daemon: Running) -> None:
    with daemon.connect() as silent:
        silent.send_raw(b'{"jsonrpc":"2.0",')  # and nothing more
        for i in range(20):
            daemon.call("memory.remember", content=f"note {i}")
        assert daemon.call("daemon.status")["counts"]["active"] == 20


def test_identical_frames_in_flight_are_each_answered(daemon: Running) -> None:
    line = b'{"jsonrpc":"2.0","method":"daemon.status","id":7}\n'
    with daemon.connect() as conn:
        conn.send_raw(line * 5)
        replies = [conn.read() for _ in range(5)]
    assert all(r["id"] == 7 and "result" in r for r in replies)
