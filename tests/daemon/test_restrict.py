"""session.restrict: a client lowers its own privileges, one way, for its whole process."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.harness.daemon import Running
from tests.harness.environment import clean_env


def test_a_restricted_connection_writes_as_an_agent_and_cannot_verify(daemon: Running) -> None:
    with daemon.connect() as conn:
        result = conn.call("session.restrict", host="claude-code", session_id="abc-1")
        assert result["principal"]["host"] == "claude-code"
        written = conn.call("memory.remember", content="the API uses OAuth", locator="notes.md")
        assert (
            written["trace"]["provenance"]["locator"] == "agent-session:claude-code:abc-1; notes.md"
        )
        # A write that names no source is the agent's own, never the person's.
        assert written["trace"]["provenance"]["source"] == "agent:claude-code"
        claimed = conn.call("memory.remember", content="it uses JWT", source="human:ana")
        assert claimed["trace"]["provenance"]["source"] == "human:ana"
        refused = conn.request("memory.remember", content="it is true", verified=True)
        assert refused["error"]["data"]["reason"] == "agent_restricted"
        assert "session.restrict" in refused["error"]["message"]
        for method, params in (
            ("memory.purge", {"id": written["trace"]["id"], "reason": "x"}),
            ("ledger.verify", {"accept_tail": True}),
            ("ledger.verify", {"reset_head": True}),
        ):
            assert conn.request(method, **params)["error"]["data"]["reason"] == "agent_restricted"


def test_the_restriction_is_one_way(daemon: Running) -> None:
    with daemon.connect() as conn:
        conn.call("session.restrict", host="codex", session_id="first")
        again = conn.call("session.restrict", host="human", session_id="me")
        assert (again["principal"]["host"], again["principal"]["session_id"]) == ("codex", "first")
        assert conn.call("daemon.status")["principal"]["host"] == "codex"


def test_a_second_connection_of_the_same_process_stays_restricted(daemon: Running) -> None:
    with daemon.connect() as first:
        first.call("session.restrict", host="cursor", session_id="s9")
    with daemon.connect() as second:
        refused = second.request("memory.remember", content="trust me", verified=True)
        assert refused["error"]["data"]["reason"] == "agent_restricted"
    # Another process (a person's CLI) is not affected.
    person = daemon.cli("remember", "checked by hand", "--verified", env=clean_env())
    assert person.returncode == 0, person.stderr


def test_declared_names_are_sanitised(daemon: Running) -> None:
    with daemon.connect() as conn:
        principal = conn.call("session.restrict", host="Evil Host\n", session_id="id with spaces")[
            "principal"
        ]
    assert (principal["host"], principal["session_id"]) == ("agent", "unknown")


DECLARE_AND_WRITE = """
import json, sys
from pathlib import Path
from hikmah_client.connection import Client
client = Client(Path(sys.argv[1]))
client.call("session.restrict", {"host": sys.argv[2], "session_id": "declared-7"})
print(json.dumps(client.call("memory.remember", {"content": "written by " + sys.argv[2]})))
"""


def test_a_detected_host_without_an_id_takes_the_declared_id(daemon: Running) -> None:
    """Codex's npm wrapper leaves CODEX_MANAGED_BY_NPM (and no id) in the environment of
    the process that starts the MCP server; the server declares the id Codex sends it."""

    def written_by(host: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", DECLARE_AND_WRITE, str(daemon.socket), host],
            capture_output=True, text=True, timeout=60, start_new_session=True,
            env=clean_env(CODEX_MANAGED_BY_NPM="1"),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return str(json.loads(result.stdout)["trace"]["provenance"]["locator"])

    assert written_by("codex") == "agent-session:codex:declared-7"
    # Another host's id does not name the detected session.
    assert written_by("cursor") == "agent-session:codex:unknown"
