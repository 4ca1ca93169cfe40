"""The cheap ways out of an agent's shell, as real process trees, and an agent host to run
them under.

The host is its real process shape: a copy of ``/bin/bash`` installed where Claude
Code's native installer puts its binary (``~/.local/share/claude/versions/<v>``) and
run under the name ``claude``, as the real one names itself; it stays the parent of
the agent's shell, which has the variables Claude Code gives the commands it runs.
(tests/hosts/test_escapes.py runs escapes under the real Claude Code and Codex.)

Each escape runs one client script (``sh client.sh``) that writes what it got into
files, since several escapes leave no one to read the client's output; the script
ends by creating ``done``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.harness.environment import clean_env

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
HIKMAH = [PYTHON, "-m", "hikmah_cli"]
CLAUDE_VARIABLES = "CLAUDECODE=1 CLAUDE_CODE_ENTRYPOINT=cli CLAUDE_CODE_SESSION_ID=escape-1"

# What the agent runs in its shell; {client} is the client script's command line.
ESCAPES: dict[str, str] = {
    "env -i": "env -i {client}",
    "exec env -i": "exec env -i {client}",
    "setsid env -i": "setsid env -i {client}",
    "setsid -f": "setsid -f env -i {client} </dev/null >/dev/null 2>&1",
    "nohup … & then exit": "nohup env -i {client} </dev/null >/dev/null 2>&1 & exit 0",
    "double fork": "( env -i {client} </dev/null >/dev/null 2>&1 & ) ; exit 0",
    # It connects only once its shell and the host are gone and it was reparented.
    "a reparented orphan": "{{ sleep 1; exec env -i {client}; }} </dev/null >/dev/null 2>&1 & exit 0",
    "script (a pty)": "script -qec {quoted} /dev/null </dev/null",
}
DONE_TIMEOUT_S = 90.0

# The client's part of hikmah-agent: its own link, restricted before its first request.
AGENT_LINK = """
import json, sys
from pathlib import Path
from hikmah_agent.link import Link
from hikmah_agent.protocol import Caller
from hikmah_client.connection import RemoteError
link = Link(Path(sys.argv[1]), autostart=False, daemon_args=[], data_dir=Path(sys.argv[2]))
caller = Caller(client_name="escape-test", meta={})
out = []
for method, params in json.loads(sys.argv[3]):
    try:
        out.append({"result": link.call(method, params, caller)})
    except RemoteError as exc:
        out.append({"reason": exc.reason})
print(json.dumps(out))
"""


def claude_host(home: Path) -> Path:
    """Claude Code's native binary as its installer lays it out (a copy of bash)."""
    host = home / ".local" / "share" / "claude" / "versions" / "2.1.332"
    if not host.exists():
        host.parent.mkdir(parents=True)
        shutil.copy2("/bin/bash", host)
    return host


def client_script(
    work: Path,
    socket: Path,
    data: Path,
    requests: list[tuple[str, dict[str, Any]]],
    cli: list[list[str]],
    agent: list[tuple[str, dict[str, Any]]],
) -> Path:
    """``client.sh``: the raw JSON-RPC ``requests`` on one connection, each ``cli``
    command, then ``agent`` through hikmah-agent's link; results in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "requests.json").write_text(json.dumps(requests))
    lines = [f"cd {shlex.quote(str(ROOT))}"]
    raw = [PYTHON, "-m", "tests.reliability.agent_client", str(socket)]
    lines.append(f"{shlex.join(raw)} < {work}/requests.json > {work}/raw.json 2> {work}/raw.err")
    for number, command in enumerate(cli):
        argv = [*HIKMAH, "--socket", str(socket), "--no-autostart", *command]
        lines.append(f"{shlex.join(argv)} > {work}/cli{number}.out 2>&1")
        lines.append(f"echo $? > {work}/cli{number}.rc")
    link = [PYTHON, "-c", AGENT_LINK, str(socket), str(data), json.dumps(agent)]
    lines.append(f"{shlex.join(link)} > {work}/agent.json 2> {work}/agent.err")
    lines.append(f"touch {work}/done")
    script = work / "client.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def run_escape(escape: str, host: Path, script: Path) -> None:
    """Run ``escape`` in the agent's shell under the host; wait for its client to end."""
    client = f"/bin/sh {script}"
    line = ESCAPES[escape].format(client=client, quoted=shlex.quote(f"env -i {client}"))
    agent_shell = f"{CLAUDE_VARIABLES} /bin/bash -c {shlex.quote(line)}; true"
    subprocess.run(
        ["/bin/bash", "-c", f"exec -a claude {shlex.quote(str(host))} -c {shlex.quote(agent_shell)}"],
        env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=DONE_TIMEOUT_S,
        start_new_session=True,
    )  # fmt: skip
    done = script.parent / "done"
    deadline = time.monotonic() + DONE_TIMEOUT_S
    while not done.exists():
        assert time.monotonic() < deadline, f"{escape}: the client did not finish"
        time.sleep(0.05)


def results(work: Path, cli: int) -> tuple[list[Any], list[tuple[int, str]], list[Any]]:
    """The raw replies, each CLI command's (exit status, output), the agent's replies."""
    raw = json.loads((work / "raw.json").read_text() or "null")
    assert raw is not None, (work / "raw.err").read_text()
    commands = [
        (int((work / f"cli{n}.rc").read_text()), (work / f"cli{n}.out").read_text())
        for n in range(cli)
    ]
    agent = json.loads((work / "agent.json").read_text() or "null")
    assert agent is not None, (work / "agent.err").read_text()
    return raw, commands, agent


def reason(reply: dict[str, Any]) -> str | None:
    """A raw reply's error reason (None: it succeeded)."""
    error = reply.get("error")
    return None if error is None else (error.get("data") or {}).get("reason")
