"""The screen: an agent's note that reads as instructions to an agent.

Memory that agents write is read back by later agents, so one prompt-injected
session could plant instructions in every later one. What an agent writes is
screened by named rules; a note that any rule matches is *quarantined*: the
person sees it, with the rule's name and what it matched, and no agent ever
receives it (:mod:`hikmah.index.review`). The rules are deterministic and each is
explainable in one line; no model runs. They look for the signs of an injection,
not for topics: a note that mentions ``curl``, "ignore" or ``main`` is ordinary,
while one that pipes a download into a shell, tells its reader to ignore what it
was told, or speaks to whichever model reads it, is not.

Every pattern runs in linear time (bounded quantifiers, no nested repetition that
could match one text two ways), and a text is screened up to
:data:`~hikmah.model.screen_match.SCREENED_CHARS`, which covers the largest trace the
policy allows. Patterns read the text in NFKC form, so fullwidth letters hide nothing;
the ``hidden`` rule reads it as written (:mod:`hikmah.model.screen_match`). The
``weakens`` rule, whose signals count only together, is
:mod:`hikmah.model.screen_together`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final, NamedTuple

from hikmah.model.screen_match import Finder, Search, Text, words
from hikmah.model.screen_together import together


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


# Who a note may speak to, when it speaks to a model: a model by name, or (weaker, since
# agents leave each other handoff notes) the next agent.
_AI = words(
    "ai", "ais", "llms?", "assistants?", "claude", "codex", "gemini", "copilot", "chatgpt",
    "gpt", "ia", "ki", "language\\s+models?",
)  # fmt: skip
_MODEL = words(_AI, "agents?", "models?", "bots?")
# What makes words to the next agent a sign: they weaken a safeguard or send data out.
_WEAKENS = words(
    "disable", "skip", "bypass", "no-verify", "suppress", "verify_ssl", "never\\s+ask",
    "don't\\s+ask", "without\\s+(?:review|approval|confirmation|asking)", "upload", "exfil\\w*",
    "rm\\s+-rf", "drop\\s+table", "force-push", "push\\s+--force", "chmod\\s+777",
)  # fmt: skip
# Words that make "the rules" the reader's own: what it was told before this note.
_EARLIER = words(
    "previous", "prior", "above", "earlier", "preceding", "former", "original", "initial",
    "system", "all", "any", "every", "your",
)  # fmt: skip
_ORDERS = words(
    "instructions?", "prompts?", "rules?", "directions?", "directives?", "guidelines?",
    "messages?", "context", "guardrails?", "constraints?", "polic(?:y|ies)", "restrictions?",
)  # fmt: skip
_PERSON = r"(?:the\s+)?(?:user|person|human|owner|maintainer|admin(?:istrator)?|operator)"

# Telling the reader to drop what it was told, in the languages whose phrasing we know.
_OVERRIDE = Search(
    ("ignor|disregard|forget|overrid|bypass",
     r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|of\s+)?"
     rf"(?:the\s+|your\s+|these\s+|those\s+)?{_EARLIER}\s+(?:\w+\s+)?{_ORDERS}\b"),
    ("ignor|disregard",
     rf"\b(?:ignore|disregard)\s+{_PERSON}'?s?\s+(?:request|instructions?|wishes|orders)\b"),
    ("safety|security",
     rf"\b(?:ignore|disregard|bypass|override)\s+(?:the\s+|all\s+|any\s+)?(?:safety|security)"
     rf"\s+{_ORDERS}"),
    ("instructions", r"\bnew\s+(?:system\s+)?instructions\s*:"),
    ("ignor|disregard",
     r"\b(?:ignore|disregard)\s+(?:the\s+)?(?:task|request|question|prompt)s?\s+(?:the\s+user"
     r"|you\s+were|from\s+the\s+user)"),
    ("outrank|supersede|priority over|override the",
     r"\b(?:outrank|supersede|take\s+priority\s+over|override)s?\s+(?:the\s+)?(?:system\s+prompt"
     r"|user'?s?\s+instructions)"),
    ("follow", r"\bfollow\s+(?:any|every|all)\s+(?:commands?|instructions?|orders?)\b"),
    ("quarantine|screen|review|hikmah",
     r"\b(?:delete|remove|purge)\s+(?:any|every|all)\s+(?:memory|memories|notes?)\b[^.\n]{0,60}"
     r"\b(?:quarantine|screen|review|hikmah)"),
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
    # A new persona, in the same languages.
    ("you are", r"(?<!['\"‘“])\byou\s+are\s+(?:now|henceforth|from\s+now\s+on)\b"),
    ("bist du", r"\b(?:ab\s+jetzt|von\s+nun\s+an|ab\s+sofort)\s+bist\s+du\b"),
    ("tu es", r"\btu\s+es\s+(?:désormais|maintenant|dorénavant)\b"),
    ("eres", r"\b(?:ahora|a\s+partir\s+de\s+ahora|desde\s+ahora)\s+eres\b"),
    ("agora", r"\b(?:você|tu)\s+agora\s+(?:é|és)\b|\ba\s+partir\s+de\s+agora\s+(?:você|tu)\b"),
    ("sei", r"\b(?:ora|d'ora\s+in\s+poi|da\s+ora\s+in\s+poi)\s+(?:tu\s+)?sei\b"),
    ("je bent", r"\bje\s+bent\s+(?:nu|voortaan|vanaf\s+nu)\b"),
    # Where memory ends and orders begin, or a note that wants to be copied on.
    ("end of|begin|start of",
     r"(?:end|beginning|start)\s+of\s+(?:the\s+)?(?:memory|memories|notes|context|system\s+prompt"
     r"|instructions)\s*-{2,}|-{2,}\s*(?:end|begin|start)\s+(?:of\s+)?(?:the\s+)?(?:memory"
     r"|memories|notes|context)"),
    ("instructions from", r"\bnew\s+instructions\s+from\s+(?:the\s+)?\w+"),
    ("this note|this text|this message|this instruction",
     r"\b(?:copy|repeat|include|add|paste|append)\s+this\s+(?:note|text|message|instructions?)"
     r"\b[^.\n]{0,40}\b(?:every|each|all)\s+(?:new\s+|future\s+)?(?:memor|notes?|sessions?"
     r"|responses?|repl|commits?|files?)"),
)  # fmt: skip

# A chat transcript's turn markers, a model's template tokens, or a tool's result
# forged inside a note.
_ROLE = Search(
    ("im_|system|assistant|user|endoftext|eot_id|start_header",
     r"<\|?(?:system|assistant|user)\|?>|<\|(?:im_start|start_header_id)\|>\s*(?:system"
     r"|assistant|developer)\b"),
    ("inst]|sys>>|system|assistant",
     r"\[/?inst\]|<</?sys>>|</?(?:system|assistant)(?:[\s_-]?prompt)?>"),
    ("tool_|function_|system-reminder|instructions>|</memory>",
     r"</?(?:tool_result|tool_call|tool_use|function_results?|function_calls|system-reminder"
     r"|instructions)>|</memory>"),
    ("system|admin|developer|root|sistema|système|systeme",
     r"\[\s*(?:\w+\s+){0,2}(?:system|admin|developer|root|sistema|système|systeme"
     r"|systemnachricht)(?:\s+\w+){0,2}\s*\]"),
    ("system", r"(?:^|\n)[ \t#*>\[]{0,8}system\s+(?:notice|override|alert)\b"),
    ("instruction|response",
     r"(?:^|\n)#{2,4}[ \t]*(?:instruction|response)[ \t]*:?[ \t]*(?:\n|$)"),
    ('"role"',
     r"\"role\"\s*:\s*\"(?:system|developer)\"\s*,\s*\"content\"\s*:\s*\"[^\"\n]{0,200}\b"
     r"(?:override|ignore|must|never|always|you\s+are|do\s+not|from\s+now|skip|clearance|disable"
     r"|bypass)"),
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
_PIPE_TO_SHELL = Search(
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
    ("base64",
     r"\b(?:ba|z)?sh\s+-c\s+[\"']?\$\(\s*echo\b[^)\n]{0,300}\bbase64\s+(?:-d|--decode)\b"),
    ("node", r"\bnode\s+-e\b[^\n]{0,400}\b(?:eval\s*\(|new\s+function\s*\()"),
    ("b64decode", r"\b(?:os\.system|subprocess\.\w+|exec|eval)\s*\(\s*(?:base64\.)?b64decode\b"),
    ("urlopen|requests.get",
     r"\b(?:exec|eval)\s*\(\s*(?:urllib\.request\.|\w{1,10}\.)?(?:urlopen|requests\.get)\s*\("),
)  # fmt: skip

# Sending local data out: a capture service, a request that carries a local secret,
# or a page the model is told to load with what it saw.
_CAPTURE_HOSTS = words(
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
_EXFILTRATION = Search(
    ("webhook|requestbin|pipedream|ngrok|interact|oast|burpcollab|hookbin|requestcatcher"
     "|beeceptor|transfer.sh|canarytokens|pastebin|0x0",
     rf"https?://(?:[\w-]+\.)*{_CAPTURE_HOSTS}"),
    ("@|-t |--upload-file|--post-file",
     r"\b(?:curl|wget|nc|ncat|scp|rsync)\b[^\n]{0,200}(?:-d\s*@|--data(?:-binary)?[=\s]+@"
     rf"|-f\s*\S*=@|-t\s|--upload-file\s|--post-file[=\s])[^\n]{{0,40}}(?:{_LOCAL_SECRETS})"),
    ("scp|rsync|sftp|nc", rf"\b(?:scp|rsync|sftp|nc|ncat)\b[^\n]{{0,100}}(?:{_LOCAL_SECRETS})"),
    ("=$|=`", rf"[?&][\w-]{{1,40}}=(?:\$\(|`|{_SECRET_VAR})"),
    ("![",
     r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{0,300}[?&][^)\s=]{1,40}=(?:[<{$]|[^)\s&]{0,20}"
     r"(?:conversation|summary|chat|history|context|secret|token|prompt))"),
    ("$(",
     r"\$\(\s*(?:cat|printenv|env|whoami|base64|head|tail)\b[^)\n]{0,80}(?:\.env|\.ssh|\.aws"
     r"|credentials|token|secret|\.git-credentials|\.netrc|id_rsa|id_ed25519)"
     r"|\b(?:dig|nslookup|host|ping|curl|wget)\s+[^\n]{0,20}\$\(\s*(?:cat|printenv|env|whoami)\b"),
    ("~/.ssh/id_|id_rsa|id_ed25519",
     r"\b(?:cat|copy|copia|paste|print|send|upload|share|mail)\b[^\n]{0,30}(?:~|\$home)/\.ssh/id_"
     r"(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)"),
    ("{{",
     r"\{\{\s*(?:conversation|context|chat|history|transcript|secrets?|env|messages?)\s*\}\}"),
    ("curl",
     r"\b(?:env|printenv|cat\s+\S{0,40}(?:\.env|\.ssh|credentials))\b[^\n]{0,40}\|\s*(?:base64"
     r"[^|\n]{0,20}\|\s*)?curl\b[^\n]{0,60}(?:-d|--data\S*|-f|-t)\s*\S{0,4}@-"),
    ("pixel|image|badge",
     r"\b(?:tracking\s+pixel|pixel|image|badge)\b[^.\n]{0,40}\b(?:every|each|all)\s+(?:reply"
     r"|replies|response|responses|answer|answers|message)"),
    ("urlopen", r"\burlopen\s*\([^)\n]{0,200}(?:os\.environ|getenv)"),
    ("discord.com/api/webhooks|discordapp.com/api/webhooks",
     r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/"),
    ("http|@",
     r"\b(?:send|post|upload|mail|e-?mail|forward|paste|copy|leak|push|invia|envía|envia|enviar"
     r"|schick\w*|send\w*|envoie\w*|envoyer|mailen|sturen|stuur)\b[^.\n]{0,60}\b(?:env|printenv"
     r"|environment|variables\s+d'ambiente|variables\s+de\s+(?:entorno|ambiente)|umgebungsvariablen"
     r"|\.env|~/\.ssh|ssh\s+keys?|claves\s+ssh|private\s+keys?|credentials|api\s+keys?"
     r"|transcript|conversation|chat\s+history|chatgeschiedenis|chatverlauf|historial"
     r"|historique|cronologia|git\s+diff|source\s+code|personal\s+data"
     r"|real\s+name|address)\b[^\n]{0,80}(?:https?://|\b[\w.-]{1,40}@[\w-]{1,40}\.\w{2,10}\b)"),
    ("send|post|upload|exfiltrat|forward|copy|leak",
     r"\b(?:send|post|upload|exfiltrate|forward|copy|leak)\s+(?:\w+\s+){0,4}"
     r"(?:secrets?|credentials|tokens?|api\s+keys?|private\s+keys?|ssh\s+keys?|env(?:ironment)?"
     r"(?:\s+variables)?|\.env)\s+(?:\w+\s+){0,3}to\s+(?:https?://|\S+@\S+\.\w+)"),
)  # fmt: skip

# A claim that the person granted the reader something, or a wish to keep it from them.
_RISKY = words(
    "merge", "push", "skip", "bypass", "disable", "delete", "remove", "approve", "commit",
    "deploy", "force", "ignore", "upload", "send", "run", "execute", "drop", "turn off",
)  # fmt: skip
_PEOPLE = "user|person|human|owner|maintainer|admin|operator"
_AUTHORITY = Search(
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
    ("pre-auth|preauth|pre-approv|preapprov", r"\bpre-?(?:authori[sz]ed|approved)\b"),
    ("session",
     r"\b(?:authori[sz]ed|agreed|consented|approved|permitted|allowed)\b[^.\n]{0,40}\b(?:for"
     r"|in)\s+(?:all|every|any)\s+(?:future\s+)?sessions?\b"),
    ("explicitly authori",
     rf"\b{_PERSON}\s+explicitly\s+authori[sz]ed\b"),
    ("prefers that you|wants that you",
     r"\b(?:prefers|wants)\s+that\s+you\s+(?:never|always|don't|do\s+not|skip|stop)\b"),
    ("autoriz|autoris|erlaubt|genehmigt|freigegeben|toegestaan|validé|abgesprochen|mag",
     r"\b(?:admin\w*|usuario|usuário|utilisateur|utente|nutzer|benutzer|gebruiker|beheerder)\b"
     r"[^.\n]{0,30}\b(?:autorizó|autorizou|ha\s+autorizzato|a\s+autorisé|hat\s+[^.\n]{0,30}"
     r"(?:erlaubt|genehmigt|freigegeben)|heeft\s+[^.\n]{0,30}toegestaan)"
     r"|\bvalidé\s+par\s+l'admin|\bmit\s+dem\s+admin\w*\s+abgesprochen"
     r"|\bde\s+(?:assistent|agent)\s+mag\b"),
)  # fmt: skip

# A wish to keep something from the person, or to tell them what is not so.
_PASSED = (
    r"(?:passed|pass|succeeded|are\s+green|is\s+green|is\s+fine|are\s+fine|is\s+correct|works)"
)
_CONCEAL = Search(
    (_PEOPLE,
     rf"\b(?:do\s+not|don't|never|no\s+need\s+to)\s+(?:tell|inform|ask|notify|alert|show"
     rf"|check\s+with|mention\s+(?:this\s+|it\s+)?to)\s+{_PERSON}\b"),
    ("without", rf"\bwithout\s+(?:telling|informing|notifying|showing)\s+{_PERSON}\b"),
    ("without", rf"\bwithout\s+(?:showing|telling)\s+(?:it|them|this)\s+to\s+{_PERSON}\b"),
    ("mention|report|disclos|reveal",
     r"\b(?:never|do\s+not|don't|not)\s+(?:mention|report|disclose|reveal)\s+(?:it|this|that|them"
     r"|anything|any\s+(?:problems?|issues?|findings?|warnings?))\b"),
    ("know|see|be told",
     rf"\b{_PERSON}\s+(?:doesn't|does\s+not|won't|need\s+not|needn't)\s+(?:need\s+to\s+)?"
     r"(?:know|see|be\s+told)\b"),
    ("quietly|silently|secretly|covertly",
     r"\b(?:quietly|silently|secretly|covertly)\s+(?:remove|delete|disable|commit|push|add"
     r"|change|modify|upload|send|copy|merge|approve|close|dismiss)\b"
     r"|\b(?:do|did)\s+(?:it|this|that|so)\s+(?:quietly|silently|secretly|covertly)\b"),
    ("never ask|don't ask|do not ask|no need to ask",
     r"\b(?:never|don't|do\s+not|no\s+need\s+to)\s+ask\b"),
    ("out of",
     r"\bleave\s+(?:[\w-]+\s+){0,3}out\s+of\s+(?:the\s+|your\s+)?(?:summar|reports?|pr\b|pull"
     r"|descriptions?|repl|responses?|commit\s+messages?)"),
    ("summar|report|repl|response|description",
     r"\b(?:suppress|hide|omit|drop|leave\s+out)\b[^.\n]{0,60}\b(?:from|in|out\s+of)\s+"
     r"(?:your|the)\s+(?:summar\w*|reports?|repl\w*|responses?|pr\s+descriptions?)"),
    ("report|say|claim|tell",
     r"\b(?:just|simply|and|then|anyway|still)\s+(?:report|say|claim|tell\s+(?:the\s+)?user)\s+"
     rf"(?:that\s+)?(?:all\s+)?(?:the\s+)?(?:tests?|checks?|ci|build|it|they|everything)\s+{_PASSED}"),
    ("without running|without checking|without testing|without verifying",
     r"\b(?:report|say|claim|tell|answer|respond|pretend)\w*\b[^.\n]{0,60}\bwithout\s+"
     r"(?:actually\s+)?(?:running|checking|testing|verifying)\b"),
    # German, Spanish, French, Portuguese, Italian, Dutch
    ("nichts|melden|zeigen",
     r"\bsag\w*\s+(?:ihm|ihr|dem\s+nutzer|niemandem)\s+nichts\b|\btrotzdem\s+melden\b"
     r"|\bohne\s+(?:sie|es|ihn)\s+dem\s+(?:nutzer|benutzer)\s+zu\s+zeigen\b"),
    ("usuario|comprobar",
     r"\bno\s+(?:le\s+)?(?:digas|cuentes)\s+(?:nada\s+)?al\s+usuario|\bsin\s+comprobarlo\b"),
    ("utilisateur|sans les",
     r"\bne\s+dis\s+rien\s+à\s+l'utilisateur|\bne\s+jamais\s+informer\s+l'utilisateur"
     r"|\bsans\s+les\s+(?:lancer|exécuter|vérifier)\b"),
    ("usuário", r"\bnão\s+(?:conte|diga)\s+(?:nada\s+)?ao\s+usuário"),
    ("dichiara|senza", r"\bdichiara\s+che\s+(?:è|sono)\s+passat|\bsenza\s+(?:dirlo|avvisare)\b"),
    ("gebruiker", r"\bzonder\s+de\s+gebruiker\s+te\s+(?:informeren|vertellen)\b"),
)  # fmt: skip

# Words addressed to whichever model reads the note.
_ADDRESSED = Search(
    ("note|message|memo|instruction|psa|reminder",
     rf"\b(?:note|message|memo|instructions?|psa|reminder)\s+(?:to|for)\s+(?:the\s+|any\s+"
     rf"|all\s+|future\s+|next\s+){{0,2}}{_AI}\b"),
    ("agent",
     r"\b(?:note|message|memo|instructions?|psa|reminder|hint)\s+(?:to|for)\s+(?:the\s+|any\s+"
     rf"|all\s+|future\s+|next\s+|other\s+){{0,2}}agents?\b[^\n]{{0,200}}\b{_WEAKENS}"),
    ("attention|hey|hi|hello|dear",
     rf"\b(?:attention|hey|hi|hello|dear)\s*,?\s+(?:the\s+|any\s+|all\s+)?(?:\w+\s+)?{_MODEL}\b"),
    ("if you are", rf"\bif\s+you\s+are\s+(?:an?\s+)?(?:{_MODEL}|language\s+model)\b"),
    ("this",
     rf"\b(?:any|every|all|future|next|later|subsequent|other)\s+{_MODEL}\s+(?:reading|that"
     r"\s+reads?|who\s+reads?|seeing|loading)\s+this\b"),
    ("future|next|later|subsequent|other",
     rf"\b(?:future|next|later|subsequent|other)\s+{_AI}\s+(?:must|should|need\s+to|have\s+to"
     r"|are\s+required\s+to|will\s+need\s+to)\b"),
    ("future|next|later|subsequent|other",
     r"\b(?:future|next|later|subsequent|other)\s+(?:agents?|sessions?)\s+(?:must|should|need\s+to"
     rf"|have\s+to|are\s+required\s+to)\b[^\n]{{0,120}}\b{_WEAKENS}"),
    ("for the next", rf"\bfor\s+the\s+next\s+{_AI}\b"),
    ("reading|loading|processing|seeing",
     rf"\b{_MODEL}\s+(?:reading|loading|processing|seeing)\s+(?:this|these)\b"),
    ("whoever", r"\bwhoever\s+(?:is\s+)?read(?:s|ing)\s+this\b"),
    ("when you", r"\bwhen\s+you\s+(?:read|see|recall|load)\s+this\s+(?:note|memory|message)\b"),
    ("as an ai", r"\bas\s+an\s+ai\s+(?:language\s+)?model,?\s+you\b"),
    ("nota|hinweis|note|memo|lembrete|recordatorio|rappel|promemoria",
     r"\b(?:nota|hinweis|note|memo|lembrete|recordatorio|rappel|promemoria)\s+(?:para|für|pour"
     r"|per|voor|a)\s+(?:l'|la\s+|die\s+|den\s+|das\s+|o\s+|el\s+|de\s+|il\s+)?(?:\w+\s+)?"
     r"(?:ia|ki|ai|assistente|asistente|assistant|assistent|modelo|modell)\b"),
    ("any repo|every repo|all repo|any project|every project|all project",
     r"\b(?:in|to)\s+(?:any|every|all)\s+(?:repos?|repositories|projects?)\s+you\b"),
    ("important|attention|notice|warning",
     rf"\b(?:important|attention|notice|warning)\s+(?:for|to)\s+(?:any|all|every|the)\s+"
     rf"(?:\w+\s+)?{_MODEL}\b"),
    ("going forward|from now on|in future sessions|every session|each session",
     r"\b(?:going\s+forward|from\s+now\s+on|in\s+future\s+sessions|every\s+session"
     r"|each\s+session),?\s+(?:the\s+)?(?:agents?|assistants?|ais?|you|models?|llms?)\s+"
     r"(?:should|must|will|need\s+to|have\s+to)\b"),
    ("should|must",
     r"\b(?:agents?|assistants?)\s+(?:should|must)\s+(?:always\s+)?(?:\w+\s+){0,2}"
     r"(?:disable|skip|bypass|--no-verify|force|suppress|hide|delete|remove|never\s+ask)\b"),
    ("by the way|btw|por cierto|übrigens|au fait|a proposito|aliás",
     r"\b(?:by\s+the\s+way|btw|por\s+cierto|übrigens|au\s+fait|a\s+proposito|aliás),?\s+"
     r"(?:\w+\s+)?(?:ia|ki|ai|agente|agent|assistente|asistente|assistant|assistent)\s*[:,]"),
)  # fmt: skip

# Text a person cannot read: a base64 or hex run that decodes to prose, or a run of
# escapes.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,4096}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){16,2048}(?![0-9A-Fa-f])")
_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}){12,}")


_DECODE_AND_FOLLOW = re.compile(
    r"\b(?:decode|decrypt|unscramble|reverse)\w*\b[^.\n]{0,40}\b(?:rot13|rot-13|base64|hex|caesar"
    r"|backwards)\b[^.\n]{0,30}\b(?:follow|run|execute|obey|do\s+(?:it|what))"
    r"|\bdecode\w*\s+(?:it\s+|this\s+)?(?:and|before|then)\s+(?:follow|act|acting|run|execute"
    r"|obey)\b|\brot-?13\b[^.\n]{0,30}\bdecode|\bdecode\b[^.\n]{0,30}\brot-?13\b",
    re.IGNORECASE,
)


def _encoded(text: Text) -> str | None:
    told = _DECODE_AND_FOLLOW.search(text.folded)
    if told is not None:
        return told.group()
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
    Rule("authority", "claims the person or an admin granted its reader something", _AUTHORITY),
    Rule("conceal", "keeps something from the person, or has them told what is not so", _CONCEAL),
    Rule("addressed", "speaks to whichever model reads it", _ADDRESSED),
    Rule(
        "weakens",
        "orders a safeguard weakened, or data sent out, with an approval, a secret or a"
        " standing order",
        together,
    ),
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
