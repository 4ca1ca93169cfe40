"""Gemini CLI (its npm package, headless ``gemini -p``) with exactly what ``hikmah setup
gemini`` writes, against a scripted Gemini API model on loopback.

The person's own settings choose the API-key sign-in (``GOOGLE_GEMINI_BASE_URL`` then
points Gemini at the fake), and every run names its model (``-m``): without it each
turn first asks a router model for a JSON verdict. Gemini starts stdio MCP servers
and runs hooks only in a folder the person trusts (``~/.gemini/trustedFolders.json``);
a headless run anywhere else exits 55. Setup does not trust folders for the person,
it says how; the test does it as the person would, after setup.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from tests.harness.hosts import BIN, Person, provenance_of, run_host, shell_remember, texts

from .fakemodel import Call, FakeModel, Say, Step

MODEL = "gemini-2.5-flash"
PROMPT = "How do we deploy staging?"
RULE = "Staging deploys go through the blue-green switch in deploy/switch.sh"
LEARNED = "The staging switch script needs the VPN up first"
FROM_SHELL = "The blue-green switch logs to deploy/switch.log"
UNTRUSTED = 55  # Gemini's exit code for a headless run in a folder not trusted
# The person's own settings: the API-key sign-in, no usage statistics, no update checks.
PERSONS_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def persons_gemini(directory: Path) -> Path:
    """Write the person's ``.gemini/settings.json`` under ``directory``; its path."""
    settings = directory / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(PERSONS_SETTINGS, indent=2) + "\n")
    return settings


def trust(person: Person, gemini_dir: Path) -> None:
    """Trust the project folder, as the person does in Gemini's trust dialog."""
    (gemini_dir / "trustedFolders.json").write_text(
        json.dumps({str(person.project): "TRUST_FOLDER"}, indent=2)
    )


def gemini_env(person: Person, model: FakeModel | None = None, **extra: str) -> dict[str, str]:
    env = {**person.env, **extra}
    if model is not None:
        env |= {"GOOGLE_GEMINI_BASE_URL": model.url, "GEMINI_API_KEY": "key-for-a-fake-model"}
    return env


def ask(gemini: Path, person: Person, model: FakeModel, *flags: str, **extra: str) -> Any:
    """One headless turn; its ``-o json`` answer."""
    argv = [str(gemini), "-m", MODEL, "-p", PROMPT, "-o", "json", *flags]
    done = run_host(argv, person, gemini_env(person, model, **extra))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not model.problems, model.problems
    return json.loads(done.stdout)


def mcp_list(gemini: Path, person: Person, **extra: str) -> str:
    done = run_host([str(gemini), "mcp", "list"], person, gemini_env(person, None, **extra))
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout + done.stderr


