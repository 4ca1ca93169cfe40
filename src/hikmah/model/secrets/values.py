"""Whether a value is the credential itself or something standing for it: a reference,
a template, a placeholder, a description, a path, code, a masked or technical value
(the list is in :mod:`.assignments`).
"""

from __future__ import annotations

import functools
import re

from hikmah.model.secrets.words import DESCRIBING, TECHNICAL

MIN_VALUE = 8
# A value in prose as short as "L4bR4t!" still reads as a password when it
# mixes letters, digits and symbols or cases.
MIN_PROSE_VALUE = 6

DIGIT = re.compile(r"[0-9]")
LOWER = re.compile(r"[a-z]")
UPPER = re.compile(r"[A-Z]")


def has_digit(text: str) -> bool:
    return DIGIT.search(text) is not None


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
    # A SOPS-encrypted value.
    "enc[",
    # Code reading the environment (process.env.X!, std::env::var("X")).
    "process.env",
    "import.meta.env",
    "os.environ",
    "os.getenv",
    "env::",
    "std::env",
    "env[",
    "env.fetch",
    "system.getenv",
    "deno.env",
    "environment.getenvironmentvariable",
)

WORD_SPLIT = re.compile(r"[-_ ]")
_LOWER_WORD = re.compile(r"[a-z0-9]*[a-z]")
_NUMBER = re.compile(r"[0-9]+")
# A chain's first word: a random token's first segment is often one letter
# (``x_rotated-2026-09``, ``p_assw0rd``), a description's never is.
_FIRST_WORD = re.compile(r"[a-z]{2,}")
_ENV_WORD = re.compile(r"[A-Z0-9]*[A-Z]")
_PATH = re.compile(r"(?:~|\.{1,2})?/")
# A path's segments are names; a segment of 20+ base64 characters mixing cases and
# digits, a "+", or "=" padding at the end make base64 that happens to start with
# "/" (a private key's "/fUJPG5GbCh+TrX..."), not a path.
BASE64_SEGMENT = re.compile(r"[A-Za-z0-9+]{20,}+")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}+://")
DATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
# A call or an index, Rust paths and macros too (std::env::var(, env!().
_CALL_OR_INDEX = re.compile(
    r"[A-Za-z_][A-Za-z0-9_.]{0,255}+(?:::[A-Za-z_][A-Za-z0-9_.]{0,255}+){0,16}+!?[(\[]"
)
_HEADER_NAME = re.compile(r"[Xx]-[A-Za-z]{1,20}+(?:-[A-Za-z]{1,20}+){0,6}+")
_IDENTIFIER = re.compile(r"_*+[A-Za-z][A-Za-z0-9_]*+")
_IDENTIFIER_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CREDENTIAL_WORDS = re.compile(
    r"(?:^|_)(?:pass(?:word|wd|phrase)|secret|creds|credentials"
    r"|(?:api|access|auth|refresh|bearer)_?(?:key|token)|private_?key)s?(?:_|$)"
)
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)+")


def _is_reference(value: str) -> bool:
    return value.startswith(_REFERENCE_STARTS) or value.lower().startswith(_REFERENCE_PREFIXES)


# A reference in a URL or a .netrc, where a password may itself start with a symbol
# ("*Y1Od3...", "%qhrd..."): a template variable, not just any leading symbol.
_TEMPLATE = re.compile(
    r"\$\{[^}]*+\}?|\$\([^)]*+\)?|\$[A-Za-z_][A-Za-z0-9_]*+|\{\{.*|\{[A-Za-z0-9_.]*+\}"
    r"|<[^>]*+>|%\([A-Za-z0-9_]++\)s|%s|%[A-Za-z_][A-Za-z0-9_]*+%"
)


def is_template(value: str) -> bool:
    """A template variable or reference standing for a password in a URL or file."""
    return (
        _TEMPLATE.fullmatch(value) is not None
        or value.lower().startswith(_REFERENCE_PREFIXES)
        or value.startswith(("${", "{{", "$("))
    )


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
    words = WORD_SPLIT.split(value)
    if _is_event_and_date(words):
        return True
    # A word ending in a digit, a single word, or a chain of words none of
    # which describes anything reads as a password or passphrase. A single
    # describing word (configured, placeholder, credentials) describes, too.
    if len(words) == 1:
        return words[0] in DESCRIBING
    return (
        _FIRST_WORD.fullmatch(words[0]) is not None
        and all(_LOWER_WORD.fullmatch(word) for word in words)
        and any(word in DESCRIBING for word in words)
    )


