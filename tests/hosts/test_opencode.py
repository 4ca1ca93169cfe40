"""OpenCode (its npm package, headless ``opencode run``) with exactly what ``hikmah setup
opencode`` writes, against a scripted OpenAI Chat Completions model on loopback.

The person's own opencode.json points a custom OpenAI-compatible provider at the fake,
as one would for a local model (OpenCode bundles that provider's package). OpenCode has
no command hooks: setup's plugin runs ``hikmah hook`` on each message and adds the
context to it. For every config directory with a plugin OpenCode first installs its
plugin package from npm and waits for that; the runs point npm's registry at the fake
so that install fails at once instead of retrying for a minute offline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.harness.hosts import BIN, Person, provenance_of, run_host, shell_remember, texts

from .fakemodel import Call, FakeModel, Say, Step

PROMPT = "How do we deploy staging?"
RULE = "Staging deploys go through the blue-green switch in deploy/switch.sh"
LEARNED = "The staging switch script needs the VPN up first"
FROM_SHELL = "The blue-green switch logs to deploy/switch.log"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def persons_config(model: FakeModel) -> dict[str, Any]:
    """The person's opencode.json: a local model server, sharing off."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": "local/local-model",
        "share": "disabled",
        "provider": {
            "local": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Local",
                "options": {"baseURL": f"{model.url}/v1", "apiKey": "key-for-a-fake-model"},
                "models": {"local-model": {"name": "Local model", "tool_call": True}},
            }
        },
    }


def write_config(directory: Path, model: FakeModel) -> Path:
    config = directory / "opencode.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(persons_config(model), indent=2) + "\n")
    return config


def opencode_env(person: Person, model: FakeModel, **extra: str) -> dict[str, str]:
    return {
        **person.env,
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "npm_config_registry": f"{model.url}/",  # the plugin package install fails at once
        **extra,
    }


def ask(opencode: Path, person: Person, model: FakeModel, **extra: str) -> tuple[str, str]:
    """One ``opencode run`` turn; its last text and the session id it reports."""
    argv = [str(opencode), "run", PROMPT, "--format", "json"]
    done = run_host(argv, person, opencode_env(person, model, **extra))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not model.problems, model.problems
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    (session,) = {event["sessionID"] for event in events if "sessionID" in event}
    said = [e["part"]["text"] for e in events if e.get("type") == "text" and "part" in e]
    return (said[-1] if said else ""), session


def mcp_list(opencode: Path, person: Person, model: FakeModel, **extra: str) -> str:
    done = run_host([str(opencode), "mcp", "list"], person, opencode_env(person, model, **extra))
    assert done.returncode == 0, (done.stdout, done.stderr)
    return ANSI.sub("", done.stdout + done.stderr)


