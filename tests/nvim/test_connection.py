"""The plugin's connection: the socket path, framing, many requests in flight, timeouts,
a missing daemon, and a daemon that restarts underneath it."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hikmah.model.paths import socket_path
from tests.harness.daemon import Running
from tests.harness.nvim import Nvim, lua

ERROR = 4  # vim.log.levels.ERROR


def test_the_socket_is_found_as_the_cli_finds_it(nvim: Nvim, short_tmp: Path) -> None:
    cases = [
        {"HIKMAH_SOCKET": "/tmp/elsewhere/h.sock", "XDG_RUNTIME_DIR": "/run/user/7"},
        {"HIKMAH_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/7/"},
        {"HIKMAH_SOCKET": "", "XDG_RUNTIME_DIR": "relative/dir"},
        {"HIKMAH_SOCKET": "", "XDG_RUNTIME_DIR": ""},
    ]
    drivers = [
        nvim.start('T.data.path = require("hikmah").socket_path()', env=case) for case in cases
    ]
    found = [driver.result()["data"]["path"] for driver in drivers]
    assert found == [str(socket_path(None, case)) for case in cases]
    assert found[1] == "/run/user/7/hikmah/hikmahd.sock"
    assert found[3] == f"/tmp/hikmah-{os.getuid()}/hikmahd.sock"
    configured = nvim.run(
        """
        require("hikmah").setup({ socket = "/tmp/x/from-setup.sock", reminders = false })
        T.data.path = require("hikmah").socket_path()
        """,
        env=cases[0],
    )
    assert configured["data"]["path"] == "/tmp/x/from-setup.sock"


@contextmanager
def fake_daemon(path: Path, chunk: int = 7) -> Iterator[list[dict[str, object]]]:
    """A peer that reads three requests, then answers them in reverse order with a
    notification first, all of it cut into ``chunk``-byte writes; a fourth is never answered.
    Yields the requests it read."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(20)
    received: list[dict[str, object]] = []
    release = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, conn.makefile("rb") as stream:
            for _ in range(3):
                received.append(json.loads(stream.readline()))
            replies: list[dict[str, object]] = [
                {"jsonrpc": "2.0", "method": "memory.changed", "params": {"id": "x"}}
            ]
            for request in reversed(received):
                echo = {"method": request["method"], "params": request["params"]}
                replies.append({"jsonrpc": "2.0", "result": echo, "id": request["id"]})
            wire = b"".join(json.dumps(r).encode() + b"\n\n" for r in replies)
            for start in range(0, len(wire), chunk):
                conn.sendall(wire[start : start + chunk])
                time.sleep(0.001)
            received.append(json.loads(stream.readline()))  # the one left unanswered
            release.wait(timeout=20)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        release.set()
        thread.join(timeout=10)
        listener.close()


def test_replies_in_pieces_and_out_of_order_reach_their_callers(
    nvim: Nvim, short_tmp: Path
) -> None:
    path = short_tmp / "fake.sock"
    with fake_daemon(path) as received:
        done = nvim.run(
            """
            require("hikmah").setup({ reminders = false, timeout_ms = 400 })
            local got = {}
            local began = (vim.uv or vim.loop).hrtime()
            for i, word in ipairs({ "alpha", "beta", "gamma" }) do
              require("hikmah").call("memory.recall", { query = word }, function(err, result)
                got[#got + 1] = { asked = word, err = err, result = result }
              end)
            end
            T.data.returned_ms = ((vim.uv or vim.loop).hrtime() - began) / 1e6
            T.wait(5000, function() return #got == 3 end, "three replies")
            T.data.got = got
            local err = T.call("daemon.status", nil)
            T.data.late = err
            T.data.timeout_ms = ((vim.uv or vim.loop).hrtime() - began) / 1e6
            """,
            env={"HIKMAH_SOCKET": str(path)},
        )
    data = done["data"]
    assert data["returned_ms"] < 50  # three calls, and the editor went on at once
    got = data["got"]
    assert [g["asked"] for g in got] == ["gamma", "beta", "alpha"]  # as the replies came
    for g in got:
        assert g["result"] == {"method": "memory.recall", "params": {"query": g["asked"]}}
    ids = [r["id"] for r in received]
    assert len(set(ids)) == 4 and all(isinstance(i, int) for i in ids)
    assert received[3]["method"] == "daemon.status"
    assert data["late"]["reason"] == "timeout"
    assert "did not answer daemon.status within 0.4 s" in data["late"]["message"]
    assert done["notes"] == []  # a notification on a request connection is not shown


NOTES = 240


def letters(number: int) -> str:
    """A word of its own for each number (the tokenizer keeps plain words)."""
    word = ""
    while True:
        number, digit = divmod(number, 26)
        word += "abcdefghijklmnopqrstuvwxyz"[digit]
        if number == 0:
            return "q" + word


def request(method: str, request_id: int, **params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}


