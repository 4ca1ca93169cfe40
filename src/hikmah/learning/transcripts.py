"""Coding-agent session transcripts (JSON Lines) into messages, purely.

:func:`parse_transcript` turns the lines of a Claude Code or Codex transcript
into :class:`Message` records, marking the person's own words; reading the
file and writing traces belong to the caller, and :mod:`hikmah.learning.ingest`
proposes candidates from the person's words.

The format is detected from the content, never from the file name: the first
line that is a record of either format decides, and a record of the other
format later on is an error. Neither format has an official schema; what this
module relies on, and where it was read:

Claude Code (``~/.claude/projects/<project>/<session>.jsonl``), from the
community references DRMacIver/claude-reliability ``notes/transcript-format.md``,
ticpu/claude-conversation-search-mcp ``docs/jsonl-format.md``,
Huntehhh/claude-code-chat ``docs/claude-cli-jsonl-format.md`` and
ryo-morimoto/claude-history ``docs/claude-code-jsonl-format.md``:

* each line is an object with a ``type``: ``user``, ``assistant``, ``system``,
  ``summary``, ``file-history-snapshot``, ``queue-operation``, ...; message
  lines carry ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp`` (ISO 8601),
  ``cwd``, ``isSidechain`` and ``message`` = ``{role, content}``;
* ``content`` is a string or a list of blocks ``text`` (``text``), ``thinking``
  (``thinking``), ``tool_use`` (``name``, ``input``), ``tool_result``
  (``tool_use_id``, ``content``: a string or text blocks) and ``image``;
* a user line whose blocks are tool results is tool output; ``isMeta`` and
  ``isCompactSummary`` lines are written by the harness; ``isSidechain`` lines
  belong to a subagent, whose "user" is the parent agent;
* user lines that wrap slash commands and their output (``<command-name>``,
  ``<local-command-stdout>``, ``<local-command-caveat>``, ``<bash-input>``),
  reminders (``<system-reminder>``), IDE context (``<ide_opened_file>``) and
  ``[Request interrupted by user]`` are not the person's words (as public
  transcript parsers that skip them also assume).

Codex CLI (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), from
openai/codex ``codex-rs/protocol/src/models.rs`` (``ResponseItem``), kvsankar/
agent-history ``docs/specs/agents/formats/codex-cli-format.md``,
jnarowski/agentcmd ``.agent/research/codex/format-comparison.md`` and
Sinity/polylogue ``docs/providers/openai-codex.md``:

* each line is ``{timestamp, type, payload}`` with ``type`` one of
  ``session_meta`` (``payload.id``, ``payload.cwd``; its ``instructions`` are
  AGENTS.md text and yield no message),
  ``turn_context`` (``payload.cwd``), ``response_item``, ``event_msg`` and
  ``compacted`` (``payload.message``);
* a ``response_item`` payload is tagged by ``type``: ``message`` (``role`` user,
  assistant, developer or system; ``content`` a list of ``input_text`` /
  ``output_text`` items), ``function_call`` (``name``, ``arguments``: a JSON
  string), ``function_call_output`` (``output``: a string or content items),
  ``custom_tool_call`` / ``custom_tool_call_output``, ``local_shell_call``,
  ``web_search_call``, ``reasoning``, ``ghost_snapshot``;
* a message's ``id`` is skipped when Codex serialises it, so ids are usually
  absent and a message is named by a hash of (session id, line number);
* user messages that start with ``<environment_context>``,
  ``<user_instructions>``, ``# AGENTS.md instructions`` (``<INSTRUCTIONS>``),
  ``<user_shell_command>`` and similar tags are injected context;
* ``event_msg`` lines (``user_message``, ``agent_message``, ``token_count``)
  mirror the response items and are not read, so nothing is counted twice.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple

import msgspec

from hikmah.model.errors import InvalidInput

Format = Literal["claude-code", "codex"]
Role = Literal["user", "assistant", "tool", "system"]


# The tag of every trace ingested from a session transcript.
TRANSCRIPT_TAG = "transcript"
# A record longer than this is skipped unread: parsing it would hold the interpreter
# (and a daemon ingesting it) for long, and a message is cut far shorter anyway.
MAX_LINE_BYTES = 8 << 20


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One turn of a transcript.

    ``role`` is where the text sits in the conversation; ``person`` says whose
    words they are, and is True only for what the person typed. For a person's
    message, ``text`` holds their words only: harness wrappers inside it (a
    ``<system-reminder>``, an ``<ide_opened_file>`` note) are removed.
    """

    id: str
    role: Role
    text: str
    timestamp_ms: int | None
    person: bool


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed transcript. ``skipped`` counts non-blank lines that were not a
    record of the format (malformed JSON, invalid UTF-8, unknown shapes)."""

    format: Format
    session_id: str
    cwd: str | None
    messages: list[Message]
    skipped: int = 0


class TranscriptError(InvalidInput, ValueError):
    """The input is not a Claude Code or Codex transcript.

    ``line`` is the 1-based line the message talks about, or None for an
    input without lines.
    """

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


# --- parsing ----------------------------------------------------------------

_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CLAUDE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid")
_CLAUDE_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation"})

# Wrappers the harness puts into a user turn; a region they enclose is not the
# person's words. Claude Code first, then Codex.
_HARNESS_TAGS = (
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "task-notification",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "user-prompt-submit-hook",
    "environment_context",
    "user_instructions",
    "INSTRUCTIONS",
    "permissions instructions",
    "user_shell_command",
    "turn_aborted",
    "recommended_plugins",
    "skill",
    "subagent_notification",
    "app-context",
)
_TAG_ALTERNATION = "|".join(re.escape(tag) for tag in _HARNESS_TAGS)
_HARNESS_REGION = re.compile(rf"<({_TAG_ALTERNATION})(?:\s[^<>]*)?>.*?</\1\s*>", re.S | re.I)
_HARNESS_OPENING = re.compile(rf"\s*<(?:{_TAG_ALTERNATION})(?:\s[^<>]*)?>", re.I)
_HARNESS_PREFIXES = (
    "# AGENTS.md instructions",
    "[Request interrupted by user",
    "Caveat: The messages below were generated by the user",
    "This session is being continued from a previous conversation",
)
# A person who types a slash or shell command is acting, not stating anything.
_COMMAND_TAGS = ("<command-name>", "<bash-input>", "<user_shell_command>")


class _Draft(NamedTuple):
    line: int
    own_id: str | None  # the id the record carries, if any
    suffix: str  # "" or "#tool" for the tool part of a mixed Claude line
    role: Role
    text: str
    timestamp_ms: int | None
    person: bool


def parse_transcript(lines: Iterable[str | bytes]) -> Transcript:
    """Parse a Claude Code session or a Codex rollout, detecting which.

    Blank lines are ignored. A line that is not a record of the detected
    format (not JSON, invalid UTF-8, an unknown shape) is counted in
    ``Transcript.skipped`` and parsing goes on. Records that carry no
    conversation (summaries, snapshots, token counts) yield no message. A
    message id seen twice (a resumed session repeats its history) keeps the
    first occurrence.

    Raises:
        TranscriptError: no line is a record of either format (the message
            names the first offending line), or a record of the other format
            follows the one that decided.
    """
    detected: Format | None = None
    decided_at = 0
    first_bad: tuple[int, str] | None = None
    skipped = 0
    session_id: str | None = None
    cwd: str | None = None
    first_record = ""
    drafts: list[_Draft] = []
    for number, raw in enumerate(lines, start=1):
        record, problem = _decode(raw, first=number == 1)
        if record is None and problem is None:
            continue  # blank
        kind = _record_format(record) if record is not None else None
        if kind is None or record is None:
            skipped += 1
            if first_bad is None:
                first_bad = (number, problem or "a JSON value that is not a transcript record")
            continue
        if detected is None:
            detected, decided_at = kind, number
            first_record = _json(record)
        elif kind != detected:
            raise TranscriptError(
                f"line {number}: a {kind} record in a {detected} transcript "
                f"(the format was detected from line {decided_at})",
                number,
            )
        if kind == "claude-code":
            session_id = session_id or _text_field(record, "sessionId")
            cwd = cwd or _text_field(record, "cwd")
            drafts.extend(_claude_drafts(record, number))
        else:
            payload = record["payload"]
            if record["type"] == "session_meta":
                session_id = session_id or _text_field(payload, "id")
                cwd = _text_field(payload, "cwd") or cwd
            elif record["type"] == "turn_context":
                cwd = cwd or _text_field(payload, "cwd")
            drafts.extend(_codex_drafts(record, number))
    if detected is None:
        if first_bad is None:
            raise TranscriptError("the input has no lines: it is not a transcript", None)
        number, problem = first_bad
        raise TranscriptError(
            f"line {number}: {problem}; no line is a Claude Code or Codex transcript record "
            "(pass a ~/.claude/projects/<project>/<session>.jsonl session or a "
            "~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl rollout)",
            number,
        )
    # Without a session id, ids still have to be stable across parses: the
    # first record (re-encoded, so spacing and a BOM do not matter) stands in.
    session = session_id or "anon-" + _digest(first_record)
    return Transcript(
        format=detected,
        session_id=session,
        cwd=cwd,
        messages=_finish(drafts, session),
        skipped=skipped,
    )


def _decode(raw: str | bytes, *, first: bool) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None), (None, problem) or (None, None) for a blank line."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"a line over {MAX_LINE_BYTES >> 20} MiB, skipped unread"
    data = raw.strip()
    if first:
        data = (
            data.removeprefix("\ufeff")
            if isinstance(data, str)
            else data.removeprefix(b"\xef\xbb\xbf")
        )
    if not data:
        return None, None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        return None, f"not JSON ({exc})"
    except UnicodeEncodeError:  # a str holding lone surrogates
        return None, "not valid Unicode"
    except RecursionError:
        return None, "JSON nested deeper than a transcript record is"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def _record_format(record: dict[str, Any]) -> Format | None:
    kind = record.get("type")
    if not isinstance(kind, str):
        return None
    if kind in _CODEX_TYPES and isinstance(record.get("payload"), dict):
        return "codex"
    if "payload" in record:
        return None
    if any(key in record for key in _CLAUDE_KEYS) or kind in _CLAUDE_TYPES:
        return "claude-code"
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return "claude-code"
    return None


def _finish(drafts: list[_Draft], session: str) -> list[Message]:
    messages: list[Message] = []
    seen: set[str] = set()
    for draft in drafts:
        base = draft.own_id or _digest(f"{session}\n{draft.line}")
        message_id = base + draft.suffix
        if message_id in seen:
            continue
        seen.add(message_id)
        messages.append(
            Message(
                id=message_id,
                role=draft.role,
                text=draft.text,
                timestamp_ms=draft.timestamp_ms,
                person=draft.person,
            )
        )
    return messages


def _claude_drafts(record: dict[str, Any], line: int) -> list[_Draft]:
    kind = record["type"]
    own_id = _text_field(record, "uuid")
    stamp = _timestamp_ms(record.get("timestamp"))
    if kind == "system":
        content = record.get("content")
        if isinstance(content, str) and content.strip():
            return [_Draft(line, own_id, "", "system", content, stamp, False)]
        return []
    message = record.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return []
    texts, tools = _claude_blocks(message.get("content"))
    said = "\n\n".join(texts)
    tool_text = "\n\n".join(tools)
    drafts: list[_Draft] = []
    if said.strip():
        if kind == "assistant":
            drafts.append(_Draft(line, own_id, "", "assistant", said, stamp, False))
        elif record.get("isMeta") is True or record.get("isCompactSummary") is True:
            drafts.append(_Draft(line, own_id, "", "system", said, stamp, False))
        elif record.get("isSidechain") is True:
            drafts.append(_Draft(line, own_id, "", "user", said, stamp, False))
        else:
            drafts.append(_user_draft(texts, line, own_id, stamp))
    if tool_text.strip():
        suffix = "#tool" if drafts else ""
        drafts.append(_Draft(line, own_id, suffix, "tool", tool_text, stamp, False))
    return drafts


def _claude_blocks(content: object) -> tuple[list[str], list[str]]:
    """(text blocks, tool traffic) of a Claude message; thinking is left out."""
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    tools: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            name = _text_field(block, "name") or "tool"
            tools.append(f"{name}: {_json(block.get('input'))}")
        elif kind == "tool_result":
            tools.append(_flatten(block.get("content")))
    return texts, tools


def _user_draft(blocks: list[str], line: int, own_id: str | None, stamp: int | None) -> _Draft:
    words = "\n\n".join(w for w in (_person_words(b) for b in blocks) if w)
    if words:
        return _Draft(line, own_id, "", "user", words, stamp, True)
    raw = "\n\n".join(blocks)
    role: Role = "user" if any(tag in raw for tag in _COMMAND_TAGS) else "system"
    return _Draft(line, own_id, "", role, raw, stamp, False)


def _person_words(block: str) -> str:
    """What is left of a user block once harness wrappers are removed."""
    if block.lstrip().startswith(_HARNESS_PREFIXES):
        return ""
    rest = _HARNESS_REGION.sub("", block)
    # An opening tag that is never closed (a truncated wrapper) runs to the end.
    if _HARNESS_OPENING.match(rest):
        return ""
    return rest.strip()


def _codex_drafts(record: dict[str, Any], line: int) -> list[_Draft]:
    kind = record["type"]
    payload: dict[str, Any] = record["payload"]
    stamp = _timestamp_ms(record.get("timestamp"))
    if kind == "compacted":
        summary = payload.get("message")
        if isinstance(summary, str) and summary.strip():
            return [_Draft(line, None, "", "system", summary, stamp, False)]
        return []
    if kind != "response_item":
        return []
    own_id = _text_field(payload, "id")
    item = payload.get("type")
    if item == "message":
        content = payload.get("content")
        items = content if isinstance(content, list) else [{"text": content}]
        blocks = [
            c["text"] for c in items if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        if not "".join(blocks).strip():
            return []
        role = payload.get("role")
        if role == "user":
            return [_user_draft(blocks, line, own_id, stamp)]
        speaker: Role = "assistant" if role == "assistant" else "system"
        return [_Draft(line, own_id, "", speaker, "\n\n".join(blocks), stamp, False)]
    text: str | None = None
    if item in ("function_call", "custom_tool_call"):
        name = _text_field(payload, "name") or "tool"
        body = payload.get("arguments", payload.get("input"))
        text = f"{name}: {body if isinstance(body, str) else _json(body)}"
    elif item in ("function_call_output", "custom_tool_call_output"):
        text = _flatten(payload.get("output"))
    elif item == "local_shell_call":
        text = f"shell: {_json(payload.get('action'))}"
    elif item == "web_search_call":
        text = f"web_search: {_json(payload.get('action'))}"
    if text is None or not text.strip():
        return []
    return [_Draft(line, own_id, "", "tool", text, stamp, False)]


def _flatten(value: object) -> str:
    """Tool output as text: a string, text items, or ``{content: ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(item) for item in value if item is not None)
    if isinstance(value, dict):
        for key in ("text", "content", "output"):
            if key in value:
                return _flatten(value[key])
        return _json(value)
    return "" if value is None else _json(value)


def _text_field(record: object, key: str) -> str | None:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, str) and value else None


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _timestamp_ms(value: object) -> int | None:
    """ISO 8601 (naive means UTC) or epoch milliseconds; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)
