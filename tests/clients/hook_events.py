"""The hook events the hosts write on ``hikmah hook``'s stdin, and the context a hook
answers with, checked against the host's documented shape."""

from __future__ import annotations

import json
import subprocess
from typing import Any

PROJECT_DIR = "/home/ana/app"


def claude_prompt_event(prompt: str) -> str:
    """A UserPromptSubmit event exactly as Claude Code writes it on the hook's stdin."""
    return json.dumps(
        {
            "session_id": "abc123",
            "transcript_path": "/home/ana/.claude/projects/app/abc123.jsonl",
            "cwd": PROJECT_DIR,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def claude_session_event() -> str:
    return json.dumps(
        {
            "session_id": "abc123",
            "transcript_path": "/home/ana/.claude/projects/app/abc123.jsonl",
            "cwd": PROJECT_DIR,
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )


def gemini_prompt_event(prompt: str, session_context: str) -> str:
    """A BeforeAgent event as Gemini CLI 0.61 run headless writes it: the session-start
    hook's context (its < and > escaped) in front of the person's prompt."""
    return json.dumps(
        {
            "session_id": "4c859d98-0b7e-4d57-9d4b-3b1f0c2d9e11",
            "transcript_path": "/home/ana/.gemini/tmp/app/chats/session-4c859d98.jsonl",
            "cwd": PROJECT_DIR,
            "hook_event_name": "BeforeAgent",
            "timestamp": "2026-12-07T01:14:22.750Z",
            "prompt": f"<hook_context>{session_context}</hook_context>\n\n{prompt}",
        }
    )


def context_of(result: subprocess.CompletedProcess[str], event_name: str) -> str:
    """The additional context, after checking the output is the host's documented shape."""
    assert result.returncode == 0, result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    assert set(output) == {"hookSpecificOutput"}
    specific = output["hookSpecificOutput"]
    assert set(specific) == {"hookEventName", "additionalContext"}
    assert specific["hookEventName"] == event_name
    text: str = specific["additionalContext"]
    return text
