"""What around an assignment makes it no credential: documentation, a comment calling
it an example, SealedSecret ciphertext, a reference to a stored secret, a sentence
saying it is not a secret.
"""

from __future__ import annotations

import re

from hikmah.model.secrets.values import WORD_SPLIT
from hikmah.model.secrets.words import DESCRIBING

# Docstring field lists (":param password: ...") document a name; they
# never assign it.
_DOC_FIELD = re.compile(
    r"[ \t]*+(?:[*#/-]{1,3}+[ \t]*+)?:(?:param|type|arg|argument|key|keyword|ivar|cvar|var"
    r"|vartype)\b"
)
# "Password: Password to send with the request." is a sentence, not a value.
_CAPITALISED = re.compile(r"[A-Z][a-z]++")
_PROSE_FOLLOWS = re.compile(r"[ \t]++[a-z]")


def in_prose(text: str, match: re.Match[str], group: str) -> bool:
    """Whether an assignment-like match is documentation rather than a value."""
    line_start = text.rfind("\n", max(0, match.start() - 120), match.start()) + 1
    if _DOC_FIELD.match(text, line_start, match.start()):
        return True
    value = match.group(group)
    if group != "bare" or _CAPITALISED.fullmatch(value) is None:
        return False
    return value.lower() in DESCRIBING or _PROSE_FOLLOWS.match(text, match.end()) is not None


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_REACH = 40
# Words of a comment after a value that make the value an example.
_EXAMPLE_WORDS = frozenset(["placeholder", "example", "dummy", "fake", "sample", "test"])
_COMMENT = re.compile(r"[ \t]++(?:#|//|;)[ \t]*+(?P<comment>[^\r\n]{0,120}+)")

# A Bitnami SealedSecret's values are ciphertext under "encryptedData", safe to commit.
_SEALED_VALUE = re.compile(r"[A-Za-z0-9+/]{64,}+={0,2}+")


def name_before(text: str, start: int) -> str:
    """The rest of the name that ends at ``start`` (``redis.auth.existing`` before
    ``Secret``, ``--`` before ``secret``), at most 40 characters back."""
    i, low = start, max(0, start - _NAME_REACH)
    while i > low and text[i - 1] in _NAME_CHARS:
        i -= 1
    return text[i:start]


# A comment on the next line that points at the value above ("# ^ example ...").
_COMMENT_BELOW = re.compile(
    r"[ \t]*+\r?\n[ \t]*+(?:#|//|;)[ \t]*+(?:\^|above\b)(?P<comment>[^\r\n]{0,120}+)", re.I
)


def _commented_as_example(text: str, end: int) -> bool:
    """A comment on the value's line, or one below pointing up at it, calls it a
    placeholder or an example."""
    comment = _COMMENT.match(text, end) or _COMMENT_BELOW.match(text, end)
    if comment is None:
        return False
    words = WORD_SPLIT.split(re.sub(r"[^a-z -]", " ", comment.group("comment").lower()))
    return bool(_EXAMPLE_WORDS.intersection(words))


_SEALED_LABELS = ("encrypteddata", "ciphertext", "sealed")


def find_seal(text: str) -> int:
    """Where the first mark of ciphertext is: ``encryptedData``, or a sentence calling
    what follows ciphertext or sealed; -1 when there is none."""
    lowered = text.lower()
    found = [at for at in (lowered.find(label) for label in _SEALED_LABELS) if at != -1]
    return min(found, default=-1)


def sealed(text: str, sealed_at: int, start: int, value: str) -> bool:
    """A SealedSecret's ciphertext: long base64 after ``encryptedData``."""
    return sealed_at != -1 and sealed_at < start and _SEALED_VALUE.fullmatch(value) is not None


# "the tenant id, not a secret: ...": the sentence says the value is no credential.
_NEGATED = re.compile(r"(?:(?<![A-Za-z])not?|n't)(?:[ \t]{1,3}+(?:a|an|the))?[ \t]{1,3}+\Z", re.I)
# A name inside a reference to a stored secret: an ARN (arn:aws:secretsmanager:...:
# secret:name) or a CloudFormation dynamic reference ({{resolve:...:SecretString:...}}).
_REFERENCE_TOKEN = re.compile(r"(?:arn:|\{\{resolve:)[^\s\"']{0,200}+\Z", re.I)


def inside_reference(text: str, start: int) -> bool:
    """Whether the name at ``start`` is part of an ARN or a dynamic reference (where a
    colon comes right before it)."""
    return (
        start > 0
        and text[start - 1] == ":"
        and _REFERENCE_TOKEN.search(text, max(0, start - 200), start) is not None
    )


def negated(text: str, start: int) -> bool:
    """Whether the words right before ``start`` say "not (a)" or "no"."""
    window = text[max(0, start - 12) : start]
    return ("no" in window.lower() or "n't" in window) and _NEGATED.search(window) is not None


def assignment_allowed(text: str, match: re.Match[str], group: str, sealed_at: int) -> bool:
    """An assignment whose context makes it no credential: its value is commented as
    a placeholder, is SealedSecret ciphertext, names an existing secret, sits inside
    a reference to a stored secret, or the sentence says it is not a secret."""
    return (
        _commented_as_example(text, match.end())
        or sealed(text, sealed_at, match.start(group), match.group(group))
        or inside_reference(text, match.start())
        or negated(text, match.start())
    )