def results(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries back to the model, one text each."""
    return [
        "\n".join(texts(part["functionResponse"].get("response")))
        for content in body["contents"]
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def offered(body: dict[str, Any]) -> list[str]:
    return [
        declaration["name"]
        for tool in body.get("tools", [])
        for declaration in tool.get("functionDeclarations", [])
    ]


def our_hooks(settings: dict[str, Any]) -> dict[str, list[list[str]]]:
    """The hook commands of each event that run ``hikmah hook``, split as the shell would."""
    return {
        event: [
            shlex.split(handler["command"])
            for group in groups
            for handler in group["hooks"]
            if " hook " in handler.get("command", "")
        ]
        for event, groups in settings.get("hooks", {}).items()
    }


def shell(command: str) -> Call:
    return Call("run_shell_command", {"command": command})


def test_gemini_with_what_setup_wrote(gemini: Path, person: Person) -> None:
    person.start_daemon()
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified", "--source", "human:ana")
    settings = persons_gemini(person.home)
    gemini_dir = settings.parent
    original = settings.read_bytes()
    said = person.hikmah("setup", "gemini")
    set_up = settings.read_bytes()
    written = json.loads(set_up)
    policy = gemini_dir / "policies" / "hikmah.toml"

    # What setup wrote: the server, hooks that call `hikmah hook`, the read-only policy.
    assert written["security"] == PERSONS_SETTINGS["security"]
    server = written["mcpServers"]["hikmah"]
    assert server["command"] == str(BIN / "hikmah-agent") and not server.get("args")
    hikmah = str(BIN / "hikmah")
    assert our_hooks(written) == {
        "SessionStart": [[hikmah, "hook", "session-start"]],
        "BeforeAgent": [[hikmah, "hook", "prompt"]],
    }
    timeouts = [
        handler.get("timeout", 60_000)
        for groups in written["hooks"].values()
        for group in groups
        for handler in group["hooks"]
    ]
    assert min(timeouts) >= 1000  # Gemini's hook timeouts are in milliseconds
    assert policy.is_file() and "hikmah" in policy.read_text()

    # The step setup prints is needed: in a folder not trusted, Gemini does not start
    # the server (nor any hook), and a headless run refuses to start at all.
    assert "trust" in said.lower() and "trustedFolders.json" in said
    assert re.search(r"hikmah\b.*Disabled", mcp_list(gemini, person))
    with FakeModel([Say("Done.")]) as model:
        argv = [str(gemini), "-m", MODEL, "-p", PROMPT, "-o", "json"]
        done = run_host(argv, person, gemini_env(person, model))
    assert done.returncode == UNTRUSTED, (done.stdout, done.stderr)
    assert not model.requests

    trust(person, gemini_dir)
    assert re.search(r"✓ hikmah\b.*Connected", mcp_list(gemini, person))

    script: list[Step] = [
        Call("recall", {"query": "deploy staging switch"}),
        Call("remember", {"content": LEARNED, "kind": "observation"}),
        shell(shell_remember("The agent verifies this itself", "--verified")),
        shell(shell_remember(FROM_SHELL)),
        Say("Done."),
    ]
    with FakeModel(script) as model:
        answer = ask(gemini, person, model, "--approval-mode=yolo")
    assert answer["response"] == "Done."
    turns = model.main_loop()
    assert len(turns) == 5

    # The hooks' context reached the model's first request: SessionStart's is put
    # before the prompt, BeforeAgent's is a part of its own.
    first = [text for content in model.requests[0].body["contents"] for text in texts(content)]
    framed = [text for text in first if text.startswith("<hook_context>Memory from Hikmah")]
    assert len(framed) == 2, first
    assert RULE in framed[0] and framed[0].endswith(PROMPT)

    # recall returned the person's memory, verified.
    recalled = results(turns[1])[-1]
    assert RULE in recalled and "human:ana, verified" in recalled

    # remember: stored unverified, stamped with the host (Gemini gives its MCP servers
    # no session id, so the server names its own link).
    assert "Remembered tr_" in results(turns[2])[-1]
    provenance = provenance_of(person, LEARNED)
    assert (provenance["source"], provenance["verified"]) == ("agent:gemini-cli", False)
    assert provenance["locator"].startswith("agent-session:gemini-cli:")

    # From the agent's shell: --verified is refused, a plain write is stamped as Gemini's.
    refused = results(turns[3])[-1]
    assert "exit=3" in refused and "Refused" in refused, refused
    assert "exit=0" in results(turns[4])[-1]
    provenance = provenance_of(person, FROM_SHELL)
    assert (provenance["source"], provenance["verified"]) == ("agent:gemini-cli", False)
    assert provenance["locator"].startswith("agent-session:gemini-cli:")
    assert person.hikmah("export").count('"verified": true') == 1  # the person's rule

    # --remove takes out exactly what setup added (Gemini left the file as setup wrote
    # it, so the person's bytes come back); the trust is the person's.
    assert settings.read_bytes() == set_up
    person.hikmah("setup", "gemini", "--remove")
    assert settings.read_bytes() == original
    assert not [path for path in gemini_dir.rglob("*") if "hikmah" in path.name]
    assert json.loads((gemini_dir / "trustedFolders.json").read_text()) == {
        str(person.project): "TRUST_FOLDER"
    }
    assert "hikmah" not in mcp_list(gemini, person)


def test_gemini_cli_home_read_only_tools_without_asking(gemini: Path, person: Person) -> None:
    """No daemon runs yet: the person's CLI starts one, and the agent finds it. Without
    --approval-mode=yolo the policy setup wrote lets the read-only tools run; a write is
    not even offered to the model."""
    person.hikmah("remember", RULE, "--kind", "procedure", "--verified")
    assert person.socket.is_socket()
    moved = person.home / "gemini-home"
    settings = persons_gemini(moved)
    env = gemini_env(person, GEMINI_CLI_HOME=str(moved))
    person.hikmah("setup", "gemini", env=env)
    assert not (person.home / ".gemini").exists()
    assert "hikmah" in json.loads(settings.read_text())["mcpServers"]
    trust(person, settings.parent)

    with FakeModel([Call("recall", {"query": "deploy staging switch"}), Say("Done.")]) as model:
        answer = ask(gemini, person, model, GEMINI_CLI_HOME=str(moved))
    assert answer["response"] == "Done."
    first, second = model.main_loop()
    tools = offered(first)
    assert "mcp_hikmah_recall" in tools and "mcp_hikmah_remember" not in tools, tools
    assert RULE in results(second)[-1]
