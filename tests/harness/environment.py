"""The environment a test runs the daemon and the clients in."""

from __future__ import annotations

import os


def clean_env(**extra: str) -> dict[str, str]:
    """An environment without any coding-agent variable, plus ``extra``."""
    agent = (
        "CLAUDECODE",
        "CLAUDE_CODE_",
        "CODEX_",
        "CURSOR_",
        "GEMINI_CLI",
        "OPENCODE",
        "AI_AGENT",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(agent)}
    env.update(extra)
    return env
