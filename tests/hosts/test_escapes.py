"""Under the real agent hosts: the escapes an agent runs from its shell, with the
real Claude Code (its Bash tool, called by the scripted model) and the real Codex (which
starts an MCP server's command as its own child, with none of its variables) above them.

``exec env -i`` leaves no agent variable anywhere in the client's tree: only the host's
own process gives it away. ``setsid -f`` leaves nothing above the client at all: with
person presence on it is refused all the same (tests/daemon/test_escapes.py has every
escape under the host's process shape).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tests.daemon.escapes import ROOT, reason
from tests.harness.hosts import Person, run_host
from tests.harness.terminals import PtyShell
from tests.hosts.fakemodel import FakeModel

from .fakemodel import Call, Say
from .test_claude_code import claude_env
from .test_codex import persons_config

PASSPHRASE = "correct horse battery"
WAIT_S = 60.0


def client(person: Person, out: Path) -> str:
    """A bare JSON-RPC client asking for a verified write, its reply written to ``out``."""
    request = json.dumps(
        [["memory.remember", {"content": "verified by the agent?", "verified": True}]]
    )
    (out.parent / "request.json").write_text(request)
    argv = [sys.executable, "-m", "tests.reliability.agent_client", str(person.socket)]
    return f"PYTHONPATH={shlex.quote(str(ROOT))} {shlex.join(argv)} < {out.parent}/request.json > {out}"


def reply(out: Path) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while not (out.exists() and out.read_text().strip()):
        assert time.monotonic() < deadline, f"no reply in {out}"
        time.sleep(0.05)
    replies: list[dict[str, Any]] = json.loads(out.read_text())
    return replies[0]


def set_passphrase(person: Person) -> None:
    env = {**person.env, "PATH": f"{Path(sys.executable).parent}:{person.env['PATH']}"}
    shell = PtyShell(env, person.project)
    try:
        shell.set_passphrase(PASSPHRASE, end=False, hikmah="hikmah")
    finally:
        shell.close()


def bash_under_claude(claude: Path, person: Person, command: str) -> None:
    script = [Call("Bash", {"command": command, "description": "escape"}), Say("Done.")]
    with FakeModel(script) as model:
        argv = [str(claude), "-p", "Do it.", "--allowedTools", "Bash", "--output-format", "json"]
        done = run_host(argv, person, claude_env(person, model))
    assert done.returncode == 0, (done.stdout, done.stderr)


def test_claude_codes_bash_tool_escaping_by_exec_and_setsid(claude: Path, person: Person) -> None:
    person.start_daemon()
    exec_out, setsid_out = person.root / "exec" / "out.json", person.root / "setsid" / "out.json"
    for out in (exec_out, setsid_out):
        out.parent.mkdir()
    # Presence off: exec env -i is still refused, by Claude Code's own process above it.
    bash_under_claude(claude, person, f"exec env -i {client(person, exec_out)}")
    refused = reply(exec_out)
    assert reason(refused) == "agent_restricted", refused
    assert "claude" in refused["error"]["message"], refused
    # Presence on: setsid -f leaves nothing above the client, and is refused too.
    set_passphrase(person)
    escape = f"setsid -f env -i sh -c {shlex.quote(client(person, setsid_out))} </dev/null"
    bash_under_claude(claude, person, escape)
    assert reason(reply(setsid_out)) == "presence_required"
    verified = person.hikmah("export").count('"verified": true')
    assert verified == 0


def test_codex_starting_an_escaping_command_as_its_mcp_server(codex: Path, person: Person) -> None:
    person.start_daemon()
    out = person.root / "codex" / "out.json"
    out.parent.mkdir()
    config = person.home / ".codex" / "config.toml"
    config.parent.mkdir()
    with FakeModel([Say("Done.")]) as model:
        # The server's own stdout stays Codex's pipe (closing it would end the server).
        server = f"exec env -i sh -c {shlex.quote(client(person, out) + '; sleep 3')}"
        config.write_text(
            persons_config(model)
            + f'\n[mcp_servers.escape]\ncommand = "/bin/sh"\nargs = ["-c", {json.dumps(server)}]\n'
        )
        done = run_host([str(codex), "exec", "Say done."], person, person.env)
        assert done.returncode == 0, (done.stdout, done.stderr)
    assert out.exists(), done.stderr[-3000:]
    refused = reply(out)
    # Codex passes its MCP servers none of its CODEX_ variables: its process is the tell.
    assert reason(refused) == "agent_restricted", refused
    assert "codex" in refused["error"]["message"], refused
