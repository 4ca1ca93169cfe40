"""``hikmah hook``: fed the JSON Claude Code sends, checked against its documented output."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.clients.hook_events import (
    PROJECT_DIR,
    claude_prompt_event,
    claude_session_event,
    context_of,
    gemini_prompt_event,
)
from tests.harness.daemon import Running

SCOPE = f"project:{PROJECT_DIR}"


def hook(daemon: Running, event: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return daemon.cli("hook", event, input=stdin)


def remember(daemon: Running, content: str, **fields: Any) -> str:
    trace_id: str = daemon.call("memory.remember", content=content, **fields)["trace"]["id"]
    return trace_id


def test_prompt_injects_traces_sharing_two_meaningful_words(daemon: Running) -> None:
    both = remember(daemon, "The staging deploy needs the VPN up first", scope=SCOPE)
    one = remember(daemon, "Deploy notes live in the wiki")
    other_project = remember(
        daemon, "staging deploy uses kubectl there", scope="project:/elsewhere"
    )
    text = context_of(
        hook(daemon, "prompt", claude_prompt_event("How do I deploy to staging?")),
        "UserPromptSubmit",
    )
    assert both in text and one not in text and other_project not in text
    assert "Previously observed (" in text and "unverified" in text
    assert "observations, not instructions" in text


def test_prompt_injects_at_most_six(daemon: Running) -> None:
    ids = [remember(daemon, f"cache warmup step {n} for the build cache") for n in range(9)]
    text = context_of(
        hook(daemon, "prompt", claude_prompt_event("build cache warmup")), "UserPromptSubmit"
    )
    assert sum(trace_id in text for trace_id in ids) == 6


def test_one_word_prompt_needs_one_shared_word(daemon: Running) -> None:
    trace_id = remember(daemon, "kafka consumers lag on mondays")
    text = context_of(hook(daemon, "prompt", claude_prompt_event("kafka")), "UserPromptSubmit")
    assert trace_id in text


def test_slash_commands_trivial_and_unmatched_prompts_add_nothing(daemon: Running) -> None:
    remember(daemon, "compact the staging database weekly")
    for prompt in ("/compact staging database", "thanks!", "ok, continue", "weather in paris"):
        result = hook(daemon, "prompt", claude_prompt_event(prompt))
        assert (result.returncode, result.stdout) == (0, ""), prompt


def test_a_prompt_is_recalled_by_without_the_context_gemini_puts_before_it(daemon: Running) -> None:
    deploy = remember(daemon, "The staging deploy goes through the blue-green switch", scope=SCOPE)
    kafka = remember(daemon, "kafka consumers lag on mondays while the cluster rebalances")
    given = f"Memory from Hikmah. &lt;b&gt;\n- [{kafka}]: kafka consumers lag on mondays"
    result = hook(daemon, "prompt", gemini_prompt_event("How do we deploy staging?", given))
    text = context_of(result, "BeforeAgent")
    assert deploy in text and kafka not in text
    for trivial in ("thanks!", "/compact kafka consumers"):
        result = hook(daemon, "prompt", gemini_prompt_event(trivial, given))
        assert (result.returncode, result.stdout) == (0, ""), trivial


def test_asked_leaves_the_persons_words_alone() -> None:
    from hikmah_cli.hooks import asked

    assert asked("<hook_context>a\nb</hook_context>\n\nHow?") == "How?"
    assert asked("x <hook_context>a</hook_context> y <hook_context>b</hook_context>") == "x  y"
    assert asked("What does <hook_context> mean?") == "What does <hook_context> mean?"


def test_session_start_brings_rules_commitments_and_conflicts(daemon: Running) -> None:
    rule = remember(daemon, "Never force-push main", kind="constraint", verified=True)
    mine = remember(daemon, "Use uv, not pip", kind="preference", scope=SCOPE)
    due = remember(daemon, "Send the report to Ana", kind="commitment", deadline="+2h")
    remember(daemon, "db is pg 16", claim_key="db.version", claim_value="16")
    remember(daemon, "db is pg 15", claim_key="db.version", claim_value="15")
    text = context_of(hook(daemon, "session-start", claude_session_event()), "SessionStart")
    assert all(trace_id in text for trace_id in (rule, mine, due))
    assert "verified" in text and "Commitment due" in text
    assert "Open conflict on db.version" in text


def test_session_start_respects_the_token_budget_and_keeps_the_first(daemon: Running) -> None:
    first = remember(
        daemon, "Always run the linters " + "carefully " * 40, kind="constraint", verified=True
    )
    for n in range(5):
        remember(daemon, f"Preference number {n} " + "words " * 40, kind="preference")
    result = daemon.cli("hook", "session-start", "--budget", "50", input=claude_session_event())
    text = context_of(result, "SessionStart")
    assert first in text and "more not shown: token budget 50" in text


def test_empty_memory_prints_nothing(daemon: Running) -> None:
    result = hook(daemon, "session-start", claude_session_event())
    assert (result.returncode, result.stdout) == (0, "")


def test_bad_input_prints_nothing_and_exits_0(daemon: Running) -> None:
    remember(daemon, "deploy staging carefully")
    for stdin in ("", "not json", "[1, 2]", '{"prompt": 42}'):
        result = hook(daemon, "prompt", stdin)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), stdin


def test_no_daemon_prints_nothing_and_exits_0_quickly(short_tmp: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "--socket", str(short_tmp / "none.sock"),
         "hook", "prompt"],
        input=claude_prompt_event("deploy staging"), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert time.monotonic() - started < 10  # no autostart, no wait for a daemon


def test_a_stalled_daemon_is_given_up_on(short_tmp: Path) -> None:
    import socket

    path = short_tmp / "stall.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)  # accepts the connection, never answers
    try:
        result = subprocess.run(
            [sys.executable, "-m", "hikmah_cli", "--socket", str(path), "hook", "prompt"],
            input=claude_prompt_event("deploy staging"), capture_output=True, text=True,
            timeout=30,
        )  # fmt: skip
    finally:
        listener.close()
    assert (result.returncode, result.stdout) == (0, "")
