"""The credential detector: refuse to persist secrets, withhold them in previews.

Every field a writer controls passes through :func:`check_fields` before a
write, and ledger reports show previews through :func:`redact`. This is a
guard against secrets that merely appeared in a conversation, not a DLP
system: it knows well-known credential shapes and ``NAME=value`` assignments.

A text holds a secret when one of these matches:

* A well-known shape: PEM private key headers, AWS access key ids, GitHub,
  GitLab, Anthropic, OpenAI, Stripe, Slack, Google and ``apikey_<hex>_<hex>``
  keys, JSON Web Tokens and passwords in URLs (``scheme://user:pass@host``).
  Beyond the reference list we also recognise a few shapes that are as
  unambiguous: npm, PyPI, Hugging Face, SendGrid, DigitalOcean, Stripe
  webhook and Google OAuth client secrets, Slack webhook URLs, a ``Bearer``
  token (20+ characters with a letter and a digit, so prose about "the bearer
  of ..." passes) and an ``Authorization:`` header with a Basic, Bearer or
  Token credential.
* An assignment: a name containing password, passwd, passphrase, secret,
  api key, api token, access token, auth token, refresh token or private key
  (any case, any separator: ``DB_PASSWORD``, ``apiKey``, ``x-api-key``,
  ``Private key``), then ``:``, ``=``, ``:=``, ``=>`` or ``==``, then a value
  of at least 8 characters, possibly quoted.

An assignment whose value describes the secret instead of being it is
allowed:

* a reference: starts with ``$ < % { *``, ``vault:``, ``env:``,
  ``redacted``, ``[redacted`` or ``[withheld`` (so redacted text stays
  clean), or with ``keyring:``, ``arn:``, ``ssm:``, ``sops:``;
* a description: a chain of lowercase words joined by ``-`` or ``_`` (or
  spaces, inside quotes) that contains a describing word (``server-only``,
  ``hashed_with_argon2id``), a single describing word (``placeholder``), or
  words ending in an ``-ed`` word and a date (``rotated-2026-09``); in both
  chain forms the first word is letters only, at least two of them, so
  ``x_rotated-2026-09`` and ``p_server_only`` are credentials;
* an environment variable name (``TYPESAFE_API_KEY``, ``_PRIVATE_KEY_TYPES``);
* something that is plainly not a credential: a file path (``/run/secrets/db``,
  ``~/.pgpass``), a URL (its password, if any, is caught by the URL shape),
  an ISO date, a code expression (``os.environ["X"]``, ``getpass()``,
  ``settings.SECRET_KEY``) or a variable named after a credential
  (``self.password = password``, ``key_password=key_password``);
* an assignment to a name that is about the secret rather than the secret
  itself (``secretName``, ``PASSWORD_FILE``, ``private_key_path``,
  ``password_min_length``);
* documentation: a docstring field (``:param password: ...``) or a sentence
  (``password: Password to send with the request.``).

A value still counts when a word in it ends in a digit (``princess1``,
``summer-2024``, ``ADMIN_PASS1``), when it is any other single word
(``sunshine``, ``mypassword``), or when it is a word chain with no
describing word (``correct-horse-battery-staple``). So ``password = user_pass``
in code is refused like ``password = admin_pass``: the two cannot be told
apart.

Every pattern runs in linear time: quantifiers are bounded or possessive, no
quantified group can match the same text two ways, and each unbounded token
pattern starts with a lookbehind that excludes its own alphabet, so a run of
token characters is scanned from its first character only.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hikmah.errors import SecretDetected

__all__ = ["check_fields", "find_secret", "preview", "redact"]

_WITHHELD = "[withheld]"
# The text around a withheld value can read as a new credential once the marker is in
# (in s://PASSWORD=[withheld];:s@D the marker sits in a URL's user part), so redaction
# runs again on its own output; a text still flagged after these passes goes whole.
_REDACT_PASSES = 3
PREVIEW_CHARS = 80
# Control, format (bidi overrides among them) and line-break characters could
# rearrange or split a preview on a terminal; a preview shows them as spaces.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})

_MIN_VALUE = 8

_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")


def _has_digit(text: str) -> bool:
    return _DIGIT.search(text) is not None


def _bearer_like(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return _has_digit(token) and (_LOWER.search(token) or _UPPER.search(token)) is not None


def _header_credential(match: re.Match[str]) -> bool:
    # Base64 of user:pass nearly always has a digit, padding or mixed case;
    # "Authorization: Basic credentials" in prose has none of them.
    token = match.group("secret")
    mixed = _LOWER.search(token) is not None and _UPPER.search(token) is not None
    return _has_digit(token) or "=" in token or mixed


def _secret_has_digit(match: re.Match[str]) -> bool:
    return _has_digit(match.group("secret"))


def _mixed_case(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return _LOWER.search(token) is not None and _UPPER.search(token) is not None


def _url_password(match: re.Match[str]) -> bool:
    return not _is_reference(match.group("secret"))


@dataclass(frozen=True, slots=True)
class _Shape:
    """A well-known credential shape.

    Attributes:
        label: What the refusal calls it.
        pattern: Finds candidates; a group named ``secret``, when present, is
            the span :func:`redact` withholds (otherwise the whole match).
        accept: Further test of a candidate the pattern alone cannot express.
    """

    label: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None


def _shape(
    label: str,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
    flags: int = 0,
) -> _Shape:
    return _Shape(label, re.compile(pattern, flags), accept)


_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")

# Order matters only for the label: the more specific shape goes first
# (sk-ant- before the generic OpenAI sk-).
_PEM = _Shape("private key", _PEM_BEGIN)
_SHAPES: tuple[_Shape, ...] = (
    _PEM,
    _shape("AWS access key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _shape("GitHub token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+"),
    _shape("GitHub token", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}+"),
    _shape("GitLab token", r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}+"),
    _shape("Anthropic API key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}+"),
    _shape(
        "OpenAI API key",
        r"(?<![A-Za-z0-9_-])sk-(?:proj-)?(?P<secret>[A-Za-z0-9_-]{32,}+)",
        _secret_has_digit,
    ),
    _shape("Stripe key", r"(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{16,}+"),
    _shape("Stripe webhook secret", r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9]{24,}+"),
    _shape("Slack token", r"(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}+"),
    _shape(
        "Slack webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9]{1,64}+/[A-Za-z0-9]{1,64}+"
        r"/[A-Za-z0-9]{16,}+",
    ),
    _shape("Google API key", r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    _shape("Google OAuth client secret", r"(?<![A-Za-z0-9_-])GOCSPX-[A-Za-z0-9_-]{28,}+"),
    _shape("API key", r"(?<![A-Za-z0-9])apikey_[0-9a-fA-F]{32,}+_[0-9a-fA-F]{32,}+"),
    _shape("npm token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _shape("PyPI token", r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}+"),
    # Real Hugging Face tokens mix cases; a long snake_case identifier does not.
    _shape(
        "Hugging Face token",
        r"(?<![A-Za-z0-9_])hf_(?P<secret>[A-Za-z0-9]{34,}+)",
        _mixed_case,
    ),
    _shape("SendGrid key", r"(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _shape("DigitalOcean token", r"(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}"),
    _shape(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+",
    ),
    # The user part stops at ':' and the password at '@', so both can be
    # possessive; an empty password (redis://:@host) is no password.
    _shape(
        "password in URL",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s/?#@:]{0,256}+"
        r":(?P<secret>[^\s/?#@]{1,256}+)@(?=[A-Za-z0-9\[])",
        _url_password,
    ),
    _shape(
        "authorization header",
        r"authorization[\"']?[ \t]{0,5}+[:=][ \t]{0,5}+[\"']?(?:basic|bearer|token)[ \t]{1,5}+"
        r"(?P<secret>[A-Za-z0-9._~+/-]{8,1024}+=*+)",
        _header_credential,
        re.IGNORECASE | re.ASCII,
    ),
    _shape(
        "bearer token",
        r"(?<![A-Za-z0-9_-])bearer[ \t]{1,5}+(?P<secret>[A-Za-z0-9._~+/-]{20,1024}+=*+)",
        _bearer_like,
        re.IGNORECASE | re.ASCII,
    ),
)

# Values are capped at 256 characters: a credential is never longer, and the
# cap keeps the work per candidate constant however long the input runs on.
_ASSIGNMENT = re.compile(
    r"(?P<kw>pass(?:word|wd|phrase)|secret|api[ ._-]?(?:key|token)"
    r"|(?:access|auth|refresh)[ ._-]?token|private[ ._-]?key)"
    # The rest of the name (_FILE, Name, _v2) and what closes it: a quote, a
    # bracket (config["password"]), Markdown bold (**Password**:) or the
    # backslash of escaped JSON ({\"password\": \"...\"}).
    r"(?P<tail>[A-Za-z0-9_.-]{0,40}+)[\\\"'`\]*]{0,4}+[ \t]{0,5}+"
    r"(?::=|=>|==|[:=])[ \t]{0,5}+(?:\*\*)?[ \t]{0,5}+"
    r"\\?(?:\"(?P<dq>[^\"\r\n]{1,256}+)\"|'(?P<sq>[^'\r\n]{1,256}+)'|`(?P<bq>[^`\r\n]{1,256}+)`"
    r"|[\"'`]?(?P<bare>[^\s\"'`,;&)\]}]{1,256}+))",
    re.IGNORECASE | re.ASCII,
)

# Keyed by the keyword's first three letters, which tell every keyword apart.
# The patterns are ASCII-only so that case folding cannot match a keyword
# spelled with look-alikes (the long s, the Kelvin sign) that miss this table.
_KIND_BY_KEYWORD = {
    "pas": "password",
    "sec": "secret",
    "api": "API key",
    "acc": "access token",
    "aut": "auth token",
    "ref": "refresh token",
    "pri": "private key",
}

# Names that talk about the secret: where it lives, what it is called, how
# long it must be. Their values are metadata, not the credential.
_METADATA_SUFFIXES = (
    "name",
    "ref",
    "path",
    "file",
    "url",
    "uri",
    "length",
    "len",
    "policy",
)

_DESCRIBING = frozenset(
    [
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "of",
        "on",
        "only",
        "via",
        "with",
        "without",
        "not",
        "never",
        "no",
        "see",
        "set",
        "stored",
        "hashed",
        "hash",
        "encrypted",
        "env",
        "environment",
        "vault",
        "kms",
        "managed",
        "manager",
        "rotated",
        "rotation",
        "redacted",
        "masked",
        "configured",
        "mounted",
        "provided",
        "loaded",
        "injected",
        "server",
        "client",
        "side",
        "runtime",
        "config",
        "settings",
        "dashboard",
        "creds",
        "credentials",
        "placeholder",
        "unset",
        "none",
        "empty",
        "required",
        "daily",
        "weekly",
        "monthly",
        "quarterly",
        "yearly",
        "annually",
    ]
)

_REFERENCE_STARTS = ("$", "<", "%", "{", "*")
_REFERENCE_PREFIXES = (
    "vault:",
    "env:",
    "redacted",
    "[redacted",
    "[withheld",
    "keyring:",
    "arn:",
    "ssm:",
    "sops:",
)

_WORD_SPLIT = re.compile(r"[-_ ]")
_LOWER_WORD = re.compile(r"[a-z0-9]*[a-z]")
_NUMBER = re.compile(r"[0-9]+")
# A chain's first word: a random token's first segment is often one letter
# (``x_rotated-2026-09``, ``p_assw0rd``), a description's never is.
_FIRST_WORD = re.compile(r"[a-z]{2,}")
_ENV_WORD = re.compile(r"[A-Z0-9]*[A-Z]")
_PATH = re.compile(r"(?:~|\.{1,2})?/")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}+://")
_DATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_CALL_OR_INDEX = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,255}+[(\[]")
_IDENTIFIER = re.compile(r"_*+[A-Za-z][A-Za-z0-9_]*+")
_IDENTIFIER_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CREDENTIAL_WORDS = re.compile(
    r"(?:^|_)(?:pass(?:word|wd|phrase)|secret|creds|credentials"
    r"|(?:api|access|auth|refresh|bearer)_?(?:key|token)|private_?key)s?(?:_|$)"
)
# Docstring field lists (":param password: ...") document a name; they
# never assign it.
_DOC_FIELD = re.compile(
    r"[ \t]*+(?:[*#/-]{1,3}+[ \t]*+)?:(?:param|type|arg|argument|key|keyword|ivar|cvar|var"
    r"|vartype)\b"
)
# "Password: Password to send with the request." is a sentence, not a value.
_CAPITALISED = re.compile(r"[A-Z][a-z]++")
_PROSE_FOLLOWS = re.compile(r"[ \t]++[a-z]")
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)+")


def _is_reference(value: str) -> bool:
    return value.startswith(_REFERENCE_STARTS) or value.lower().startswith(_REFERENCE_PREFIXES)


def _is_env_name(value: str) -> bool:
    # A leading underscore marks a private constant (_SSH_PRIVATE_KEY_TYPES).
    words = value.lstrip("_").split("_")
    return (
        len(words) >= 2
        and words[0][:1].isalpha()
        and all(_ENV_WORD.fullmatch(word) for word in words)
    )


def _is_event_and_date(words: list[str]) -> bool:
    """``rotated-2026-09``: lowercase words, the last ending in -ed, then a date."""
    first_number = next((i for i, word in enumerate(words) if _NUMBER.fullmatch(word)), None)
    if first_number is None or first_number == 0:
        return False
    date = words[first_number:]
    return (
        len(date) <= 3
        and len(date[0]) == 4
        and all(_NUMBER.fullmatch(part) and len(part) <= 2 for part in date[1:])
        and words[first_number - 1].endswith("ed")
        and _FIRST_WORD.fullmatch(words[0]) is not None
        and all(_LOWER_WORD.fullmatch(word) for word in words[:first_number])
    )


def _is_description(value: str) -> bool:
    words = _WORD_SPLIT.split(value)
    if _is_event_and_date(words):
        return True
    # A word ending in a digit, a single word, or a chain of words none of
    # which describes anything reads as a password or passphrase. A single
    # describing word (configured, placeholder, credentials) describes, too.
    if len(words) == 1:
        return words[0] in _DESCRIBING
    return (
        _FIRST_WORD.fullmatch(words[0]) is not None
        and all(_LOWER_WORD.fullmatch(word) for word in words)
        and any(word in _DESCRIBING for word in words)
    )


def _names_a_credential(value: str) -> bool:
    """A variable named after a credential (``password``, ``key_password``,
    ``refreshToken``): code passing a secret along, not the secret."""
    if _IDENTIFIER.fullmatch(value) is None or value[-1].isdigit():
        return False
    words = "_".join(word.lower() for word in _IDENTIFIER_WORD.findall(value))
    return _CREDENTIAL_WORDS.search(words) is not None


def _is_code(value: str) -> bool:
    if _CALL_OR_INDEX.match(value):
        return True
    # A segment ending in a digit (ya29.a0AfH6, john.doe1) reads as a token or
    # a password, not an attribute path.
    return _ATTRIBUTE_PATH.fullmatch(value) is not None and not any(
        part[-1].isdigit() for part in value.split(".")
    )


def _value_is_secret(value: str) -> bool:
    """Whether an assigned value is the credential itself rather than a description."""
    # Trailing punctuation of a sentence, or the backslash of an escaped
    # closing quote in JSON that was itself quoted, is not part of the value.
    value = value.strip().rstrip(".:\\")
    if len(value) < _MIN_VALUE:
        return False
    if _is_reference(value) or _is_env_name(value) or _is_description(value):
        return False
    if _names_a_credential(value):
        return False
    if _PATH.match(value) or _URL.match(value) or _DATE.fullmatch(value):
        return False
    return not _is_code(value)


def _in_prose(text: str, match: re.Match[str], group: str) -> bool:
    """Whether an assignment-like match is documentation rather than a value."""
    line_start = text.rfind("\n", max(0, match.start() - 120), match.start()) + 1
    if _DOC_FIELD.match(text, line_start, match.start()):
        return True
    value = match.group(group)
    if group != "bare" or _CAPITALISED.fullmatch(value) is None:
        return False
    return value.lower() in _DESCRIBING or _PROSE_FOLLOWS.match(text, match.end()) is not None


def _assignments(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every assignment whose value is a secret."""
    pos = 0
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        name = match.group("kw") + match.group("tail")
        if (
            not name.lower().endswith(_METADATA_SUFFIXES)
            and _value_is_secret(match.group(group))
            and not _in_prose(text, match, group)
        ):
            kind = _KIND_BY_KEYWORD[match.group("kw")[:3].lower()]
            start, end = match.span(group)
            # Leave the backslash of an escaped closing quote in place.
            end -= len(match.group(group)) - len(match.group(group).rstrip("\\"))
            yield f"{kind} assignment", (start, end)
            pos = match.end()
        else:
            # The value may itself hold an assignment (a=$X;password=...), so
            # resume inside it; it starts past the keyword, so this advances.
            pos = match.start(group)


