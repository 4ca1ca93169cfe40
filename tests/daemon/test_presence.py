"""A person's path with presence on, for real in pseudo-terminals: the prompts,
the ticket, its expiry (``[presence] ticket_seconds`` at 3), its binding (a
second terminal, a child of the same shell that is an agent, and one that is no
direct child of it are refused), wrong passphrases (throttled, logged), the ledger
records, and the way back from a forgotten passphrase."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hikmah.access.presence import read_state
from hikmah.model.policy import PresencePolicy
from hikmahd import tickets
from hikmahd.tickets import tiocsti_allowed
from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.terminals import PtyShell
from tests.reliability.test_agents import ledger_lines

from .escapes import CLAUDE_VARIABLES, ROOT, claude_host

PASSPHRASE = "correct horse battery"
SET = [("New passphrase: ", PASSPHRASE), ("Repeat the new passphrase: ", PASSPHRASE)]
PROVE = [("Hikmah passphrase: ", PASSPHRASE)]
TICKET_S = 3.0
HIKMAH = "hikmah --no-autostart"


@pytest.fixture
def daemon(short_tmp: Path) -> Iterator[Running]:
    (short_tmp / "policy.toml").write_text(
        f"[presence]\nticket_seconds = {TICKET_S}\ntickets_with_tiocsti = true\n"
    )
    running = Running(short_tmp).start()
    try:
        yield running
    finally:
        running.stop()


def terminal(daemon: Running) -> PtyShell:
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}", HIKMAH_SOCKET=str(daemon.socket))
    return PtyShell(env, daemon.root)


def raw(method: str, **params: object) -> str:
    """A command line that sends one request with a bare client (no prompt, no CLI), as a
    child of the shell that runs it."""
    request = json.dumps([[method, params]])
    client = [sys.executable, "-m", "tests.reliability.agent_client"]
    return (
        f'PYTHONPATH={shlex.quote(str(ROOT))} {shlex.join(client)} "$HIKMAH_SOCKET"'
        f" <<< {shlex.quote(request)}"
    )


def reason_of(shown: str) -> str | None:
    start = shown.index("[{")
    reply = json.loads(shown[start : shown.rindex("}]") + 2])[0]
    return None if "result" in reply else reply["error"]["data"]["reason"]


@pytest.fixture
def shells(daemon: Running) -> Iterator[tuple[PtyShell, PtyShell]]:
    first, second = terminal(daemon), terminal(daemon)
    try:
        status, shown = first.run(f"{HIKMAH} passphrase set", SET)
        assert status == 0 and "person presence is on" in shown, shown
        yield first, second
    finally:
        first.close()
        second.close()


def test_the_prompts_end_in_a_colon_and_the_passphrase_is_never_echoed(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, _ = shells
    first.run(f"{HIKMAH} presence --end")
    status, shown = first.run(f"{HIKMAH} remember --verified 'checked by me'", PROVE)
    assert status == 0 and "<Hikmah passphrase:>" in shown, shown
    assert PASSPHRASE not in shown
    for line in ledger_lines_of(daemon):
        assert PASSPHRASE.encode() not in line
    assert PASSPHRASE.encode() not in daemon.log.read_bytes()


def ledger_lines_of(daemon: Running) -> list[bytes]:
    daemon.stop()
    try:
        return ledger_lines(daemon.data)
    finally:
        daemon.start()


def test_a_ticket_holds_for_its_terminal_and_shell_until_it_expires(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, second = shells
    # Setting the passphrase proved it: this shell's commands need no prompt now.
    assert reason_of(first.run(raw("memory.remember", content="one", verified=True))[1]) is None
    # A second terminal holds no ticket, nor does a grandchild of the first shell.
    assert reason_of(second.run(raw("memory.remember", content="two", verified=True))[1]) == (
        "presence_required"
    )
    nested = first.run(
        f"bash -c {shlex.quote(raw('memory.remember', content='three', verified=True) + '; true')}"
    )
    assert reason_of(nested[1]) == "presence_required", nested
    # The CLI in the second terminal asks there; no answer, no write.
    status, shown = second.run(
        f"{HIKMAH} remember --verified 'four'", [("Hikmah passphrase: ", "")]
    )
    assert status == 3 and "nothing was done" in shown, shown
    time.sleep(TICKET_S + 0.5)
    expired = first.run(raw("memory.remember", content="five", verified=True))
    assert reason_of(expired[1]) == "presence_required", expired
    status, shown = first.run(f"{HIKMAH} remember --verified 'six'", PROVE)
    assert status == 0, shown
    verified = [
        t["content"]
        for t in daemon.call("memory.export", limit=100)["traces"]
        if t["provenance"]["verified"]
    ]
    assert sorted(verified) == ["one", "six"]


def test_an_agent_started_from_the_same_shell_cannot_use_its_ticket(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, _ = shells
    host = claude_host(daemon.root / "home")
    agent = f"{CLAUDE_VARIABLES} /bin/bash -c {shlex.quote('exec env -i ' + raw('memory.remember', content='by the agent', verified=True))}"
    inner = f"exec -a claude {host} -c {shlex.quote(agent + '; true')}"
    line = f"bash -c {shlex.quote(inner)}"
    assert reason_of(first.run(line)[1]) == "agent_restricted"
    prove = f"{CLAUDE_VARIABLES} {raw('presence.prove', passphrase=PASSPHRASE)}"
    assert reason_of(first.run(prove)[1]) == "agent_restricted"
    # The person's own command in that shell still holds the ticket.
    assert reason_of(first.run(raw("memory.remember", content="mine", verified=True))[1]) is None


def test_stopping_the_daemon_needs_a_proven_person(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    _, second = shells
    headless = daemon.cli("stop", env=clean_env())  # no terminal: it can never prove
    assert headless.returncode == 3
    assert "stop the daemon needs a person's presence" in headless.stderr
    assert reason_of(second.run(raw("daemon.stop"))[1]) == "presence_required"
    status, shown = second.run(f"{HIKMAH} stop", [("Hikmah passphrase: ", "")])
    assert status == 3 and "nothing was done" in shown, shown
    assert daemon.process is not None and daemon.process.poll() is None
    status, shown = second.run(f"{HIKMAH} stop", PROVE)
    assert status == 0 and "<Hikmah passphrase:>" in shown and "hikmahd stopped" in shown, shown
    assert daemon.process.poll() == 0


def test_wrong_passphrases_are_refused_logged_and_slowed(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    _, second = shells
    answers = [("Hikmah passphrase: ", "wrong one, first"), ("Hikmah passphrase: ", "wrong two"),
               ("Hikmah passphrase: ", "wrong three")]  # fmt: skip
    started = time.monotonic()
    status, shown = second.run(f"{HIKMAH} presence", answers)
    assert status == 3 and shown.count("Sorry, try again.") == 2, shown
    assert time.monotonic() - started >= 1 + 2  # the waits after the first two failures
    log = daemon.log.read_text()
    assert "a wrong passphrase from pid" in log and "(3 failed in a row)" in log
    assert daemon.call("presence.status")["failures"]["count"] == 3
    assert "3 wrong passphrase(s) in a row" in daemon.cli("status").stdout


def test_changing_and_removing_the_passphrase_are_ledger_records(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, _ = shells
    new = "a newer longer passphrase"
    change = [("Current passphrase: ", PASSPHRASE), ("New passphrase: ", new),
              ("Repeat the new passphrase: ", new)]  # fmt: skip
    assert first.run(f"{HIKMAH} passphrase change", change)[0] == 0
    first.run(f"{HIKMAH} presence --end")
    status, shown = first.run(f"{HIKMAH} presence", [("Hikmah passphrase: ", PASSPHRASE),
                                                        ("Hikmah passphrase: ", new)])  # fmt: skip
    assert status == 0 and "Sorry, try again." in shown, shown
    assert first.run(f"{HIKMAH} passphrase remove", [("Current passphrase: ", new)])[0] == 0
    assert not daemon.call("presence.status")["on"]
    actions = [p["action"] for p in presence_records(daemon)]
    assert actions == ["set", "change", "remove"]
    assert all("argon2id" in (p["hash"] or "$argon2id$") for p in presence_records(daemon))


def presence_records(daemon: Running) -> list[dict[str, object]]:
    found = []
    for line in ledger_lines_of(daemon):
        payload = json.loads(line)["payload"]
        if payload["type"] == "presence":
            found.append(payload)
    return found


def test_a_forgotten_passphrase_is_reset_from_a_terminal_and_announced(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, _ = shells
    daemon.stop()
    hikmahd = f"{shlex.quote(sys.executable)} -m hikmahd --data-dir {daemon.data} --policy {daemon.policy}"
    status, shown = first.run(f"{hikmahd} --reset-passphrase", [("to go on: ", "reset")])
    assert status == 0 and "person presence is off (reset" in shown, shown
    daemon.start()
    state = daemon.call("presence.status")
    assert not state["on"] and state["changed"]["action"] == "reset"
    assert "RESET: the passphrase was reset" in daemon.cli("status").stdout


def test_a_presence_record_changed_behind_the_daemons_back_locks_presence(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    first, _ = shells
    daemon.call("memory.remember", content="after the passphrase")
    daemon.stop()
    import lmdb

    env = lmdb.open(str(daemon.data / "lmdb"), max_dbs=16)
    with env.begin(write=True) as txn:
        ledger = env.open_db(b"ledger", txn=txn)
        key = (1).to_bytes(8, "big")
        line = bytes(txn.get(key, db=ledger))
        txn.put(key, line.replace(b'"action":"set"', b'"action":"reset"'), db=ledger)
    env.close()
    daemon.start()
    state = daemon.call("presence.status")
    assert state["on"] and "changed behind hikmahd's back" in state["damaged"], state
    status, shown = first.run(f"{HIKMAH} remember --verified 'x'", PROVE)
    assert status == 3 and "cannot be proven" in shown, shown
    assert "PRESENCE LOCKED" in daemon.cli("status").stdout
    assert not daemon.call("ledger.verify")["ok"]


def test_the_state_ignores_an_unaccepted_tail_and_names_missing_records() -> None:
    from hikmah.ledger.chain import GENESIS, encode_record

    payloads = [b'{"type":"presence","action":"set","hash":"$argon2id$h","at":1}',
                b'{"type":"fulfill","id":"x"}',
                b'{"type":"presence","action":"remove","hash":null,"at":2}']  # fmt: skip
    records, prev = [], GENESIS
    for seq, payload in enumerate(payloads, 1):
        record = encode_record(seq, prev, payload)
        records.append((seq, record.line))
        prev = record.hash
    assert read_state(records, 2).hash == "$argon2id$h"  # the remove is past the head
    assert not read_state(records, 3).on
    gap = read_state([records[0], records[2]], 3)
    assert gap.missing == (2,) and gap.damaged is not None  # seq 3 no longer links


def test_pairing_and_removing_devices_need_presence(short_tmp: Path) -> None:
    """The person-only methods of sync: sync.invite, .join and .remove ask for the proof."""
    folder = short_tmp / "folder"
    folder.mkdir()
    (short_tmp / "policy.toml").write_text(
        f'[presence]\nticket_seconds = 60\ntickets_with_tiocsti = true\n[sync]\nfolder = "{folder}"\nwatch = false\n'
    )
    running = Running(short_tmp).start()
    first, second = terminal(running), terminal(running)
    device = "hd" + "a" * 26
    try:
        assert first.run(f"{HIKMAH} passphrase set", SET)[0] == 0
        calls = [("sync.invite", {}), ("sync.join", {"code": "HKS1-AAAAA"}),
                 ("sync.remove", {"device": device})]  # fmt: skip
        for method, params in calls:  # a terminal without a ticket, no CLI to ask
            shown = second.run(raw(method, **params))[1]
            assert reason_of(shown) == "presence_required", (method, shown)
        status, shown = second.run(f"{HIKMAH} sync invite", [("Hikmah passphrase: ", "")])
        assert status == 3 and "nothing was done" in shown, shown
        status, shown = second.run(f"{HIKMAH} sync invite", PROVE)
        assert status == 0 and "<Hikmah passphrase:>" in shown and "HKS1-" in shown, shown
        # The first terminal's ticket (from setting the passphrase) holds without a prompt.
        status, shown = first.run(f"{HIKMAH} sync remove {device}")
        assert status != 0 and "no paired device" in shown and "passphrase" not in shown, shown
    finally:
        first.close()
        second.close()
        running.stop()


def test_a_ticket_cannot_tell_typed_keys_from_keys_pushed_into_the_terminal(
    daemon: Running, shells: tuple[PtyShell, PtyShell]
) -> None:
    # What docs/security.md says a ticket cannot do: these keys reach the shell through
    # the pty's master side, exactly as `tmux send-keys` or TIOCSTI put them there.
    first, _ = shells
    status, shown = first.run(f"{HIKMAH} remember --verified 'pushed in by someone else'")
    assert status == 0 and "passphrase" not in shown, shown


@pytest.fixture
def asking(short_tmp: Path) -> Iterator[tuple[Running, PtyShell]]:
    (short_tmp / "policy.toml").write_text("[presence]\nticket_seconds = 0\n")
    running = Running(short_tmp).start()
    shell = terminal(running)
    try:
        status, shown = shell.run(f"{HIKMAH} passphrase set", SET)
        assert status == 0 and "asks for this passphrase, for each command" in shown, shown
        yield running, shell
    finally:
        shell.close()
        running.stop()


def test_with_ticket_seconds_zero_every_person_only_command_asks_naming_itself(
    asking: tuple[Running, PtyShell],
) -> None:
    daemon, shell = asking
    assert daemon.call("presence.status")["per_command"]
    status, shown = shell.run(f"{HIKMAH} remember --verified 'checked by me'", PROVE)
    assert status == 0, shown
    assert "Confirm: hikmah --no-autostart remember --verified 'checked by me'" in shown
    # Keys pushed into the same terminal right after: the command asks again, naming what
    # it would do; the person gives nothing, and nothing is written.
    injected = "Always deploy on Fridays"
    status, shown = shell.run(
        f"{HIKMAH} remember --verified '{injected}'", [("Hikmah passphrase: ", "")]
    )
    assert status == 3 and f"'{injected}'" in shown and "someone else typed it" in shown, shown
    # A bare client in that shell, and `hikmah presence`, get no lasting proof either.
    assert reason_of(shell.run(raw("memory.remember", content="raw", verified=True))[1]) == (
        "presence_required"
    )
    status, shown = shell.run(f"{HIKMAH} presence")
    assert status == 0 and "a proof holds for one command here" in shown, shown
    verified = [
        t["content"]
        for t in daemon.call("memory.export", limit=100)["traces"]
        if t["provenance"]["verified"]
    ]
    assert verified == ["checked by me"]


@pytest.mark.parametrize(
    ("sysctl", "release", "allowed"),
    [("1\n", None, True), ("0\n", None, False), (None, "6.1.90", True), (None, "6.18.4", False),
     (None, "5.15.0-91-generic", True), (None, "weird", True)],
)  # fmt: skip
def test_tiocsti_is_read_from_the_kernel(
    tmp_path: Path, sysctl: str | None, release: str | None, allowed: bool
) -> None:
    path = tmp_path / "legacy_tiocsti"
    if sysctl is not None:
        path.write_text(sysctl)
    assert tiocsti_allowed(path, release or "6.8.0") is allowed


def test_where_keys_can_be_pushed_a_proof_holds_for_one_command_unless_opted_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for pushable, seconds, opted, expected in [
        (True, 300.0, False, True),
        (True, 300.0, True, False),
        (False, 300.0, False, False),
        (False, 0.0, True, True),
    ]:
        monkeypatch.setattr(tickets, "tiocsti_allowed", lambda pushable=pushable: pushable)
        policy = PresencePolicy(ticket_seconds=seconds, tickets_with_tiocsti=opted)
        assert tickets.per_command(policy) is expected
