"""Every cheap escape from an agent's shell, as a real process tree under an agent
host (tests/daemon/escapes.py), with person presence off and on, through the CLI, raw
JSON-RPC and hikmah-agent's link.

With presence off, detection alone decides: what keeps the host above the client is
refused; what reparents the client away from it (``setsid -f``, ``nohup … &`` then
exit, a double fork) is not, and docs/security.md says so. With presence on, every
person-only action is refused to every one of them. :data:`OUTCOMES` is that table;
docs/security.md shows the same one (checked below).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.terminals import PtyShell
from tests.reliability.examples import PersonData, person_setup
from tests.reliability.test_agents import METHODS, PERSON_ONLY, every_call

from .escapes import ESCAPES, claude_host, client_script, reason, results, run_escape

SECURITY = Path(__file__).resolve().parents[2] / "docs" / "security.md"
PASSPHRASE = "a long walk on the beach"
# escape -> (presence off, presence on), for a verified write through the CLI and raw
# JSON-RPC; hikmah-agent lowers itself to an agent, so it is refused in every case.
OUTCOMES = {
    "env -i": ("refused", "refused"),
    "exec env -i": ("refused", "refused"),
    "setsid env -i": ("refused", "refused"),
    "setsid -f": ("allowed", "refused"),
    "nohup … & then exit": ("allowed", "refused"),
    "double fork": ("allowed", "refused"),
    "a reparented orphan": ("allowed", "refused"),
    "script (a pty)": ("refused", "refused"),
}
PRESENCE_CHANGES = {"presence.prove", "presence.set", "presence.change", "presence.remove"}


class Person:
    def __init__(self, daemon: Running, data: PersonData) -> None:
        self.daemon, self.data = daemon, data
        self.host = claude_host(daemon.root / "home")


@pytest.fixture(scope="module")
def persons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Person]]:
    """Two daemons with a person's data: one without a passphrase, one with."""
    import tempfile

    found: dict[str, Person] = {}
    roots = []
    try:
        for presence in ("off", "on"):
            root = Path(tempfile.mkdtemp(prefix="hke", dir="/tmp"))
            roots.append(root)
            daemon = Running(root).start()
            found[presence] = Person(daemon, person_setup(daemon, root))
        set_passphrase(found["on"].daemon)
        yield found
    finally:
        for person in found.values():
            person.daemon.stop()
        import shutil

        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def terminal_env(daemon: Running) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}", HIKMAH_SOCKET=str(daemon.socket))


def set_passphrase(daemon: Running) -> None:
    """A person sets the passphrase in a terminal of their own, then ends their ticket."""
    shell = PtyShell(terminal_env(daemon), daemon.root)
    try:
        shell.set_passphrase(PASSPHRASE)
    finally:
        shell.close()
    assert daemon.call("presence.status")["on"]