def results(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries back to the model, one text each."""
    return [
        "\n".join(texts(message.get("content")))
        for message in body["messages"]
        if message.get("role") == "tool"
    ]


def user_text(body: dict[str, Any]) -> list[str]:
    return [
        text
        for message in body["messages"]
        if message.get("role") == "user"
        for text in texts(message.get("content"))
    ]


def bash(command: str) -> Call:
    return Call("bash", {"command": command, "description": "Remember a note"})


def test_opencode_with_what_setup_wrote(opencode: Path, person: Person) -> None:
    person.start_daemon()
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified", "--source", "human:ana")
    config_dir = person.home / ".config" / "opencode"
    plugin = config_dir / "plugins" / "hikmah.js"
    script: list[Step] = [
        Call("recall", {"query": "deploy staging switch"}),
        Call("remember", {"content": LEARNED, "kind": "observation"}),
        bash(shell_remember("The agent verifies this itself", "--verified")),
        bash(shell_remember(FROM_SHELL)),
        Say("Done."),
    ]
    with FakeModel(script) as model:
        config = write_config(config_dir, model)
        original = config.read_bytes()
        person.hikmah("setup", "opencode")
        set_up = config.read_bytes()

        # What setup wrote: the server, and a plugin whose hooks call `hikmah hook`.
        written = json.loads(set_up)
        assert written["provider"] == persons_config(model)["provider"]
        server = written["mcp"]["hikmah"]
        assert server["type"] == "local" and server["command"] == [str(BIN / "hikmah-agent")]
        assert server.get("enabled", True) is True
        code = plugin.read_text()
        assert str(BIN / "hikmah") in code
        assert re.search(r"\bhook\W{1,4}session-start\b", code)
        assert re.search(r"\bhook\W{1,4}prompt\b", code)
        assert re.search(r"✓ hikmah\b.*connected", mcp_list(opencode, person, model))

        answer, session = ask(opencode, person, model)
        assert answer == "Done."
        turns = model.main_loop()
        assert len(turns) == 5

        # The hooks' context reached the model's first request (a title, without tools,
        # and the first step of the turn each carry the message): session start's and
        # the prompt's, as parts of the person's message.
        chat = [r.body for r in model.requests if r.path.endswith("/chat/completions")]
        for body in (chat[0], turns[0]):
            framed = [text for text in user_text(body) if text.startswith("Memory from Hikmah")]
            assert len(framed) == 2 and all(RULE in text for text in framed), user_text(body)
        assert all(r.headers.get("x-session-id") == session for r in model.requests if r.body)

        # recall returned the person's memory, verified.
        recalled = results(turns[1])[-1]
        assert RULE in recalled and "human:ana, verified" in recalled

        # remember: stored unverified, stamped with the host (OpenCode gives its MCP
        # servers no session id, so the server names its own link).
        assert "Remembered tr_" in results(turns[2])[-1]
        provenance = provenance_of(person, LEARNED)
        assert (provenance["source"], provenance["verified"]) == ("agent:opencode", False)
        assert provenance["locator"].startswith("agent-session:opencode:")

        # From the bash tool: --verified is refused, a plain write is stamped as
        # OpenCode's, with the session id the plugin gives its shells.
        refused = results(turns[3])[-1]
        assert "exit=3" in refused and "Refused" in refused, refused
        assert "exit=0" in results(turns[4])[-1]
        provenance = provenance_of(person, FROM_SHELL)
        assert (provenance["source"], provenance["verified"]) == ("agent:opencode", False)
        assert provenance["locator"] == f"agent-session:opencode:{session}"
        assert person.hikmah("export").count('"verified": true') == 1  # the person's rule

        # --remove takes out exactly what setup added (OpenCode left opencode.json as
        # setup wrote it, so the person's bytes come back). OpenCode's own files in the
        # directory (for the plugin package it installs: package.json, …) stay.
        assert config.read_bytes() == set_up
        person.hikmah("setup", "opencode", "--remove")
        assert config.read_bytes() == original
        assert not [path for path in config_dir.rglob("*") if "hikmah" in path.name]
        assert "hikmah" not in mcp_list(opencode, person, model)


def test_opencode_config_dir_and_a_daemon_the_agent_starts(opencode: Path, person: Person) -> None:
    """No daemon runs yet: the agent starts one, on the socket the person's CLI uses.
    The person keeps their OpenCode config in $OPENCODE_CONFIG_DIR: setup writes there.

    OpenCode ends its MCP servers' descendants when it exits (1.18.33 sends each a
    SIGTERM): the daemon hikmah-agent started is not among them (it is started
    detached), so it still serves the person's CLI afterwards."""
    moved = person.home / "opencode-config"
    with FakeModel([Call("remember", {"content": LEARNED}), Say("Done.")]) as model:
        write_config(moved, model)
        env = opencode_env(person, model, OPENCODE_CONFIG_DIR=str(moved))
        person.hikmah("setup", "opencode", env=env)
        assert (moved / "plugins" / "hikmah.js").is_file()
        assert "hikmah" in json.loads((moved / "opencode.json").read_text())["mcp"]
        assert not (person.home / ".config" / "opencode").exists()
        answer, _ = ask(opencode, person, model, OPENCODE_CONFIG_DIR=str(moved))
    assert answer == "Done."
    assert "Remembered tr_" in results(model.main_loop()[-1])[-1]
    started = (person.socket.parent / "hikmahd.log").read_text()  # beside the socket
    assert f"serving {person.socket}" in started
    assert "stopping" not in started.rpartition(f"serving {person.socket}")[2]  # nor signalled
    person.hikmah("--no-autostart", "status", "--json")  # the agent's daemon outlived it
    (found,) = person.hikmah("recall", LEARNED, "--json")["results"]
    provenance = found["trace"]["provenance"]
    assert (provenance["source"], provenance["verified"]) == ("agent:opencode", False)
    assert provenance["locator"].startswith("agent-session:opencode:")