def test_many_requests_in_flight_on_a_real_daemon(nvim: Nvim, short_tmp: Path) -> None:
    daemon = Running(short_tmp)
    daemon.policy.write_text("recall_limit = 200\n")
    daemon.start()
    try:
        words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
        replies = []
        with daemon.connect() as conn:  # pipelined, 40 at a time: few group commits
            for first in range(0, NOTES, 40):
                for n in range(first, first + 40):
                    body = " ".join(letters(n * 1000 + k) for k in range(300))
                    content = f"{words[n % len(words)]} note {body}"
                    conn.send(request("memory.remember", n, content=content))
                replies += [conn.read() for _ in range(40)]
        assert all("result" in r for r in replies)
        done = nvim.run(
            f"""
            local words = {lua(words)}
            local got = {{}}
            for _, word in ipairs(words) do
              require("hikmah").call("memory.recall", {{ query = word, limit = 200 }},
                function(err, result) got[word] = err or result end)
            end
            T.wait(10000, function() return vim.tbl_count(got) == #words end, "all replies")
            local summary = {{}}
            for word, result in pairs(got) do
              local matching = 0
              for _, item in ipairs(result.results or {{}}) do
                if item.trace.content:find(word .. " note", 1, true) then
                  matching = matching + 1
                end
              end
              summary[word] = {{ count = #(result.results or {{}}), matching = matching,
                                 bytes = #vim.json.encode(result) }}
            end
            T.data.summary = summary
            """,
            socket=daemon.socket,
        )
    finally:
        daemon.stop()
    summary = done["data"]["summary"]
    assert set(summary) == set(words)
    for word in words:
        assert summary[word]["count"] == summary[word]["matching"] == NOTES // 8, summary[word]
        assert summary[word]["bytes"] > 64 * 1024  # more than one read of the socket


def test_a_missing_daemon_is_reported_once_per_outage(nvim: Nvim, short_tmp: Path) -> None:
    daemon = Running(short_tmp)
    driver = nvim.start(
        """
        require("hikmah").setup({})  -- reminders: the first subscription attempt fails
        local reasons = {}
        for _ = 1, 3 do
          reasons[#reasons + 1] = T.call("daemon.status").reason
        end
        vim.cmd("HikmahRecall deploy")
        vim.cmd("HikmahCommitments")
        vim.cmd("HikmahConflicts")
        vim.wait(1300) -- the reminders connection retries meanwhile
        T.data.reasons = reasons
        T.data.first = vim.deepcopy(T.notes)
        T.data.floats = #T.floats()
        T.signal("reported")
        T.await("started")
        local err, status = T.call("daemon.status")
        T.data.reached = status and status.version
        T.signal("reached")
        T.await("stopped")
        for _ = 1, 3 do
          T.call("daemon.status")
        end
        vim.cmd("HikmahRecall deploy")
        vim.wait(200)
        """,
        socket=daemon.socket,
    )
    try:
        driver.wait_for("reported")
        daemon.start()
        driver.signal("started")
        driver.wait_for("reached")
        daemon.kill()
        driver.signal("stopped")
        done = driver.result()
    finally:
        daemon.stop()
    data = done["data"]
    assert data["reasons"] == ["unavailable"] * 3
    assert data["floats"] == 0
    [first] = data["first"]
    assert first["level"] == ERROR
    message = first["msg"]
    assert message.startswith(
        f"Hikmah: no hikmahd is running at {daemon.socket} (ENOENT: no socket"
    )
    assert "`hikmahd`" in message and "`hikmah status`" in message
    assert data["reached"] == "0.1.0"
    assert len(done["notes"]) == 2  # said again once after the daemon was reached and lost
    again = done["notes"][1]["msg"]  # killed: its socket file is left behind
    assert again.startswith(f"Hikmah: no hikmahd is running at {daemon.socket} (ECONNREFUSED: ")
    assert "stale socket" in again


def test_reconnects_and_resubscribes_after_a_daemon_restart(daemon: Running, nvim: Nvim) -> None:
    driver = nvim.start(
        """
        local events = require("hikmah.events")
        require("hikmah").setup({})
        T.wait(5000, function() return events.subscribed end, "subscribed")
        local _, before = T.call("daemon.status")
        T.data.before = before.pid
        T.signal("ready")
        T.await("restarted")
        local err, after = T.call("daemon.status")
        T.data.err = err
        T.data.after = after and after.pid
        T.wait(8000, function() return events.subscribed end, "subscribed again")
        T.call("memory.remember", {
          content = "Water the office plants",
          kind = "commitment",
          deadline = os.time() * 1000 - 60000,
        })
        T.wait(5000, function() return events.count > 0 end, "the reminder")
        """,
        socket=daemon.socket,
    )
    driver.wait_for("ready")
    assert daemon.process is not None
    first_pid = daemon.process.pid
    daemon.kill()
    daemon.start()
    driver.signal("restarted")
    done = driver.result()
    data = done["data"]
    assert data.get("err") is None
    assert data["before"] == first_pid
    assert data["after"] == daemon.process.pid != first_pid
    [note] = done["notes"]  # the reminder, and no complaint about the restart
    assert note["level"] == ERROR
    assert note["msg"].startswith("Hikmah: overdue since ")
    assert "Water the office plants" in note["msg"]
