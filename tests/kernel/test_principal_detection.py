"""Agent-session detection: each host by its environment variables or its process, the
person's own settings and blank values left out, session ids taken safely."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.access.principal import (
    USER_CONFIGURATION,
    AgentSession,
    detect_agent_session,
    restriction_message,
    stamp_locator,
)
from hikmah.model.display import is_agent_locator

SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}|unknown")

CLAUDE_SETTINGS = [
    "USE_BEDROCK",
    "USE_VERTEX",
    "USE_FOUNDRY",
    "SKIP_BEDROCK_AUTH",
    "SKIP_VERTEX_AUTH",
    "MAX_OUTPUT_TOKENS",
    "DISABLE_NONESSENTIAL_TRAFFIC",
    "ENABLE_TELEMETRY",
    "ENHANCED_TELEMETRY_BETA",
    "OAUTH_TOKEN",
    "CLIENT_CERT",
    "CLIENT_KEY",
    "CLIENT_KEY_PASSPHRASE",
    "GIT_BASH_PATH",
]
SETTINGS = ["CODEX_HOME", *("CLAUDE_CODE_" + s for s in CLAUDE_SETTINGS)]
# What Gemini CLI 0.61 and OpenCode 1.18 document for a person to export: they count
# without being listed above, since those hosts are known by exact names only.
GEMINI_SETTINGS = [
    "GEMINI_API_KEY",
    "GEMINI_MODEL",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "GEMINI_CLI_IDE_PID",
    "GEMINI_CLI_SURFACE",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_CUSTOM_HEADERS",
    "GEMINI_CLI_NO_RELAUNCH",
    "GEMINI_SANDBOX",
    "GEMINI_SYSTEM_MD",
    "GEMINI_WRITE_SYSTEM_MD",
    "GEMINI_TELEMETRY_ENABLED",
    "GEMINI_API_KEY_AUTH_MECHANISM",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
]
OPENCODE_SETTINGS = [
    "OPENCODE_AUTO_SHARE",
    "OPENCODE_GIT_BASH_PATH",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_PRUNE",
    "OPENCODE_DISABLE_TERMINAL_TITLE",
    "OPENCODE_PERMISSION",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_ENABLE_EXPERIMENTAL_MODELS",
    "OPENCODE_DISABLE_AUTOCOMPACT",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT",
    "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS",
    "OPENCODE_CLIENT",
    "OPENCODE_ENABLE_EXA",
    "OPENCODE_EXPERIMENTAL",
    "OPENCODE_EXPERIMENTAL_LSP_TOOL",
    "OPENCODE_SERVER_PASSWORD",
    "OPENCODE_SERVER_USERNAME",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_MODELS_URL",
    "OPENCODE_PURE",
    "OPENCODE_TUI_CONFIG",
    "OPENCODE_DB",
]


# --- detection per host -------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "host", "sid"),
    [
        ({"CLAUDECODE": "1"}, "claude-code", "unknown"),
        ({"CLAUDE_CODE_ENTRYPOINT": "cli"}, "claude-code", "unknown"),
        ({"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "abc-123"}, "claude-code", "abc-123"),
        ({"CODEX_SANDBOX": "seatbelt"}, "codex", "unknown"),
        ({"CODEX_SESSION_ID": "c.1"}, "codex", "c.1"),
        ({"CODEX_THREAD_ID": "t_9"}, "codex", "t_9"),
        ({"CURSOR_AGENT": "1"}, "cursor", "unknown"),
        ({"CURSOR_SESSION_ID": "cur1"}, "cursor", "cur1"),
        ({"CURSOR_TRACE_ID": "tr1"}, "cursor", "tr1"),
        ({"GEMINI_CLI": "1"}, "gemini-cli", "unknown"),
        ({"OPENCODE": "1"}, "opencode", "unknown"),
        ({"OPENCODE_PID": "21886"}, "opencode", "unknown"),
        ({"OPENCODE": "1", "OPENCODE_PID": "21886"}, "opencode", "unknown"),
        ({"AI_AGENT": "yes"}, "ai-agent", "unknown"),
    ],
)
def test_each_host_is_detected(environ: dict[str, str], host: str, sid: str) -> None:
    found = detect_agent_session({"PATH": "/usr/bin", "HOME": "/home/p", **environ})
    assert found == AgentSession(host=host, session_id=sid, variables=tuple(sorted(environ)))


@pytest.mark.parametrize(
    ("environ", "host", "sid"),
    [
        # What OpenCode gives its shell commands, with the id setup's plugin adds.
        (
            {"OPENCODE": "1", "OPENCODE_PID": "21886", "AGENT": "1",
             "OPENCODE_SESSION_ID": "ses_db1eacc39ffe7M4K2L7IkJyBkt"},
            "opencode",
            "ses_db1eacc39ffe7M4K2L7IkJyBkt",
        ),
        ({"GEMINI_CLI": "1", "GEMINI_SESSION_ID": "4c859d98-aa"}, "gemini-cli", "4c859d98-aa"),
    ],
)  # fmt: skip
def test_an_id_variable_names_the_session_but_does_not_count(
    environ: dict[str, str], host: str, sid: str
) -> None:
    found = detect_agent_session(environ)
    assert found is not None and (found.host, found.session_id) == (host, sid)
    assert not any(name.endswith("SESSION_ID") for name in found.variables)
    assert (
        detect_agent_session({name: sid for name in environ if name.endswith("SESSION_ID")}) is None
    )


def test_plain_environment_is_not_a_session() -> None:
    assert detect_agent_session({}) is None
    assert detect_agent_session({"PATH": "/bin", "TERM": "xterm", "EDITOR": "vi"}) is None


@pytest.mark.parametrize(
    "name",
    [
        "claudecode",
        "CLAUDE_CODEX",
        "XCODEX_A",
        "GEMINI_CLI_X",
        "AI_AGENTS",
        "CURSOR",
        "OPENCODE_X",
        "OPENCODES",
        "opencode",
        "AGENT",  # OpenCode sets it too, but so do other tools; OPENCODE comes with it
    ],
)
def test_near_misses_are_not_detected(name: str) -> None:
    assert detect_agent_session({name: "1"}) is None


def test_precedence_follows_host_order() -> None:
    environ = {
        "AI_AGENT": "1",
        "OPENCODE": "1",
        "GEMINI_CLI": "1",
        "CURSOR_SESSION_ID": "cur",
        "CODEX_SESSION_ID": "cod",
        "CLAUDE_CODE_SESSION_ID": "cla",
    }
    found = detect_agent_session(environ)
    assert found is not None
    assert (found.host, found.session_id) == ("claude-code", "cla")
    # Every host's variables are listed, not only the winner's.
    assert found.variables == tuple(sorted(environ))

    del environ["CLAUDE_CODE_SESSION_ID"]
    found = detect_agent_session(environ)
    assert found is not None and (found.host, found.session_id) == ("codex", "cod")

    del environ["CODEX_SESSION_ID"]
    found = detect_agent_session(environ)
    assert found is not None and (found.host, found.session_id) == ("cursor", "cur")

    del environ["CURSOR_SESSION_ID"]
    found = detect_agent_session(environ)
    assert found is not None and found.host == "gemini-cli"

    del environ["GEMINI_CLI"]
    found = detect_agent_session(environ)
    assert found is not None and found.host == "opencode"

    del environ["OPENCODE"]
    found = detect_agent_session(environ)
    assert found is not None and found.host == "ai-agent"


def test_winner_session_id_comes_from_winner_only() -> None:
    # Codex's id must not be borrowed for a claude-code session without one.
    found = detect_agent_session({"CLAUDECODE": "1", "CODEX_SESSION_ID": "cod"})
    assert found is not None
    assert (found.host, found.session_id) == ("claude-code", "unknown")


# --- exclusions and blanks ------------------------------------------------------


def test_settings_list_matches_spec() -> None:
    assert frozenset(SETTINGS) == USER_CONFIGURATION


@pytest.mark.parametrize("name", SETTINGS)
def test_each_person_setting_alone_is_not_detected(name: str) -> None:
    assert detect_agent_session({name: "1", "PATH": "/bin"}) is None


def test_settings_are_not_listed_when_a_session_is_detected() -> None:
    environ = dict.fromkeys(SETTINGS, "1") | {"CLAUDECODE": "1"}
    found = detect_agent_session(environ)
    assert found is not None
    assert found.variables == ("CLAUDECODE",)


def test_all_settings_together_are_not_detected() -> None:
    assert detect_agent_session(dict.fromkeys(SETTINGS, "value")) is None


@pytest.mark.parametrize("name", GEMINI_SETTINGS + OPENCODE_SETTINGS)
def test_gemini_and_opencode_settings_are_not_detected(name: str) -> None:
    assert detect_agent_session({name: "1", "PATH": "/bin"}) is None


def test_gemini_and_opencode_settings_are_not_listed() -> None:
    environ = dict.fromkeys(GEMINI_SETTINGS + OPENCODE_SETTINGS, "1")
    assert detect_agent_session(environ) is None
    found = detect_agent_session({**environ, "OPENCODE": "1", "GEMINI_CLI": "1"})
    assert found is not None and found.variables == ("GEMINI_CLI", "OPENCODE")
    # Nor does the command a refusal suggests list them.
    listed = re.search(r"grep -E '(.*)'", restriction_message(found, "purge"))
    assert listed is not None
    for name in GEMINI_SETTINGS + OPENCODE_SETTINGS:
        assert not re.match(listed[1], f"{name}=1"), name
    for name in ("GEMINI_CLI", "OPENCODE", "OPENCODE_PID", "CLAUDECODE", "CODEX_HOME"):
        assert re.match(listed[1], f"{name}=1"), name


@pytest.mark.parametrize("value", ["", " ", "\t", "\n", " \r\n "])
def test_blank_values_do_not_count(value: str) -> None:
    names = [
        "CLAUDECODE", "CLAUDE_CODE_X", "CODEX_X", "CURSOR_X", "GEMINI_CLI", "OPENCODE",
        "OPENCODE_PID", "AI_AGENT",
    ]  # fmt: skip
    assert detect_agent_session(dict.fromkeys(names, value)) is None
    found = detect_agent_session({"CLAUDECODE": value, "CODEX_X": "1"})
    assert found is not None
    assert (found.host, found.variables) == ("codex", ("CODEX_X",))


# --- session ids -------------------------------------------------------------


# host, a marker variable that keeps the host detected without any id, the id variables.
ID_HOSTS = [
    ("claude-code", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_REMOTE_SESSION_ID"),
    ("codex", "CODEX_MARK", "CODEX_SESSION_ID", "CODEX_THREAD_ID"),
    ("cursor", "CURSOR_MARK", "CURSOR_SESSION_ID", "CURSOR_TRACE_ID"),
]


@pytest.mark.parametrize(
    ("primary", "fallback", "expected"),
    [
        ("abc", "def", "abc"),
        (None, "def", "def"),
        ("", "def", "def"),
        ("   ", "def", "def"),
        ("  abc  ", "def", "abc"),
        ("a b", "def", "def"),
        ("a;b", "def", "def"),
        ("a:b", "def", "def"),
        ("a/b", "def", "def"),
        ("a\nb", "def", "def"),
        ("é", "def", "def"),
        ("١٢٣", "def", "def"),  # Unicode digits are not ASCII digits
        ("x" * 65, "def", "def"),
        ("x" * 64, "def", "x" * 64),
        ("A-z_0.9", None, "A-z_0.9"),
        ("bad id", "also bad", "unknown"),
        ("bad id", None, "unknown"),
    ],
)
@pytest.mark.parametrize("spec", ID_HOSTS, ids=[h[0] for h in ID_HOSTS])
def test_session_id_fallback_and_sanitising(
    spec: tuple[str, str, str, str], primary: str | None, fallback: str | None, expected: str
) -> None:
    host, marker, first, second = spec
    environ = {marker: "1"}
    if primary is not None:
        environ[first] = primary
    if fallback is not None:
        environ[second] = fallback
    found = detect_agent_session(environ)
    assert found is not None
    assert found.host == host
    assert found.session_id == expected


def test_invalid_id_variable_still_detects_the_session() -> None:
    found = detect_agent_session({"CODEX_SESSION_ID": "not; valid"})
    assert found is not None
    assert (found.host, found.session_id, found.variables) == (
        "codex",
        "unknown",
        ("CODEX_SESSION_ID",),
    )


# --- properties ----------------------------------------------------------------

_names = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "CLAUDECODE",
            "CLAUDE_CODE_SESSION_ID",
            "CLAUDE_CODE_REMOTE_SESSION_ID",
            "CODEX_SESSION_ID",
            "CODEX_THREAD_ID",
            "CURSOR_SESSION_ID",
            "CURSOR_TRACE_ID",
            "GEMINI_CLI",
            "GEMINI_SESSION_ID",
            "OPENCODE",
            "OPENCODE_PID",
            "OPENCODE_SESSION_ID",
            "AI_AGENT",
            *SETTINGS,
            *GEMINI_SETTINGS,
            *OPENCODE_SETTINGS,
        ]
    ),
    st.builds(
        lambda p, s: p + s,
        st.sampled_from(["CLAUDE_CODE_", "CODEX_", "CURSOR_", "OPENCODE", "GEMINI_CLI"]),
        st.text(max_size=10),
    ),
)
_values = st.one_of(st.text(max_size=80), st.from_regex(r"[A-Za-z0-9._-]{0,70}", fullmatch=True))


@given(st.dictionaries(_names, _values, max_size=12))
def test_detection_never_raises_and_ids_are_safe(environ: dict[str, str]) -> None:
    found = detect_agent_session(environ)
    if found is None:
        return
    assert SESSION_ID.fullmatch(found.session_id)
    assert list(found.variables) == sorted(found.variables)
    assert set(found.variables) <= set(environ)
    assert not set(found.variables) & USER_CONFIGURATION
    assert all(environ[name].strip() for name in found.variables)
    stamped = stamp_locator(found, None)
    assert stamped is not None and is_agent_locator(stamped)
    assert stamped.count(":") == 2


def test_a_host_is_known_by_what_its_process_runs() -> None:
    from hikmah.access.principal import Process, detect_agent_host

    native = Process(exe="/opt/x/bin/claude.exe", argv=("/usr/bin/claude", "-p"), name="claude")
    found = detect_agent_host(native)
    assert (
        found is not None
        and found.host == "claude-code"
        and found.processes == ("/opt/x/bin/claude.exe",)
    )
    script = Process(
        exe="/usr/bin/node",
        argv=("node", "-r", "x.js", "/g/@openai/codex/bin/codex.js"),
        name="node",
    )
    found = detect_agent_host(script)
    assert (
        found is not None
        and found.host == "codex"
        and found.processes == ("/g/@openai/codex/bin/codex.js",)
    )
    assert (
        detect_agent_host(Process(exe="/usr/bin/node", argv=("node", "-e", "claude"), name="node"))
        is None
    )
    assert (
        detect_agent_host(
            Process(exe="/usr/bin/python3", argv=("python3", "codex.py"), name="python3")
        )
        is None
    )
    assert detect_agent_host(Process(exe="/usr/bin/bash", argv=("-bash",), name="bash")) is None


@pytest.mark.parametrize(
    "process",
    [
        # npm's opencode-ai: its postinstall links the platform binary over bin/opencode.exe.
        ("/h/node_modules/opencode-ai/bin/opencode.exe", ("/h/node_modules/.bin/opencode", "run"), "opencode"),
        # the curl installer's, a system package's, a platform package's: named opencode
        ("/h/.opencode/bin/opencode", ("opencode",), "opencode"),
        ("/usr/bin/opencode", ("opencode", "mcp", "list"), "opencode"),
        ("/g/opencode-linux-x64/bin/opencode", ("/g/opencode-linux-x64/bin/opencode",), "opencode"),
        # known by its name alone, or by its install path alone
        ("/opt/tools/oc.exe", ("/opt/tools/oc",), "opencode"),
        ("/h/node_modules/opencode-ai/bin/renamed", ("renamed",), "renamed"),
    ],
)  # fmt: skip
def test_opencode_is_known_by_its_process(process: tuple[str, tuple[str, ...], str]) -> None:
    from hikmah.access.principal import Process, detect_agent_host

    exe, argv, name = process
    found = detect_agent_host(Process(exe=exe, argv=argv, name=name))
    assert found is not None and found.host == "opencode" and found.processes == (exe,)


def test_gemini_cli_is_known_by_the_script_node_runs() -> None:
    from hikmah.access.principal import Process, detect_agent_host

    relaunched = Process(
        exe="/usr/bin/node",
        argv=("/usr/bin/node", "--max-old-space-size=12075", "/h/node_modules/.bin/gemini", "-p"),
        name="node",
    )
    found = detect_agent_host(relaunched)
    assert found is not None and found.host == "gemini-cli"
    assert found.processes == ("/h/node_modules/.bin/gemini",)
