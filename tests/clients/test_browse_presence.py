"""``hikmah browse`` with person presence on: a person-only write the daemon
refuses with ``presence_required`` asks for the passphrase in a dialog, proves it with
``presence.prove`` and is sent again; run by Textual's headless pilot in a real
pseudo-terminal (the proof is bound to it), against a real daemon. Without a
terminal of its own the browser never asks and says why."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual", reason="hikmah browse needs the browse extra (textual)")

from tests.clients.browse_world import remember
from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.terminals import PtyShell
from tests.reliability.test_agents import ledger_lines

REPO = Path(__file__).resolve().parents[2]
PASSPHRASE = "correct-horse-battery"  # typed key by key: no spaces

# The person's session: cancel the prompt once, then a wrong passphrase, then the right one.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from textual.widgets import Input, TextArea
    from hikmah_browse.app import BrowseApp
    from hikmah_browse.dialogs import Message, Passphrase
    from hikmah_browse.rpc import Dialer
    from hikmah_browse.trace import TracePage
    from tests.clients.browse_world import until

    async def main():
        socket, trace_id, wrong, right = sys.argv[1:5]
        app = BrowseApp(Dialer(Path(socket)), source="human:ana")
        seen = {}
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.live and app.status is not None, "the app")
            app.open_trace(trace_id)
            page = lambda: isinstance(app.screen, TracePage) and app.screen.shown is not None
            await until(pilot, page, "the trace")

            async def correct(text):
                await pilot.press("c")
                await until(pilot, lambda: app.screen.query(TextArea), "the correction")
                app.screen.query_one(TextArea).load_text(text)
                await pilot.press("ctrl+s")
                asked = lambda: isinstance(app.screen, (Passphrase, Message))
                await until(pilot, asked, "the passphrase or a refusal")
                return isinstance(app.screen, Passphrase)

            if not await correct("the first try"):
                seen["refused"] = app.screen.text
                print(json.dumps(seen))
                return
            seen["prompt"] = str(app.screen.query_one("#prompt").render())
            seen["password"] = app.screen.query_one("#passphrase", Input).password
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, Message), "the refusal")
            seen["cancelled"] = app.screen.text
            await pilot.press("escape")
            await until(pilot, page, "the trace again")
            await correct("checked by me")
            await pilot.press(*wrong, "enter")
            again = lambda: isinstance(app.screen, Passphrase) and app.screen.refused
            await until(pilot, again, "the passphrase asked again")
            seen["again"] = app.screen.refused
            await pilot.press(*right, "enter")
            moved = lambda: page() and app.screen.trace_id != trace_id
            await until(pilot, moved, "the correction's page")
            seen["written"] = app.screen.trace_id
        print(json.dumps(seen))

    asyncio.run(main())
    """
)


@pytest.fixture
def shell(daemon: Running) -> Iterator[PtyShell]:
    """A person's terminal in which the passphrase was set, and its ticket then ended."""
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}", HIKMAH_SOCKET=str(daemon.socket))
    terminal = PtyShell(env, daemon.root)
    try:
        terminal.set_passphrase(PASSPHRASE)
        yield terminal
    finally:
        terminal.close()


def script_line(daemon: Running, trace_id: str) -> list[str]:
    path = daemon.root / "browse_presence.py"
    path.write_text(SCRIPT)
    return [sys.executable, str(path), str(daemon.socket), trace_id, "not-the-passphrase",
            PASSPHRASE]  # fmt: skip


def seen_in(shown: str) -> dict[str, Any]:
    line = next(ln for ln in reversed(shown.splitlines()) if ln.startswith("{"))
    found: dict[str, Any] = json.loads(line)
    return found


def test_a_person_only_write_asks_for_the_passphrase_and_is_sent_again(
    daemon: Running, shell: PtyShell
) -> None:
    old = remember(daemon, "The release branch is cut on Mondays", kind="belief")
    command = shlex.join(script_line(daemon, old["id"]))
    status, shown = shell.run(f"PYTHONPATH={shlex.quote(str(REPO))} {command}", timeout=120)
    assert status == 0, shown
    seen = seen_in(shown)
    assert seen["prompt"] == "Hikmah passphrase: " and seen["password"] is True, seen
    assert "no passphrase given: nothing was done" in seen["cancelled"], seen
    assert "wrong passphrase" in seen["again"], seen
    fixed = daemon.call("memory.show", id=seen["written"])["trace"]
    assert fixed["content"] == "checked by me" and fixed["provenance"]["verified"] is True
    assert daemon.call("memory.show", id=old["id"])["status"] == "superseded"
    contents = [t["content"] for t in daemon.call("memory.export", limit=100)["traces"]]
    assert "the first try" not in contents  # the cancelled one was never written
    assert "a wrong passphrase from pid" in daemon.log.read_text()  # logged, then proven
    daemon.stop()
    try:
        assert all(PASSPHRASE.encode() not in line for line in ledger_lines(daemon.data))
    finally:
        daemon.start()


def test_without_a_terminal_of_its_own_the_browser_never_asks(
    daemon: Running, shell: PtyShell
) -> None:
    old = remember(daemon, "The release branch is cut on Mondays", kind="belief")
    done = subprocess.run(
        script_line(daemon, old["id"]), capture_output=True, text=True, timeout=60, cwd=REPO,
        env=clean_env(PYTHONPATH=str(REPO)), stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = seen_in(done.stdout)
    assert "person-only action" in seen["refused"] and "no terminal" in seen["refused"], seen
    assert daemon.call("memory.show", id=old["id"])["status"] == "active"