def names_a_credential(value: str) -> bool:
    """A variable named after a credential (``password``, ``key_password``,
    ``refreshToken``): code passing a secret along, not the secret."""
    # Words joined by hyphens too: a test's dummy "wrong-password" names one.
    value = value.replace("-", "_") if value[:1].isalpha() else value
    if _IDENTIFIER.fullmatch(value) is None or value[-1].isdigit():
        return False
    words = "_".join(word.lower() for word in _IDENTIFIER_WORD.findall(value))
    return _CREDENTIAL_WORDS.search(words) is not None


def is_code(value: str) -> bool:
    if _CALL_OR_INDEX.match(value):
        return True
    # TypeScript's non-null assertion (process.env.KEY!) ends an expression.
    value = value.removesuffix("!")
    # A segment ending in a digit (ya29.a0AfH6, john.doe1) reads as a token or
    # a password, not an attribute path.
    # A segment of 16+ characters mixing cases and digits is a token's (a Discord bot
    # token's three parts read like an attribute path).
    return _ATTRIBUTE_PATH.fullmatch(value) is not None and not any(
        part[-1].isdigit()
        or (len(part) >= 16 and has_digit(part) and LOWER.search(part) and UPPER.search(part))
        for part in value.split(".")
    )


def is_path(value: str) -> bool:
    """A file path: starts like one and is made of names, not base64."""
    if _PATH.match(value) is None:
        return False
    if "+" in value or value.endswith("="):
        return False
    return not any(
        BASE64_SEGMENT.fullmatch(segment) is not None
        and has_digit(segment)
        and LOWER.search(segment) is not None
        and UPPER.search(segment) is not None
        for segment in value.split("/")
    )


def _is_header_name(value: str) -> bool:
    """An HTTP header's name (X-API-Key, X-Auth-Token): where a credential goes."""
    return _HEADER_NAME.fullmatch(value) is not None


# Text for people, not a value: "At least 12 characters", "Passwords do not match".
_UI_TEXT = re.compile(r"[A-Z][a-z]++(?:[ \t](?:[a-z]++|[0-9]++)){1,12}+[.!]?")
# A note in brackets ("(rotated)", "(see vault)") instead of a value.
_NOTE = re.compile(r"\([A-Za-z][A-Za-z _-]{0,60}+\)?")


def _is_example(value: str) -> bool:
    """A note in brackets instead of a value."""
    return _NOTE.fullmatch(value) is not None


# A value masked or filled in for an example: a run of mask dots or asterisks, or of
# x after a vendor's prefix (sk_live_xxxxxxxx, sk-proj-••••Tz9Q, AGE-SECRET-KEY-1XXXX).
MASK_RUN = re.compile(r"[xX]{8,}+|[*\u2022\u25cf\u2219\u00b7]{4,}+")
# What every mask run holds, lowercased (a cheap test before the regex).
_MASK_MARKS = ("xxxx", "*", "\u2022", "\u25cf", "\u2219", "\u00b7")
# Text for people in any language, ending as a sentence does: "Passwort vergessen?",
# "La tua password è scaduta, impostane una nuova."
_SENTENCE = re.compile(r"[^\W\d_][\w'\u2019-]*+(?:,?+[ \t]++[\w'\u2019-]++){1,20}+[.!?\u2026]")
# A value read from a file: vault's and curl's "@file" (password=@db-pass.txt).
_FILE_VALUE = re.compile(r"@[A-Za-z0-9_./~-]{1,200}+")
_EXTENSION = re.compile(r"\.[a-z]{2,5}+\Z")


def _is_masked(value: str) -> bool:
    """A masked value (``sk-proj-••••Tz9Q``, ``ab****yz``), a vendor prefix filled in
    with x (``sk_live_xxxxxxxx``) or cut short with an ellipsis (``sk-...a1B2``,
    ``sk_live_...``)."""
    # Substring tests first: this runs on every assigned value, and a regex's search of
    # each is what made a long run of assignments slow.
    if ("..." in value or "\u2026" in value) and (
        KNOWN_PREFIX.match(value) is not None or len(value) <= 24
    ):
        return True
    lowered = value.lower()
    if not any(mark in lowered for mark in _MASK_MARKS) or MASK_RUN.search(value) is None:
        return False
    # "xxxxxxxx" alone is what the unit tests call a password (password = xxxxxxxx).
    return (
        KNOWN_PREFIX.match(value) is not None
        or MASK_RUN.fullmatch(value) is None
        or (not value[:1].isalnum())
    )


# Tokens public by design: a Mapbox public token (pk.eyJ...; its secret ones are sk.).
PUBLIC_TOKEN_PREFIXES = ("pk.eyJ",)