def verified_write(content: str) -> dict[str, Any]:
    return {"content": content, "kind": "constraint", "verified": True, "source": "human:ana"}


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_with_presence_off_only_detection_decides(persons: dict[str, Person], escape: str) -> None:
    person = persons["off"]
    daemon = person.daemon
    work = daemon.root / "runs" / f"off-{list(ESCAPES).index(escape)}"
    script = client_script(
        work, daemon.socket, daemon.data,
        requests=[("memory.remember", verified_write(f"raw, {escape}"))],
        cli=[["remember", "--verified", "--kind", "constraint", f"cli, {escape}"]],
        agent=[("memory.remember", verified_write(f"agent, {escape}"))],
    )  # fmt: skip
    run_escape(escape, person.host, script)
    raw, cli, agent = results(work, 1)
    expected = OUTCOMES[escape][0]
    if expected == "refused":
        assert reason(raw[0]) == "agent_restricted", raw
        assert cli[0][0] == 3 and "needs a person" in cli[0][1], cli
    else:
        assert reason(raw[0]) is None and raw[0]["result"]["trace"]["provenance"]["verified"]
        assert cli[0][0] == 0, cli
    assert agent == [{"reason": "agent_restricted"}], agent


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_with_presence_on_every_person_only_action_is_refused(
    persons: dict[str, Person], escape: str
) -> None:
    person = persons["on"]
    daemon, data = person.daemon, person.data
    calls = [
        *tried_by_an_escape(every_call(data)),
        ("presence.prove", {"passphrase": PASSPHRASE}),  # the right one, from no terminal
        ("presence.change", {"passphrase": "another long passphrase"}),
        ("presence.remove", {}),
        # Last: the connection is an agent's from here on (every call after it would be
        # refused as one, whatever presence says).
        ("session.restrict", {"host": "", "session_id": ""}),
    ]
    cli = [
        ["remember", "--verified", "--kind", "constraint", f"cli, {escape}"],
        ["purge", "--id", data.plain, "--reason", "escaped"],
        ["verify-ledger", "--reset-head"],
        ["compact"],
        ["passphrase", "remove"],
        ["sync", "invite"],
        ["sync", "remove", "hd" + "a" * 26],
        ["invalidate", data.rule_text, "--reason", "escaped", "--yes"],
    ]
    agent = [
        ("memory.remember", verified_write(f"agent, {escape}")),
        ("memory.purge", {"id": data.plain, "reason": "escaped"}),
        ("presence.prove", {"passphrase": PASSPHRASE}),
        ("sync.invite", {}),
    ]
    work = daemon.root / "runs" / f"on-{list(ESCAPES).index(escape)}"
    run_escape(
        escape, person.host, client_script(work, daemon.socket, daemon.data, calls, cli, agent)
    )
    raw, commands, by_agent = results(work, len(cli))

    # Detection refuses what it sees (an agent); presence refuses what it does not.
    detected = OUTCOMES[escape][0] == "refused"
    expected = "agent_restricted" if detected else "presence_required"
    for (name, params), reply in zip(calls, raw, strict=True):
        person_only = any(
            name == method and (flag is None or params.get(flag)) for method, flag in PERSON_ONLY
        )
        if params.get("accept_tail") and params.get("reset_head"):
            assert reason(reply) == "invalid", reply  # one or the other, never both
        elif name == "presence.prove":
            assert reason(reply) == ("agent_restricted" if detected else "presence_denied")
        elif person_only or name in PRESENCE_CHANGES:
            assert reason(reply) == expected, (escape, name, params, reply)
    for command, (status, shown) in zip(cli[:-1], commands[:-1], strict=True):
        assert status == 3, (escape, command, shown)
        said = " ".join(shown.split())
        if detected:
            assert "agent" in said and "needs a person's presence" not in said, (escape, said)
        else:  # refused for want of a proof (passphrase remove: it cannot even ask here)
            presence = ("needs a person's presence", "no terminal of its own")
            assert any(words in said for words in presence), (escape, command, said)
    assert f"refused {data.verified}: verified" in commands[-1][1], commands[-1]
    assert {r.get("reason") for r in by_agent} <= {"agent_restricted"}, by_agent
    untouched(daemon, data)


def tried_by_an_escape(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Every call but ``session.restrict`` (sent last) and the unverified promotion (a
    person's to make, presence or not: it would use up the proposal the next escape's
    verified promotion must still find)."""
    return [
        (name, params)
        for name, params in calls
        if name != "session.restrict"
        and not (name == "replay.promote" and not params.get("verified"))
    ]


def untouched(daemon: Running, data: PersonData) -> None:
    """Nothing a person alone may do happened: presence is on with the person's
    passphrase, their rule is verified and active, nothing was purged or compacted, and
    every verified trace is the person's."""
    status = daemon.call("presence.status")
    assert status["on"] and status["changed"]["action"] == "set", status
    rule = daemon.call("memory.show", id=data.verified)
    assert rule["status"] == "active" and rule["trace"]["provenance"]["verified"], rule
    assert daemon.call("memory.show", id=data.plain)["status"] == "active"
    traces = daemon.call("memory.export", limit=1000, include_superseded=True)["traces"]
    verified = [t["id"] for t in traces if t["provenance"]["verified"]]
    assert verified == [data.verified], verified
    report = daemon.call("ledger.verify")
    assert report["ok"], report


def test_the_table_in_security_md_is_this_one() -> None:
    text = SECURITY.read_text()
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (\w+) \|", text, re.M)
    table = {escape: (off, on) for escape, off, on in rows if escape in OUTCOMES}
    assert table == OUTCOMES


def test_every_method_declared_for_a_person_alone_is_tried_by_each_escape() -> None:
    declared = {name for name, method in METHODS.items() if method.person is not None}
    assert declared <= {name for name, _flag in PERSON_ONLY} | PRESENCE_CHANGES
