"""The screen: an agent's note that reads as instructions to an agent.

Memory that agents write is read back by later agents, so one prompt-injected
session could plant instructions in every later one. What an agent writes is
screened by named rules; a note that any rule matches is *quarantined*: the
person sees it, with the rule's name and what it matched, and no agent ever
receives it (docs/security.md, "Review"). The rules are deterministic and each
is explainable in one line; no model runs. They look for the signs of an
injection, not for topics: a note that mentions ``curl``, "ignore" or ``main``
is ordinary, while one that pipes a download into a shell, or tells its reader
to ignore what it was told, is not.

Every pattern runs in linear time (bounded quantifiers, no nested repetition
that could match one text two ways), and a text is screened up to
:data:`SCREENED_CHARS`, which covers the largest trace the policy allows.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from typing import Final, NamedTuple

SCREENED_CHARS: Final = 1 << 20


class Rule(NamedTuple):
    """A sign of instructions to an agent: its name, what it means, and its pattern."""

    name: str
    meaning: str
    pattern: re.Pattern[str]


class Sign(NamedTuple):
    """A rule that matched a text, and the part of the text it matched."""

    rule: str
    meaning: str
    matched: str


def _words(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


# Words that make "the rules" the reader's own: what it was told before this note.
_EARLIER = _words(
    "previous", "prior", "above", "earlier", "preceding", "former", "original", "initial",
    "system", "all", "any", "every", "your",
)  # fmt: skip
_ORDERS = _words(
    "instructions?", "prompts?", "rules?", "directions?", "directives?", "guidelines?",
    "messages?", "context", "guardrails?", "constraints?",
)  # fmt: skip

# Telling the reader to drop what it was told, in the languages whose phrasing we know.
_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|of\s+)?"
    rf"(?:the\s+|your\s+|these\s+|those\s+)?{_EARLIER}\s+(?:\w+\s+)?{_ORDERS}\b"
    r"|\bnew\s+(?:system\s+)?instructions\s*:"
    r"|\bforget\s+(?:everything|all)\s+(?:you\s+)?(?:were\s+told|know|learned)\b"
    # German, Spanish, French, Portuguese, Italian, Dutch
    r"|\b(?:ignorier(?:e|en)?|vergiss)\s+(?:\w+\s+){0,3}(?:anweisungen|instruktionen|regeln|befehle)\b"
    r"|\b(?:ignora|ignore|olvida)\s+(?:todas\s+)?(?:las|tus|sus)\s+(?:\w+\s+){0,2}"
    r"(?:instrucciones|órdenes|reglas)\b"
    r"|\b(?:ignore[zs]?|oublie[zs]?)\s+(?:toutes\s+)?(?:les|tes|vos)\s+(?:\w+\s+){0,2}"
    r"(?:instructions|consignes|règles)\b"
    r"|\b(?:ignore|ignora|esqueça)\s+(?:todas\s+)?(?:as|suas)\s+(?:\w+\s+){0,2}"
    r"(?:instruções|regras)\b"
    r"|\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le|tue)\s+(?:\w+\s+){0,2}(?:istruzioni|regole)\b"
    r"|\b(?:negeer|vergeet)\s+(?:\w+\s+){0,3}(?:instructies|regels)\b",
    re.IGNORECASE,
)

# A chat transcript's turn markers, or a model's template tokens, inside a note.
_ROLE = re.compile(
    r"<\|?(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id)\|?>"
    r"|\[/?INST\]|<</?SYS>>|</?(?:system|assistant)(?:[\s_-]?prompt)?>"
    r"|(?:^|\n)[ \t#*>\[]{0,8}(?:system|assistant|developer)(?:[ \t]+(?:prompt|message))?"
    r"[ \t\]*]{0,3}:[ \t]*(?:you\b|ignore\b|always\b|never\b|from\s+now\b|do\b|run\b|"
    r"execute\b|the\s+user\b|new\b|override\b|sure\b|ok\b|okay\b|i\s+will\b|i'll\b)",
    re.IGNORECASE,
)

# Characters a person cannot see that change what a model reads: zero-width and
# joiner characters, bidirectional overrides and isolates, Unicode tags.
_HIDDEN = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)

# A download handed straight to an interpreter.
_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
_SHELL = (
    r"(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b|python[23]?\b|perl\b|ruby\b|node\b|iex\b"
    r"|invoke-expression\b"
)
_PIPE_TO_SHELL = re.compile(
    rf"\b{_FETCH}[^|\n]{{0,300}}\|\s*(?:{_SHELL})"
    rf"|\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\$\(\s*{_FETCH}"
    rf"|\b(?:ba|z)?sh\s+<\(\s*{_FETCH}"
    rf"|\beval\s+[\"']?\$\(\s*{_FETCH}"
    r"|\bbase64\s+(?:-d|--decode)\b[^|\n]{0,200}\|\s*(?:" + _SHELL + ")",
    re.IGNORECASE,
)

# Sending local data out: a capture service, or a request that carries a local
# secret or a command's output.
_CAPTURE_HOSTS = _words(
    r"webhook\.site", r"requestbin\.\w+", r"pipedream\.net", r"ngrok(?:-free)?\.(?:io|app|dev)",
    r"interact\.sh", r"oast\.\w+", r"burpcollaborator\.net", r"hookbin\.com",
    r"requestcatcher\.com", r"beeceptor\.com", r"transfer\.sh", r"canarytokens\.com",
    r"pastebin\.com/api", r"0x0\.st",
)  # fmt: skip
_LOCAL_SECRETS = (
    r"(?:~|\$HOME|\$\{HOME\})/\.(?:ssh|aws|gnupg|netrc|npmrc|pypirc|docker|kube|config/gh)"
    r"|\bid_(?:rsa|ed25519|ecdsa)\b|/etc/(?:passwd|shadow)\b|\.env\b|\bcredentials\b"
)
_EXFILTRATION = re.compile(
    rf"https?://(?:[\w-]+\.)*{_CAPTURE_HOSTS}"
    rf"|\b(?:curl|wget|nc|ncat|scp|rsync)\b[^\n]{{0,200}}(?:-d\s*@|--data(?:-binary)?[=\s]+@"
    rf"|-F\s*\S*=@|-T\s|--upload-file\s|--post-file[=\s])[^\n]{{0,40}}(?:{_LOCAL_SECRETS})"
    r"|https?://[^\s\"'<>]{1,200}[?&][\w-]{1,40}=(?:\$\(|`|\$\{?(?:[A-Z_]*(?:TOKEN|KEY|SECRET|"
    r"PASS\w*|HOME|USER|AWS\w*)))"
    r"|\b(?:send|post|upload|exfiltrate|forward|copy|leak)\s+(?:\w+\s+){0,4}"
    r"(?:secrets?|credentials|tokens?|api\s+keys?|private\s+keys?|ssh\s+keys?|env(?:ironment)?"
    r"(?:\s+variables)?|\.env)\s+(?:\w+\s+){0,3}to\s+(?:https?://|\S+@\S+\.\w+)",
    re.IGNORECASE,
)

# A claim that the person granted the reader something, or a wish to keep it from them.
_AUTHORITY = re.compile(
    r"\b(?:the\s+)?(?:user|person|owner|admin(?:istrator)?|human|operator|developer)\s+"
    r"(?:has\s+|had\s+|have\s+)?(?:already\s+|explicitly\s+|pre-?)?"
    r"(?:authori[sz]ed|approved|permitted|allowed|granted|cleared|consented|instructed)\s+"
    r"(?:you|the\s+(?:agent|assistant|ai|model)|agents|assistants)\b"
    r"|\byou\s+(?:are|have\s+been|were)\s+(?:now\s+|hereby\s+|already\s+|fully\s+){0,2}"
    r"(?:authori[sz]ed|allowed|permitted|cleared|approved|granted\s+permission)\s+to\b"
    r"|\byou\s+(?:now\s+)?have\s+(?:full\s+|explicit\s+|the\s+user'?s?\s+)?"
    r"(?:permission|authori[sz]ation|approval|consent)\s+to\b"
    r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|ask|notify|alert|mention\s+(?:this\s+)?to)"
    r"\s+the\s+(?:user|person|human|owner)\b"
    r"|\bwithout\s+(?:asking|telling|informing|notifying)\s+the\s+(?:user|person|human|owner)\b",
    re.IGNORECASE,
)

# Words addressed to whichever model reads the note.
_ADDRESSED = re.compile(
    r"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|future\s+){0,2}"
    r"(?:ai|llms?|agents?|assistants?|models?|claude|codex|gemini|copilot|chatgpt|gpt)\b"
    r"|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|agent|assistant|language\s+model|claude|codex"
    r"|gemini|chatgpt|gpt)\b"
    r"|\b(?:any|every|all|future)\s+(?:ai|llms?|agents?|assistants?|models?)\s+"
    r"(?:reading|that\s+reads?|who\s+reads?|seeing)\s+this\b"
    r"|\bwhen\s+you\s+(?:read|see|recall|load)\s+this\s+(?:note|memory|message)\b"
    r"|\bas\s+an\s+ai\s+(?:language\s+)?model,?\s+you\b",
    re.IGNORECASE,
)

RULES: Final[tuple[Rule, ...]] = (
    Rule("override", "tells its reader to ignore what it was told", _OVERRIDE),
    Rule("role", "carries a chat role marker or a model's template token", _ROLE),
    Rule("hidden", "holds characters a person cannot see (zero-width, bidi, tags)", _HIDDEN),
    Rule("pipe-to-shell", "hands a download or a decoded payload to a shell", _PIPE_TO_SHELL),
    Rule("exfiltration", "sends local data or secrets somewhere", _EXFILTRATION),
    Rule("authority", "claims the person granted its reader something", _AUTHORITY),
    Rule("addressed", "speaks to whichever model reads it", _ADDRESSED),
)
ENCODED: Final = Rule(
    "encoded",
    "holds an encoded text (base64 or escapes) a person cannot read",
    re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,4096}={0,2}(?![A-Za-z0-9+/=_-])"),
)
_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}){12,}")
RULE_NAMES: Final = tuple(rule.name for rule in (*RULES, ENCODED))


def signs(text: str) -> list[Sign]:
    """Every rule ``text`` matches, in :data:`RULES` order (empty: it reads as a note)."""
    text = text[:SCREENED_CHARS]
    folded = unicodedata.normalize("NFKC", text)
    found = []
    for rule in RULES:
        where = text if rule.name == "hidden" else folded
        match = rule.pattern.search(where)
        if match is not None:
            found.append(Sign(rule.name, rule.meaning, match.group()))
    encoded = _encoded(folded)
    if encoded is not None:
        found.append(Sign(ENCODED.name, ENCODED.meaning, encoded))
    return found


def quarantined(text: str) -> bool:
    """Whether any rule matches ``text``."""
    return bool(signs(text))


def _encoded(text: str) -> str | None:
    """A run of base64 that decodes to readable text, or a long run of escapes: what a
    note has no reason to hide from the person reading it."""
    escaped = _ESCAPES.search(text)
    if escaped is not None:
        return escaped.group()
    for match in ENCODED.pattern.finditer(text):
        run = match.group()
        if _decodes_to_text(run):
            return run
    return None


def _decodes_to_text(run: str) -> bool:
    """Whether a base64 run decodes to words: mostly printable, with spaces (a key, a
    hash or an image decodes to bytes, not prose)."""
    data = run.replace("-", "+").replace("_", "/")
    data += "=" * (-len(data.rstrip("=")) % 4)
    try:
        raw = base64.b64decode(data.rstrip("=") + "=" * (-len(data.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        return False
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return printable >= 0.95 * len(decoded) and decoded.count(" ") >= 3
