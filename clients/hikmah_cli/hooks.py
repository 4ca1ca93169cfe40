"""``hikmah hook session-start|prompt``: memory injected into a coding agent's turn.

Claude Code, Codex and Gemini CLI run these commands at session start and on
every prompt (OpenCode through the plugin ``hikmah setup opencode`` writes),
with the event as JSON on stdin, and add the ``additionalContext`` of the JSON
printed on stdout to the model's context. A hook sits on the path of
every turn, so it must be fast and must never fail the turn: any problem (no
daemon, bad input, a refusal) prints nothing and exits 0. It never starts a
daemon, and it gives up after :data:`TIMEOUT_S`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hikmah.model.paths import project_scope
from hikmah.model.tokenizer import terms
from hikmah_client import agent_text as framing
from hikmah_client.connection import Client

from .replies import as_reply

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.memory import ContextResult, RecallResult

TIMEOUT_S = 2.0
PROMPT_LIMIT = 6  # at most six traces per prompt
PROMPT_MIN_SHARED = 2  # sharing at least two meaningful words (one for a one-word prompt)
PROMPT_BUDGET = 600
SESSION_BUDGET = 1500
EVENT_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
# Acknowledgements that carry no topic to recall by.
_TRIVIAL = frozenset(
    terms("yes no ok okay sure thanks thank you please continue go on proceed next done lgtm yep")
)
# Gemini CLI run headless puts the session-start hook's context in front of the prompt
# it hands the prompt hook: memory already given, not what the person asked.
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)


def asked(prompt: str) -> str:
    """The prompt without the context hooks put into it."""
    return _HOOK_CONTEXT.sub("", prompt).strip()


def is_trivial(prompt: str) -> bool:
    """A slash command, or a prompt with no meaningful word beyond an acknowledgement."""
    text = prompt.strip()
    return text.startswith("/") or set(terms(text)) <= _TRIVIAL


def context_for(event: str, payload: dict[str, Any], socket_path: Path, budget: int) -> str:
    """The additional context for one hook event; empty when there is nothing to add."""
    cwd = Path(payload.get("cwd") or os.getcwd())
    scope = project_scope(cwd)
    client = Client(socket_path, timeout=TIMEOUT_S)
    try:
        if event == "session-start":
            context: ContextResult = as_reply(client.call("memory.context", {"scope": scope}))
            return framing.context(context, budget)
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or is_trivial(prompt := asked(prompt)):
            return ""
        params = {
            "query": prompt,
            "limit": PROMPT_LIMIT,
            "min_matched_terms": PROMPT_MIN_SHARED,
            "scope": scope,
        }
        recalled: RecallResult = as_reply(client.call("memory.recall", params))
        return framing.recalled(recalled.results, budget) if recalled.results else ""
    finally:
        client.close()


def run(event: str, stdin_text: str, socket_path: Path, budget: int | None) -> str:
    """What the hook prints: the host's hook JSON, or nothing. Never raises."""
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else {}
        if not isinstance(payload, dict):
            return ""
        default = SESSION_BUDGET if event == "session-start" else PROMPT_BUDGET
        text = context_for(event, payload, socket_path, budget or default)
    except Exception:  # a hook must never fail the agent's turn
        return ""
    if not text:
        return ""
    name = payload.get("hook_event_name") or EVENT_NAMES[event]
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}},
        ensure_ascii=False,
    )
