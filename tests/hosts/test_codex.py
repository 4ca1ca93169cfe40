"""Codex (its npm package, headless ``codex exec``) with exactly what ``hikmah setup codex``
writes, against a scripted OpenAI Responses model on loopback.

This is the set-up the issue found broken: the person's daemon on the systemd socket
path under ``XDG_RUNTIME_DIR``, which Codex does not pass to MCP servers unless told
(setup's ``env_vars``). Codex ignores ``OPENAI_BASE_URL``; the person's own config
points a custom model provider at the fake, as one would for a local model.

Codex runs hooks only once the person has reviewed them in ``/hooks``. The review
persists a trusted hash per hook in config.toml; the test makes the same review
through Codex's own app-server (``hooks/list``, then ``config/batchWrite`` of
``hooks.state``), which is what the ``/hooks`` screen does.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.hosts import HOST_TIMEOUT_S, Person, run_host, texts

from .fakemodel import Call, FakeModel, Say

PROMPT = "How do we deploy staging?"
RULE = "Staging deploys go through the blue-green switch in deploy/switch.sh"
LEARNED = "The staging switch script needs the VPN up first"


def persons_config(model: FakeModel) -> str:
    return f"""\
# My Codex settings: a local model server.
model = "local-model"
model_provider = "local"

[model_providers.local]
name = "Local"
base_url = "{model.url}/v1"
wire_api = "responses"
"""


def ask(codex: Path, person: Person, env: dict[str, str]) -> tuple[str, str]:
    """One ``codex exec`` turn; its answer and the session id it reports."""
    done = run_host([str(codex), "exec", PROMPT], person, env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    found = re.search(r"^session id: (\S+)$", done.stderr, re.MULTILINE)
    assert found, done.stderr
    return done.stdout.strip(), found.group(1)


def outputs(body: dict[str, Any]) -> list[str]:
    """The tool outputs a Responses request carries back to the model."""
    return [
        text
        for item in body["input"]
        if item.get("type") == "function_call_output"
        for text in texts(item.get("output"))
    ]


def developer_text(body: dict[str, Any]) -> str:
    return "\n".join(
        text
        for item in body["input"]
        if item.get("type") == "message" and item.get("role") == "developer"
        for text in texts(item.get("content"))
    )


def review_hooks(codex: Path, person: Person, env: dict[str, str]) -> list[str]:
    """Trust the hooks Codex lists for the project, as the person does in /hooks; returns
    the keys trusted."""
    server = subprocess.Popen(
        [str(codex), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=person.project, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    replies = iter(server.stdout)

    def request(number: int, method: str, params: dict[str, Any]) -> Any:
        assert server.stdin is not None
        server.stdin.write(json.dumps({"id": number, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        for line in replies:
            reply = json.loads(line)
            if reply.get("id") == number:
                assert "result" in reply, reply
                return reply["result"]
        raise AssertionError(f"codex app-server closed before answering {method}")

    try:
        request(1, "initialize", {"clientInfo": {"name": "hooks-review", "version": "1"}})
        (listed,) = request(2, "hooks/list", {"cwds": [str(person.project)]})["data"]
        hooks = [hook for hook in listed["hooks"] if " hook " in hook["command"]]
        assert {hook["trustStatus"] for hook in hooks} == {"untrusted"}
        edits = [
            {
                "keyPath": f"hooks.state.{json.dumps(hook['key'])}",
                "value": {"trusted_hash": hook["currentHash"]},
                "mergeStrategy": "upsert",
            }
            for hook in hooks
        ]
        request(3, "config/batchWrite", {"edits": edits})
        (again,) = request(4, "hooks/list", {"cwds": [str(person.project)]})["data"]
        assert {h["trustStatus"] for h in again["hooks"] if " hook " in h["command"]} == {"trusted"}
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=HOST_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
    return [hook["key"] for hook in hooks]


def test_codex_with_what_setup_wrote_on_the_systemd_socket(codex: Path, person: Person) -> None:
    person.start_daemon()
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified", "--source", "human:ana")
    config = person.home / ".codex" / "config.toml"
    config.parent.mkdir()
    script = [
        Call("recall", {"query": "deploy staging switch"}),
        Call("remember", {"content": LEARNED, "kind": "observation"}),
        Say("Done."),
    ]
    with FakeModel(script) as model:
        config.write_text(persons_config(model))
        original = config.read_text()
        person.hikmah("setup", "codex")

        # Until the person reviews them, Codex skips the hooks; the tools work anyway.
        answer, session = ask(codex, person, person.env)
        assert answer == "Done." and not model.problems, model.problems
        unreviewed = model.main_loop()
        assert "Memory from Hikmah" not in developer_text(unreviewed[0])
        assert RULE in "\n".join(outputs(unreviewed[1]))

        trusted = review_hooks(codex, person, person.env)
        assert len(trusted) == 2
        model.requests.clear()
        answer, session = ask(codex, person, person.env)
        assert answer == "Done." and not model.problems, model.problems
    turns = model.main_loop()
    assert len(turns) == 3
    assert {r.headers.get("session-id") for r in model.requests} == {session}

    # The hooks' context reached the model: the person's rule, framed.
    context = developer_text(turns[0])
    assert "Memory from Hikmah" in context and RULE in context

    # recall returned the person's memory through the daemon on the systemd socket path.
    recalled = "\n".join(outputs(turns[1]))
    assert RULE in recalled and "human:ana, verified" in recalled

    # remember: unverified, stamped with Codex and its real session id (which Codex
    # passes only in each tool call's _meta).
    assert "Remembered tr_" in "\n".join(outputs(turns[2]))
    found = person.hikmah("recall", LEARNED, "--json", "--limit", "2")["results"]
    stamps = {
        r["trace"]["provenance"]["locator"] for r in found if r["trace"]["content"] == LEARNED
    }
    assert f"agent-session:codex:{session}" in stamps
    provenance = found[0]["trace"]["provenance"]
    assert (provenance["source"], provenance["verified"]) == ("agent:codex", False)

    # --remove takes out exactly what setup added; the trust the review wrote is Codex's.
    reviewed = config.read_text()
    person.hikmah("setup", "codex", "--remove")
    left = config.read_text()
    assert left.startswith(original) and "hikmah" not in left.replace(original, "")
    assert all(json.dumps(key) in left for key in trusted)
    assert "hikmah" in reviewed and not (person.home / ".codex" / "hooks.json").exists()


def test_codex_home_and_a_daemon_the_agent_starts(codex: Path, person: Person) -> None:
    """No daemon runs yet: the agent starts one, on the socket the person's CLI uses."""
    moved = person.home / "codex-home"
    moved.mkdir()
    env = {**person.env, "CODEX_HOME": str(moved)}
    script = [Call("remember", {"content": LEARNED}), Say("Done.")]
    with FakeModel(script) as model:
        (moved / "config.toml").write_text(persons_config(model))
        person.hikmah("setup", "codex", env=env)
        assert not (person.home / ".codex").exists()
        answer, session = ask(codex, person, env)
    assert answer == "Done." and not model.problems, model.problems
    assert "Remembered tr_" in "\n".join(outputs(model.main_loop()[-1]))
    assert person.socket.is_socket()
    (found,) = person.hikmah("--no-autostart", "recall", LEARNED, "--json")["results"]
    assert found["trace"]["provenance"]["locator"] == f"agent-session:codex:{session}"
