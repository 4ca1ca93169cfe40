"""The screen: an agent's note that reads as instructions to an agent.

Memory that agents write is read back by later agents, so one prompt-injected
session could plant instructions in every later one. What an agent writes is
screened by named rules; a note that any rule matches is *quarantined*: the
person sees it, with the rule's name and what it matched, and no agent ever
receives it (:mod:`hikmah.review`). The rules are deterministic and each is
explainable in one line; no model runs. They look for the signs of an injection,
not for topics: a note that mentions ``curl``, "ignore" or ``main`` is ordinary,
while one that pipes a download into a shell, tells its reader to ignore what it
was told, or speaks to whichever model reads it, is not.

Every pattern runs in linear time (bounded quantifiers, no nested repetition that
could match one text two ways), and a text is screened up to
:data:`SCREENED_CHARS`, which covers the largest trace the policy allows. Patterns
read the text in NFKC form, so fullwidth letters hide nothing; the ``hidden`` rule
reads it as written.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Final, NamedTuple

SCREENED_CHARS: Final = 1 << 20


class Text(NamedTuple):
    """A text as the rules read it: as written, in NFKC form, and that lowercased."""

    raw: str
    folded: str
    lowered: str

    @classmethod
    def of(cls, text: str) -> Text:
        raw = text[:SCREENED_CHARS]
        folded = unicodedata.normalize("NFKC", raw)
        return cls(raw, folded, folded.lower())


# What a rule found in a text (None: nothing).
Finder = Callable[[Text], str | None]


class Rule(NamedTuple):
    """A sign of instructions to an agent: its name, what it means, how it is found."""

    name: str
    meaning: str
    find: Finder


class Sign(NamedTuple):
    """A rule that matched a text, and the part of the text it matched."""

    rule: str
    meaning: str
    matched: str


def _searching(*alternatives: tuple[str, str]) -> Finder:
    """A finder for the alternatives, each ``(anchors, pattern)``: every match of the
    (lowercase) pattern holds one of the ``|``-separated anchors. A pass of the regex
    engine over a long text costs far more than a substring test, so only the
    alternatives whose anchors the text holds are searched, in one pass."""
    anchored = [tuple(anchors.split("|")) for anchors, _pattern in alternatives]
    patterns = [pattern for _anchors, pattern in alternatives]

    @functools.lru_cache(maxsize=64)
    def combined(chosen: tuple[int, ...]) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{patterns[i]})" for i in chosen))

    def find(text: Text) -> str | None:
        lowered = text.lowered
        chosen = tuple(
            i for i, anchors in enumerate(anchored) if any(a in lowered for a in anchors)
        )
        if not chosen:
            return None
        match = combined(chosen).search(lowered)
        return None if match is None else match.group()

    return find


def _words(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


# Who a note may speak to, when it speaks to a model.
_MODEL = _words(
    "ai", "ais", "llms?", "agents?", "assistants?", "models?", "claude", "codex", "gemini",
    "copilot", "chatgpt", "gpt", "bots?", "ia", "ki",
)  # fmt: skip
# Words that make "the rules" the reader's own: what it was told before this note.
_EARLIER = _words(
    "previous", "prior", "above", "earlier", "preceding", "former", "original", "initial",
    "system", "all", "any", "every", "your",
)  # fmt: skip
_ORDERS = _words(
    "instructions?", "prompts?", "rules?", "directions?", "directives?", "guidelines?",
    "messages?", "context", "guardrails?", "constraints?", "polic(?:y|ies)", "restrictions?",
)  # fmt: skip
_PERSON = r"(?:the\s+)?(?:user|person|human|owner|maintainer|admin(?:istrator)?|operator)"

# Telling the reader to drop what it was told, in the languages whose phrasing we know.
_OVERRIDE = _searching(
    ("ignor|disregard|forget|overrid|bypass",
     r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|of\s+)?"
     rf"(?:the\s+|your\s+|these\s+|those\s+)?{_EARLIER}\s+(?:\w+\s+)?{_ORDERS}\b"),
    ("ignor|disregard",
     rf"\b(?:ignore|disregard)\s+{_PERSON}'?s?\s+(?:request|instructions?|wishes|orders)\b"),
    ("safety|security",
     rf"\b(?:ignore|disregard|bypass|override)\s+(?:the\s+|all\s+|any\s+)?(?:safety|security)"
     rf"\s+{_ORDERS}"),
    ("instructions", r"\bnew\s+(?:system\s+)?instructions\s*:"),
    ("your", r"\byour\s+(?:real|actual|true|new)\s+(?:instructions|orders|task|goal|objective)\b"),
    ("forget", r"\bforget\s+(?:everything|all)\s+(?:you\s+)?(?:were\s+told|know|learned)\b"),
    ("no longer|void|revoked|lifted|suspended|overridden|disabled",
     rf"\b{_ORDERS}\b[^.\n]{{0,60}}\b(?:no\s+longer\s+appl(?:y|ies)|(?:is|are)\s+(?:now\s+)?"
     r"(?:void|revoked|lifted|suspended|overridden|disabled))\b"),
    ("precedence",
     r"\b(?:take|takes)\s+precedence\s+over\b[^.\n]{0,40}\b(?:user|system\s+prompt|instructions)"),
    ("follow|obey",
     r"\b(?:follow|obey)\s+(?:only\s+)?(?:the|these|this)\s+(?:notes?|memor(?:y|ies))\b"),
    ("from now", r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should|act)\b"),
    ("mode", r"\b(?:developer|dev|god|jailbreak|dan|unrestricted|sudo)\s+mode\b"),
    ("unrestricted", r"\bunrestricted\s+(?:shell|access|root|mode|agent)\b"),
    # German, Spanish, French, Portuguese, Italian, Dutch
    ("ignorier|vergiss|missacht",
     r"\b(?:ignorier(?:e|en)?|vergiss|missachte)\s+(?:\w+\s+){0,3}"
     r"(?:anweisungen|instruktionen|regeln|befehle|richtlinien)\b"),
    ("ignor|olvida",
     r"\b(?:ignora|ignore|olvida)\s+(?:todas\s+)?(?:las|tus|sus)\s+(?:\w+\s+){0,2}"
     r"(?:instrucciones|órdenes|reglas|directrices|políticas)\b"),
    ("ignor|oublie",
     r"\b(?:ignore[zs]?|oublie[zs]?)\s+(?:toutes\s+)?(?:les|tes|vos)\s+(?:\w+\s+){0,2}"
     r"(?:instructions|consignes|règles|directives|politiques)\b"),
    ("ignor|esqueç|desconsider",
     r"\b(?:ignore|ignora|esqueça|desconsidere)\s+(?:todas\s+)?(?:as|suas)\s+(?:\w+\s+){0,2}"
     r"(?:instruções|regras|diretrizes|políticas)\b"),
    ("ignora|dimentica",
     r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le|tue)\s+(?:\w+\s+){0,2}"
     r"(?:istruzioni|regole|politiche|direttive)\b"),
    ("negeer|vergeet", r"\b(?:negeer|vergeet)\s+(?:\w+\s+){0,3}(?:instructies|regels)\b"),
)  # fmt: skip

# A chat transcript's turn markers, a model's template tokens, or a tool's result
# forged inside a note.
_ROLE = _searching(
    ("im_|system|assistant|user|endoftext|eot_id|start_header",
     r"<\|?(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id)\|?>"),
    ("inst]|sys>>|system|assistant",
     r"\[/?inst\]|<</?sys>>|</?(?:system|assistant)(?:[\s_-]?prompt)?>"),
    ("tool_|function_|system-reminder|instructions>|</memory>",
     r"</?(?:tool_result|tool_call|tool_use|function_results?|function_calls|system-reminder"
     r"|instructions)>|</memory>"),
    ("system|admin|developer|root", r"\[\s*(?:system|admin|developer|root)(?:\s+\w+){0,2}\s*\]"),
    ("```", r"```\s*(?:system|instructions?)\b"),
    ("system|assistant|developer|sistema|système|systeme",
     r"(?:^|\n)[ \t#*>]{0,8}(?:system|assistant|developer|sistema|système|systeme)"
     r"(?:[ \t]+(?:prompt|message|note))?[ \t*]{0,3}:[ \t]*(?:you\b|your\b|ignore\b|always\b"
     r"|never\b|from\s+now\b|do\b|run\b|execute\b|the\s+user\b|new\b|override\b|sure\b|ok\b"
     r"|okay\b|i\b|i'll\b|understood\b|certainly\b|yes\b|all\s+previous\b|proceed\b|obey\b"
     r"|follow\b|da\s+ora\b|desde\s+ahora\b|à\s+partir\b)"),
    ("assistant|ai",
     r"(?:^|\n)[ \t]{0,8}(?:human|user)[ \t]*:[^\n]{0,300}\n[ \t]{0,8}(?:assistant|ai)[ \t]*:"),
    ("human|user",
     r"(?:^|\n)[ \t]{0,8}(?:assistant|ai)[ \t]*:[^\n]{0,300}\n[ \t]{0,8}(?:human|user)[ \t]*:"),
)  # fmt: skip

# Characters a person cannot see that change what a model reads: zero-width and
# joiner characters, bidirectional overrides and isolates, Unicode tags.
_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
# A comment that markdown hides from the person and a model still reads.
_HIDDEN_COMMENT = re.compile(
    rf"<!--(?:(?!-->)[^\n]){{0,300}}\b(?:{_MODEL}|you|your)\b(?:(?!-->)[^\n]){{0,300}}-->",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w{2,64}")


def _hidden(text: Text) -> str | None:
    for pattern in (_INVISIBLE, _HIDDEN_COMMENT):
        match = pattern.search(text.raw)
        if match is not None:
            return match.group()
    for word in _WORD.finditer(text.raw):  # a Cyrillic or Greek letter in a Latin word
        if _mixed_scripts(word.group()):
            return word.group()
    return None


def _mixed_scripts(word: str) -> bool:
    latin = other = False
    for ch in word:
        if ch.isascii():
            latin = latin or ch.isalpha()
        elif "\u0370" <= ch <= "\u04ff":
            other = True
    return latin and other


# A download (or a decoded payload) handed straight to an interpreter.
_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
_SHELL = (
    r"(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b|python[23]?\b|perl\b|ruby\b|node\b|iex\b"
    r"|invoke-expression\b"
)
_PIPE_TO_SHELL = _searching(
    ("|", rf"\b{_FETCH}[^|\n]{{0,300}}\|\s*(?:{_SHELL})"),
    ("$(", rf"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\$\(\s*{_FETCH}"),
    ("<(", rf"\b(?:ba|z)?sh\s+<\(\s*{_FETCH}"),
    ("eval", rf"\beval\s+[\"']?\$\(\s*{_FETCH}"),
    ("|", rf"\b(?:base64\s+(?:-d|--decode)|xxd\s+-r|openssl\s+(?:base64|enc)\s+-d)\b"
          rf"[^|\n]{{0,200}}\|\s*(?:{_SHELL})"),
    ("downloadstring|iex|invoke-expression",
     r"\bdownloadstring\s*\(|\b(?:iex|invoke-expression)\s*\(\s*(?:new-object|iwr|irm)\b"),
    ("powershell|pwsh",
     r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,100}\s-(?:enc|encodedcommand|e)\s+"
     r"[a-z0-9+/=]{20}"),
    ("b64decode", r"\b(?:os\.system|subprocess\.\w+|exec|eval)\s*\(\s*(?:base64\.)?b64decode\b"),
)  # fmt: skip

# Sending local data out: a capture service, a request that carries a local secret,
# or a page the model is told to load with what it saw.
_CAPTURE_HOSTS = _words(
    r"webhook\.site", r"requestbin\.\w+", r"pipedream\.net", r"ngrok(?:-free)?\.(?:io|app|dev)",
    r"interact\.sh", r"oast\.\w+", r"burpcollaborator\.net", r"hookbin\.com",
    r"requestcatcher\.com", r"beeceptor\.com", r"transfer\.sh", r"canarytokens\.com",
    r"pastebin\.com/api", r"0x0\.st",
)  # fmt: skip
_LOCAL_SECRETS = (
    r"(?:~|\$home|\$\{home\})/\.(?:ssh|aws|gnupg|netrc|npmrc|pypirc|docker|kube|config/gh)"
    r"|\bid_(?:rsa|ed25519|ecdsa)\b|/etc/(?:passwd|shadow)\b|\.env\b|\bcredentials\b"
)
_SECRET_VAR = r"\$\{?[a-z_]{0,40}(?:token|key|secret|pass\w{0,10}|aws\w{0,20})\b"
_EXFILTRATION = _searching(
    ("webhook|requestbin|pipedream|ngrok|interact|oast|burpcollab|hookbin|requestcatcher"
     "|beeceptor|transfer.sh|canarytokens|pastebin|0x0",
     rf"https?://(?:[\w-]+\.)*{_CAPTURE_HOSTS}"),
    ("@|-t |--upload-file|--post-file",
     r"\b(?:curl|wget|nc|ncat|scp|rsync)\b[^\n]{0,200}(?:-d\s*@|--data(?:-binary)?[=\s]+@"
     rf"|-f\s*\S*=@|-t\s|--upload-file\s|--post-file[=\s])[^\n]{{0,40}}(?:{_LOCAL_SECRETS})"),
    ("scp|rsync|sftp|nc", rf"\b(?:scp|rsync|sftp|nc|ncat)\b[^\n]{{0,100}}(?:{_LOCAL_SECRETS})"),
    ("=$|=`", rf"[?&][\w-]{{1,40}}=(?:\$\(|`|{_SECRET_VAR})"),
    ("![", r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{0,300}[?&][^)\s=]{1,40}=[<{$]"),
    ("send|post|upload|exfiltrat|forward|copy|leak",
     r"\b(?:send|post|upload|exfiltrate|forward|copy|leak)\s+(?:\w+\s+){0,4}"
     r"(?:secrets?|credentials|tokens?|api\s+keys?|private\s+keys?|ssh\s+keys?|env(?:ironment)?"
     r"(?:\s+variables)?|\.env)\s+(?:\w+\s+){0,3}to\s+(?:https?://|\S+@\S+\.\w+)"),
)  # fmt: skip

# A claim that the person granted the reader something, or a wish to keep it from them.
_RISKY = _words(
    "merge", "push", "skip", "bypass", "disable", "delete", "remove", "approve", "commit",
    "deploy", "force", "ignore", "upload", "send", "run", "execute", "drop", "turn off",
)  # fmt: skip
_PEOPLE = "user|person|human|owner|maintainer|admin|operator"
_AUTHORITY = _searching(
    (_PEOPLE,
     rf"\b{_PERSON}\s+(?:has\s+|had\s+|have\s+)?(?:already\s+|explicitly\s+|pre-?)?"
     r"(?:authori[sz]ed|approved|permitted|allowed|granted|cleared|consented|instructed)\s+"
     rf"(?:you|the\s+{_MODEL}|{_MODEL})\b"),
    ("you",
     r"\byou\s+(?:are|have\s+been|were)\s+(?:now\s+|hereby\s+|already\s+|fully\s+){0,2}"
     r"(?:authori[sz]ed|allowed|permitted|cleared|approved|granted\s+permission)\s+to\b"),
    ("you",
     r"\byou\s+(?:now\s+)?have\s+(?:full\s+|explicit\s+|the\s+user'?s?\s+)?"
     r"(?:permission|authori[sz]ation|approval|consent)\s+to\b"),
    ("you", rf"\byou\s+(?:may|can|are\s+free\s+to)\s+(?:now\s+|always\s+|safely\s+)?{_RISKY}\b"),
    ("may|can now|allowed|permitted|authori",
     rf"\b{_MODEL}\s+(?:may|can\s+now|are\s+(?:now\s+)?(?:allowed|permitted|authori[sz]ed))\s+"
     rf"(?:to\s+)?{_RISKY}"),
    ("you to", rf"\b{_PERSON}\s+(?:wants|asked|told|instructed|expects|requires)\s+you\s+to\b"),
    (_PEOPLE,
     rf"\b(?:do\s+not|don't|never)\s+(?:tell|inform|ask|notify|alert|mention\s+(?:this\s+)?to)"
     rf"\s+{_PERSON}\b"),
    ("without", rf"\bwithout\s+(?:asking|telling|informing|notifying)\s+{_PERSON}\b"),
    ("mention|report|disclos|reveal",
     r"\b(?:never|do\s+not|don't)\s+(?:mention|report|disclose|reveal)\s+(?:it|this|that|them"
     r"|anything|any\s+(?:problems?|issues?|findings?))\b"),
    ("know|see|be told",
     rf"\b{_PERSON}\s+(?:doesn't|does\s+not|won't|need\s+not|needn't)\s+(?:need\s+to\s+)?"
     r"(?:know|see|be\s+told)\b"),
    ("quietly|silently|secretly|covertly",
     r"\b(?:quietly|silently|secretly|covertly)\s+(?:remove|delete|disable|commit|push|add"
     r"|change|modify|upload|send|copy|merge|approve)\b"
     r"|\b(?:do|did)\s+(?:it|this|that|so)\s+(?:quietly|silently|secretly|covertly)\b"),
    ("erlaubt|gestattet|nichts",
     r"\b(?:hat|haben)\s+(?:dir|euch|ihnen)\s+(?:erlaubt|gestattet)\b|\bsag\w*\s+(?:ihm|ihr"
     r"|dem\s+nutzer|niemandem)\s+nichts\b"),
    ("permiso|usuario", r"\btienes\s+permiso\s+para\b|\bno\s+(?:le\s+)?(?:digas|cuentes)\s+"
                        r"(?:nada\s+)?al\s+usuario"),
    ("permission|utilisateur",
     r"\btu\s+as\s+(?:la\s+)?permission\s+de\b|\bne\s+dis\s+rien\s+à\s+l'utilisateur"),
)  # fmt: skip

# Words addressed to whichever model reads the note.
_ADDRESSED = _searching(
    ("note|message|memo|instruction|psa|reminder",
     rf"\b(?:note|message|memo|instructions?|psa|reminder)\s+(?:to|for)\s+(?:the\s+|any\s+"
     rf"|all\s+|future\s+|next\s+){{0,2}}{_MODEL}\b"),
    ("attention|hey|hi|hello|dear",
     rf"\b(?:attention|hey|hi|hello|dear)\s*,?\s+(?:the\s+|any\s+|all\s+)?(?:\w+\s+)?{_MODEL}\b"),
    ("if you are", rf"\bif\s+you\s+are\s+(?:an?\s+)?(?:{_MODEL}|language\s+model)\b"),
    ("this",
     rf"\b(?:any|every|all|future|next|later|subsequent|other)\s+{_MODEL}\s+(?:reading|that"
     r"\s+reads?|who\s+reads?|seeing|loading)\s+this\b"),
    ("future|next|later|subsequent|other",
     rf"\b(?:future|next|later|subsequent|other)\s+{_MODEL}\s+(?:must|should|need\s+to|have\s+to"
     r"|are\s+required\s+to|will\s+need\s+to)\b"),
    ("for the next", rf"\bfor\s+the\s+next\s+{_MODEL}\b"),
    ("reading|loading|processing|seeing",
     rf"\b{_MODEL}\s+(?:reading|loading|processing|seeing)\s+(?:this|these)\b"),
    ("whoever", r"\bwhoever\s+(?:is\s+)?read(?:s|ing)\s+this\b"),
    ("when you", r"\bwhen\s+you\s+(?:read|see|recall|load)\s+this\s+(?:note|memory|message)\b"),
    ("as an ai", r"\bas\s+an\s+ai\s+(?:language\s+)?model,?\s+you\b"),
    ("nota|hinweis|note", r"\b(?:nota|hinweis|note)\s+(?:para|für|pour)\s+(?:la\s+|die\s+|l')?"
                          r"(?:ia|ki)\b"),
)  # fmt: skip

# Text a person cannot read: a base64 or hex run that decodes to prose, or a run of
# escapes.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,4096}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){16,2048}(?![0-9A-Fa-f])")
_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}){12,}")


def _encoded(text: Text) -> str | None:
    escaped = _ESCAPES.search(text.folded)
    if escaped is not None:
        return escaped.group()
    for match in _HEX_RUN.finditer(text.folded):
        if _is_prose(bytes.fromhex(match.group())):
            return match.group()
    for match in _BASE64_RUN.finditer(text.folded):
        if _is_prose(_base64(match.group())):
            return match.group()
    return None


def _base64(run: str) -> bytes:
    data = run.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return b""


def _is_prose(raw: bytes) -> bool:
    """Whether decoded bytes read as words: printable text with spaces (a key, a hash or
    an image decodes to bytes, not prose)."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return bool(decoded) and printable >= 0.95 * len(decoded) and decoded.count(" ") >= 3


