"""The checking worker of bulk imports: a real ``python -m hikmahd.prescreen`` process
that checks contents on the other core and fills the kernel's memos; a credential it
sees is never vouched for and is refused by the writer, in a real daemon's import as
well; it ends when idle, when it dies the writer checks alone, and it never outlives
a daemon killed with SIGKILL."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from hikmah.model import tokenizer
from hikmah.model.secrets import fields
from hikmah.model.tokenizer import terms
from hikmahd import prescreen
from hikmahd.prescreen import Part, Prescreen, verdicts
from tests.harness.daemon import Running

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
CLEAR = "the billing gateway deploys on fridays after the review"
LEAKED = f"ci pushes with the token {GITHUB} from the runner"


def test_the_verdicts_are_the_terms_or_none_for_a_credential() -> None:
    assert verdicts(Part([CLEAR, LEAKED, "the of and"], terms=True)) == [
        sorted(terms(CLEAR)),
        None,
        [],
    ]
    # Ids: found clear or not, no terms.
    assert verdicts(Part(["tr_0193a1b2c3d4e5f6a7b8c9", GITHUB], terms=False)) == [[], None]


def workers(pid: int | None = None) -> list[int]:
    """The pids of the checking workers of process ``pid`` (this one by default), whichever
    of its threads started them."""
    found = []
    for task in Path(f"/proc/{pid or os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            for child in (task / "children").read_text().split():
                if b"hikmahd.prescreen" in _cmdline(int(child)):
                    found.append(int(child))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def _until(condition: Any) -> None:
    with trio.fail_after(20):
        while not condition():
            await trio.sleep(0.02)


async def test_the_worker_fills_the_memos_with_what_it_found_clear_only() -> None:
    screen = Prescreen()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(screen.run)
        assert not screen.ready()  # asking starts it, for the pages to come
        await _until(screen.ready)
        texts = [f"{CLEAR} {n}" for n in range(150)] + [LEAKED]
        ids = [f"tr_{n:022x}" for n in range(150)] + [GITHUB]
        await screen.check(texts, ids)
        assert all(text in fields._vouched for text in texts[:-1] + ids[:-1])
        assert LEAKED not in fields._vouched and GITHUB not in fields._vouched
        assert tokenizer._primed[texts[0]] == terms(texts[0])
        assert LEAKED not in tokenizer._primed
        assert not any(i in tokenizer._primed for i in ids)  # an id is vouched for, no more
        screen.forget(texts + ids)  # the page done: nothing of it stays in memory
        everything = texts + ids
        assert not any(t in fields._vouched or t in tokenizer._primed for t in everything)
        nursery.cancel_scope.cancel()
    assert not workers()  # ended with its owner


async def test_a_worker_that_dies_leaves_the_checking_to_the_writer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prescreen, "IDLE_S", 0.5)
    monkeypatch.setattr(prescreen, "RETRY_S", 0.2)
    screen = Prescreen()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(screen.run)
        screen.ready()
        await _until(screen.ready)
        [pid] = workers()
        os.kill(pid, signal.SIGKILL)
        await screen.check([f"{CLEAR} after the kill"])  # answered by nobody: no memo
        assert f"{CLEAR} after the kill" not in fields._vouched
        await _until(lambda: not screen.ready())
        screen.ready()  # a large page after RETRY_S starts another
        await _until(screen.ready)
        assert workers() and workers() != [pid]
        await trio.sleep(prescreen.IDLE_S)  # no page for IDLE_S: it ends
        await _until(lambda: not workers())
        assert screen._requests is None  # and no page waits for it
        nursery.cancel_scope.cancel()


async def test_a_worker_that_cannot_start_is_tried_again_only_after_a_while(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(prescreen, "WORKER", ("/bin/false",))
    monkeypatch.setattr(prescreen, "RETRY_S", 0.5)
    screen = Prescreen()

    def stopped() -> list[float]:
        return [r.created for r in caplog.records if "checking worker stopped" in r.getMessage()]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(screen.run)
        with trio.fail_after(20):
            while len(stopped()) < 3:  # a large page every 25 ms
                assert not screen.ready()
                await screen.check([CLEAR])  # nothing to ask: the writer checks
                await trio.sleep(0.025)
        nursery.cancel_scope.cancel()
    times = stopped()
    assert all(b - a >= 0.9 * prescreen.RETRY_S for a, b in itertools.pairwise(times))


def page(
    first: int, count: int, leaked_at: int | None = None, id_leaked_at: int | None = None
) -> list[dict[str, Any]]:
    return [
        {
            "line": first + i,
            "trace": {
                "kind": "observation",
                "content": LEAKED if first + i == leaked_at else f"{CLEAR} {first + i}",
                "id": GITHUB if first + i == id_leaked_at else f"tr_{first + i:022x}",
            },
        }
        for i in range(count)
    ]


def daemon_workers(daemon: Running) -> list[int]:
    assert daemon.process is not None
    return workers(daemon.process.pid)


def test_an_import_shared_with_the_worker_refuses_the_credential_and_writes_the_rest(
    words_daemon: Running,
) -> None:
    with words_daemon.connect() as conn:
        first = conn.call("memory.import", lines=page(1, 300, leaked_at=7))
        deadline = time.monotonic() + 20
        while not daemon_workers(words_daemon) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon_workers(words_daemon), "a large page starts the checking worker"
        time.sleep(1)  # it imports the detector, then serves
        second = conn.call("memory.import", lines=page(301, 400, leaked_at=650, id_leaked_at=680))
    assert second["written"] == 398
    assert [r["line"] for r in second["refused"]] == [650, 680]
    assert second["refused"][1]["reason"].startswith("id looks like it holds a credential")
    for result, leaked, count in ((first, 7, 300), (second, 650, 400)):
        assert result["written"] == count - 1 - (result is second)
        assert result["refused"][0]["line"] == leaked
        for refused in result["refused"]:
            assert "credential" in refused["reason"] and GITHUB not in refused["reason"]
    found = words_daemon.call("memory.recall", query="billing gateway fridays 650", limit=50)
    assert all(GITHUB not in r["trace"]["content"] for r in found["results"])
    [worker] = daemon_workers(words_daemon)
    words_daemon.kill()  # SIGKILL: the worker reads the end of its input and ends
    deadline = time.monotonic() + 10
    while _cmdline(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _cmdline(worker)