def value_is_secret(value: str) -> bool:
    """Whether an assigned value is the credential itself rather than a description."""
    if value[:1].isupper() and value[-1:] in ".!?\u2026" and _SENTENCE.fullmatch(value):
        return False
    if _is_masked(value.strip()):
        # Before the trailing dots go: sk_live_... is cut short.
        return False
    # Trailing punctuation of a sentence, or the backslash of an escaped
    # closing quote in JSON that was itself quoted, is not part of the value.
    value = value.strip().rstrip(".:\\")
    if len(value) < MIN_VALUE:
        return False
    if _is_example(value) or _UI_TEXT.fullmatch(value) or _is_masked(value):
        return False
    if value.startswith("@") and _FILE_VALUE.fullmatch(value) and _EXTENSION.search(value):
        return False
    if _is_reference(value) or _is_env_name(value) or _is_description(value):
        return False
    if names_a_credential(value) or value.startswith(PUBLIC_TOKEN_PREFIXES):
        return False
    if is_path(value) or URL.match(value) or DATE.fullmatch(value):
        return False
    return not is_code(value) and not _is_header_name(value)


# The prefixes of the tokens the shapes know; such a value is left to its shape,
# which names it better (and finds it joined when it was split).
TOKEN_PREFIXES = (
    r"eyJ|LS0tLS1CRUdJTi|gh[pousr]_|github_pat_|glpat-|sk-|[sr]k_live_|whsec_|xox[abprs]-"
    r"|AIza|GOCSPX-|npm_|pypi-|hf_|SG\.|do[por]_v1_|AKIA|ASIA"
    r"|gl(?:rt|dt|ptt|ft|cbt|soat)-|shp(?:at|ca|pa|ss)_|PMAK-|sq0(?:atp|csp)-|xkeysib-|gsk_"
    r"|ATATT3|AGE-SECRET-KEY-1|NRAK-|dp\.(?:st|ct|pt|sa)\.|tskey-|dckr_(?:pat|oat)_|dapi[a-f0-9]"
)
KNOWN_PREFIX = re.compile(TOKEN_PREFIXES)

_TECHNICAL_SPLIT = re.compile(r"[-_./+]")
_VERSION = re.compile(r"v?[0-9]+")
LETTER = re.compile(r"[A-Za-z]")
# Not brackets: "(optional)" is prose.
SYMBOL = re.compile(r"[!@#$%^&*+=?~|\\]")
_EMAIL = re.compile(r"[^@\s]{1,64}+@[A-Za-z0-9-]{1,63}+(?:\.[A-Za-z0-9-]{1,63}+)++")
# Values that stand for a credential in examples: PASSWORD, xxxxxxxx, <token>,
# yourpassword.
PLACEHOLDER = re.compile(r"[A-Z_]++|[xX*.]++|(?i:your|my)[-_A-Za-z]*+|<[^>]*+>")


def is_placeholder(value: str) -> bool:
    return (
        _is_reference(value)
        or _is_env_name(value)
        or PLACEHOLDER.fullmatch(value) is not None
        or _is_example(value)
    )


def is_technical(value: str) -> bool:
    words = [word for word in _TECHNICAL_SPLIT.split(value.lower()) if word]
    return all(
        word in TECHNICAL or word in DESCRIBING or _VERSION.fullmatch(word) for word in words
    )


# Pure, and called again for the same words when a flag or keyword repeats.
@functools.lru_cache(maxsize=1024)
def prose_value_is_secret(value: str, strict: bool) -> bool:
    """Whether a value named in prose reads as a password: it has a letter, a digit,
    and a symbol or both cases; or (not ``strict``) it is 8 characters or more with
    a letter and a digit or symbol. And it is none of the things a sentence about a
    password names instead."""
    value = value.rstrip(".,;:)")
    if len(value) < MIN_PROSE_VALUE or LETTER.search(value) is None:
        return False
    if (
        is_placeholder(value)
        or _is_description(value)
        or is_technical(value)
        or names_a_credential(value)
        or _EMAIL.fullmatch(value)
        or is_path(value)
        or URL.match(value)
        or DATE.fullmatch(value)
        or is_code(value)
    ):
        return False
    digit, symbol = has_digit(value), SYMBOL.search(value) is not None
    mixed = LOWER.search(value) is not None and UPPER.search(value) is not None
    if digit and (symbol or mixed):
        return True
    return not strict and len(value) >= MIN_VALUE and (digit or symbol)


def flag_value_is_secret(value: str, dash: bool = False) -> bool:
    """Whether the value of a credential flag (``--token X``, ``curl -u user:X``) reads
    as one: not another flag, a key=value list (``--secret id=npmrc,src=.npmrc``), a
    placeholder, or a word ("pass --token explicitly")."""
    value = value.removeprefix("pass:")
    return (
        (dash or not value.startswith("-"))
        and "=" not in value.rstrip("=")
        and not is_placeholder(value)
        and prose_value_is_secret(value, strict=False)
    )


def value_span(match: re.Match[str]) -> tuple[int, int]:
    """The value's span without the punctuation that ends a sentence."""
    start = match.start("secret")
    return start, start + len(match.group("secret").rstrip(".,;:)"))