RULES: Final[tuple[Rule, ...]] = (
    Rule("override", "tells its reader to ignore what it was told", _OVERRIDE),
    Rule("role", "carries a chat role marker, a template token or a forged tool result", _ROLE),
    Rule(
        "hidden",
        "hides text from a person (zero-width, bidi, look-alike letters)",
        _hidden,
    ),
    Rule("pipe-to-shell", "hands a download or a decoded payload to a shell", _PIPE_TO_SHELL),
    Rule("exfiltration", "sends local data or secrets somewhere", _EXFILTRATION),
    Rule("authority", "claims a permission for its reader, or hides from the person", _AUTHORITY),
    Rule("addressed", "speaks to whichever model reads it", _ADDRESSED),
    Rule(
        "encoded", "holds an encoded text (base64, hex or escapes) a person cannot read", _encoded
    ),
)
RULE_NAMES: Final = tuple(rule.name for rule in RULES)


def signs(text: str) -> list[Sign]:
    """Every rule ``text`` matches, in :data:`RULES` order (empty: it reads as a note)."""
    read = Text.of(text)
    found = []
    for rule in RULES:
        matched = rule.find(read)
        if matched is not None:
            found.append(Sign(rule.name, rule.meaning, matched))
    return found


def quarantined(text: str) -> bool:
    """Whether any rule matches ``text`` (the first that does ends the search)."""
    read = Text.of(text)
    return any(rule.find(read) is not None for rule in RULES)
