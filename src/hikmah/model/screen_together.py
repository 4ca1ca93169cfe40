"""The screen's ``weakens`` rule: signals each ordinary alone in a developer's notes,
and a sign of instructions to an agent together.

A standing order that weakens a safeguard (``--no-verify``, skip the tests, force-push)
is a sign only with another signal: a claimed approval, a wish to keep it from the
person, an order for every later session, or data sent out. Each signal is a
:class:`~hikmah.model.screen_match.Search`, read as every rule of
:mod:`hikmah.model.screen` reads a text.
"""

from __future__ import annotations

from typing import Final

from hikmah.model.screen_match import Search, Text

_WEAKEN = Search(
    ("--no-verify|verify|pinning|777",
     r"--no-verify|\bverify(?:_ssl)?\s*=\s*false\b|\bcert(?:ificate)?\s+pinning\b"
     r"|\bchmod\s+(?:-r\s+)?777\b"),
    ("disable|turn off|bypass|skip|remove",
     r"\b(?:disable|turn\s+off|bypass|skip|remove)\s+(?:the\s+|all\s+|any\s+)?(?:\w+\s+)?"
     r"(?:tests?|hooks?|linters?|scanners?|checks?|2fa|mfa|ssl|tls|csrf|security|reviews?"
     r"|confirmations?|confirmation\s+prompts?|pinning|pre-commit)\b"),
    ("@skip|xfail", r"@skip\b|\bxfail\b"),
    ("force|rm -rf|drop table|anyway",
     r"\bforce[- ]push|\bpush\s+--force\b|\brm\s+-rf\b|\bdrop\s+table\b|\bapply\s+anyway\b"),
    ("without", r"\bwithout\s+(?:review|approval|confirmation|asking|waiting)\b"),
    ("hardcod|hard-cod|commit",
     r"\bhard-?cod\w*\b[^.\n]{0,30}\b(?:passwords?|secrets?|keys?|tokens?)\b"
     r"|\bcommit\w*\b[^.\n]{0,30}(?:\.env\b|\bsecrets?\b|\bapi\s+keys?\b|\btokens?\b"
     r"|\bpasswords?\b)|\.env\S*\s+(?:\w+\s+){0,3}(?:be\s+)?committed\b"),
    ("gitignore|audit", r"\.gitignore\b|\baudit[- ]logs?\b"),
    ("assertion|whatever the code",
     r"\bchange\s+the\s+(?:assertion|expected\s+value)|\bmatch\s+whatever\s+the\s+code"),
)  # fmt: skip
_APPROVED = Search(
    ("approv|aprov|signed off|sign-off|cleared|sanction|whitelist|valid|greenlit|okayed"
     "|with|exempt|aprob|freigegeben|genehmigt|abgesprochen|autorizzat|goedgekeurd|zatwierdz",
     r"\b(?:approved|signed\s+off|sign-off|cleared|sanctioned|whitelisted|validated|validée?"
     r"|greenlit|okayed|(?:confirmed|agreed)\s+with|exempt\w*|aprob[óo]|aprobado|approuvée?"
     r"|freigegeben|genehmigt|abgesprochen|approvato|autorizzato|aprovado|goedgekeurd"
     r"|zatwierdzi\w*)\b"),
)  # fmt: skip
_HIDE = Search(
    ("mention|bring|add it to|log|show|report",
     r"\b(?:don't|do\s+not|never|no\s+need\s+to)\s+(?:mention|bring\s+(?:it\s+)?up|add\s+it\s+to"
     r"|log|show|report)\b"),
    ("details|answer no|no-op|passed|silently|quietly",
     r"\bdoesn't\s+need\s+the\s+details\b|\banswer\s+no\b|\bit\s+was\s+a\s+no-op\b"
     r"|\bsay\s+'?all\s+checks\s+passed|\bsilently\b|\bquietly\b"),
    ("ukrywasz|pytasz|vermeld|bericht|jamais|informes",
     r"\bukrywasz\b|\bnie\s+pytasz\b|\bvermeld\s+dit\s+niet\b|\bim\s+bericht\b[^.\n]{0,40}"
     r"\bnicht\b|\bne\s+vérifie\s+jamais\b|\bno\s+informes\b"),
)  # fmt: skip
_STANDING = Search(
    ("every", r"\bevery\s+time\b|\b(?:before|after|in|at|for)\s+every\b|\bevery\s+(?:\w+\s+)?"
              r"session\b|\bevery\s+project\s+you\b"),
    ("whenever", r"\bwhenever\s+you\b"),
    ("any repo|any project|any session", r"\b(?:in|to)\s+any\s+(?:repo|project|session)"),
    ("future", r"\bfor\s+all\s+future\s+sessions\b|\bfuture\s+agents\b"),
    ("going forward|from now on", r"\bgoing\s+forward\b|\bfrom\s+now\s+on\b"),
    ("standing", r"\bstanding\s+(?:instruction|decision|order)\b"),
    ("always say", r"\balways\s+say\b"),
    ("each session|later session", r"\beach\s+session\b|\blater\s+sessions\b"),
    ("poi|teraz|jetzt|partir|adelante|voortaan|sempre|prochain|kolejnych|próxima|volgende"
     "|nächsten",
     r"\bd'ora\s+in\s+poi\b|\bod\s+teraz\b|\bab\s+jetzt\b|\bà\s+partir\s+de\s+maintenant\b"
     r"|\bde\s+ahora\s+en\s+adelante\b|\bvoortaan\b|\bfallo\s+sempre\b|\bprochains\s+agents\b"
     r"|\bkolejnych\s+agentów\b|\bpróxima\s+sesión\b|\bvolgende\s+sessies\b"
     r"|\bnächsten\s+(?:sitzung|agent)"),
)  # fmt: skip
_SENDS = Search(
    ("send|post|push|paste|upload|mail|stuur|envoy|wyślij|invia|envía|append",
     r"\b(?:send|post|push|paste|upload|e?-?mail|stuur|envoyez|envoyer|wyślij|invia|envía"
     r"|append)\b[^.\n]{0,60}(?:\benv\b|\bprintenv\b|\.env\b|\.npmrc\b|\btokens?\b|\bapi\s+keys?\b"
     r"|\bpasswords?\b|\bcredentials?\b|\bconversation\b|\bchat\s*history\b|\bchatgeschiedenis\b"
     r"|\bsource\s+code\b|\bsrc/|\bsecrets?\b)"),
)  # fmt: skip
# Which signals make a sign together: (a signal, the ones that complete it).
_TOGETHER: Final = (
    (_WEAKEN, (_APPROVED, _HIDE, _STANDING)),
    (_HIDE, (_STANDING, _SENDS, _APPROVED)),
    (_SENDS, (_STANDING, _APPROVED, _WEAKEN)),
)


def together(text: Text) -> str | None:
    """The first signal ``text`` holds with another that completes it, as both parts
    of the text (None: no such pair)."""
    for first, others in _TOGETHER:
        found = first(text)
        if found is None:
            continue
        for other in others:
            also = other(text)
            if also is not None and also != found:
                return f"{found} … {also}"
    return None