def _shape_matches(shape: _Shape, text: str) -> Iterable[re.Match[str]]:
    for match in shape.pattern.finditer(text):
        if shape.accept is None or shape.accept(match):
            yield match


def find_secret(text: str) -> str | None:
    """Find a credential in a text.

    Args:
        text: Any writer-controlled text.

    Returns:
        A short label of the kind of credential found (``"GitHub token"``,
        ``"password assignment"``, ``"password in URL"``), or None.
    """
    for shape in _SHAPES:
        for _ in _shape_matches(shape, text):
            return shape.label
    for label, _span in _assignments(text):
        return label
    return None


def check_fields(fields: Iterable[tuple[str, str | None]]) -> None:
    """Refuse a write whose writer-controlled fields hold a credential.

    Args:
        fields: ``(field name, value)`` pairs such as ``("content", ...)`` or
            ``("tags[2]", ...)``; None values are skipped.

    Raises:
        SecretDetected: Naming the first field that holds a credential and
            the kind found. The message never contains the value.
    """
    for field, value in fields:
        if value is None:
            continue
        label = find_secret(value)
        if label is not None:
            raise SecretDetected(
                f"{field} looks like it holds a credential ({label}); nothing was written. "
                "Keep the secret in a secret manager and store a reference such as "
                "vault:path or $ENV_VAR instead of the value."
            )


def _pem_spans(text: str) -> Iterable[tuple[int, int]]:
    # The whole block goes, through its END line, or to the end of the text
    # when the block was cut off. Searching on from there keeps this linear.
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = _PEM_END.search(text, begin.end())
        stop = end.end() if end is not None else len(text)
        yield begin.start(), stop
        pos = stop


def redact(text: str) -> str:
    """Withhold every credential in a text, for previews in ledger reports.

    Args:
        text: Any text.

    Returns:
        The text with each credential span replaced by ``[withheld]``. An
        assignment keeps its name (``password=[withheld]``) and a URL its
        user and host. The detector finds nothing in the result, so redacting
        it again changes nothing.
    """
    for _ in range(_REDACT_PASSES):
        spans = _secret_spans(text)
        if not spans:
            return text
        text = _withhold(text, spans)
    return _WITHHELD if _secret_spans(text) else text


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    """A text as a report may show it: redacted, on one line, at most ``chars`` long."""
    # Redact before cutting, so a credential split by the cut is still recognised.
    flat = "".join(" " if unicodedata.category(ch) in _UNPRINTABLE else ch for ch in redact(text))
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """The spans :func:`redact` withholds, sorted; empty when :func:`find_secret` finds
    nothing."""
    spans = list(_pem_spans(text))
    for shape in _SHAPES:
        if shape is _PEM:
            continue
        for match in _shape_matches(shape, text):
            group = "secret" if "secret" in shape.pattern.groupindex else 0
            spans.append(match.span(group))
    spans.extend(span for _label, span in _assignments(text))
    return sorted(spans)


def _withhold(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (sorted) replaced by ``[withheld]``."""
    pieces: list[str] = []
    cursor = 0
    for first, last in spans:
        start, end = _outside_marker(text, first, 0), _outside_marker(text, last, 1)
        if end <= cursor:
            continue
        if start >= cursor:
            pieces.append(text[cursor:start])
            pieces.append(_WITHHELD)
        # An overlapping span extends the withheld region without a second
        # marker.
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _outside_marker(text: str, position: int, side: int) -> int:
    """``position``, moved to the start (``side`` 0) or the end (1) of a marker it falls
    inside: a span found in a later pass takes the whole marker, never leaving ``[with``
    or ``]`` behind."""
    width = len(_WITHHELD)
    start = text.find(_WITHHELD, max(0, position - width + 1), position + width - 1)
    if start == -1 or start >= position:
        return position
    return start + side * width
