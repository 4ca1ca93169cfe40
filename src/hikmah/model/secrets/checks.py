"""What a shape is, and the checks of a candidate its pattern alone cannot express:
a token's body mixes cases or has a digit, base64 decodes to ``user:password`` or
to a private key, a vendor's name is a few words before a bare value.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hikmah.model.secrets.randomness import ALPHABET_RUN
from hikmah.model.secrets.values import (
    LETTER,
    LOWER,
    MASK_RUN,
    PLACEHOLDER,
    SYMBOL,
    UPPER,
    WORD_SPLIT,
    flag_value_is_secret,
    has_digit,
    is_placeholder,
    is_template,
    names_a_credential,
)
from hikmah.model.secrets.words import ABOUT_THE_TOKEN


@dataclass(frozen=True, slots=True)
class Shape:
    """A well-known credential shape.

    Attributes:
        label: What the refusal calls it.
        pattern: Finds candidates; a group named ``secret``, when present, is
            the span :func:`.redaction.redact` withholds (otherwise the whole match).
        accept: Further test of a candidate the pattern alone cannot express.
        needles: Substrings one of which every match contains, checked first
            so that a text without any skips the scan (in lowercase when the
            pattern ignores case; :mod:`.needles`); empty for a shape without
            one.
    """

    label: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    needles: tuple[str, ...] = ()
    # Whether the needles are looked for in the lowercased text (the pattern ignores
    # case); kept apart from the pattern's flags, whose enum arithmetic is slow.
    folded: bool = False


def shape(
    label: str,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
    flags: int = 0,
    needles: tuple[str, ...] = (),
) -> Shape:
    return Shape(label, re.compile(pattern, flags), accept, needles, bool(flags & re.IGNORECASE))


def bearer_like(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return has_digit(token) and (LOWER.search(token) or UPPER.search(token)) is not None


def header_credential(match: re.Match[str]) -> bool:
    # Base64 of user:pass nearly always has a digit, padding or mixed case;
    # "Authorization: Basic credentials" in prose has none of them.
    token = match.group("secret")
    mixed = LOWER.search(token) is not None and UPPER.search(token) is not None
    return has_digit(token) or "=" in token or mixed


def secret_has_digit(match: re.Match[str]) -> bool:
    return has_digit(match.group("secret"))


def mixed_case(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return LOWER.search(token) is not None and UPPER.search(token) is not None


def url_password(match: re.Match[str]) -> bool:
    # user:password@host in documentation names the parts; USER:PASSWORD likewise.
    secret = match.group("secret")
    return (
        not is_template(secret)
        and PLACEHOLDER.fullmatch(secret) is None
        and not names_a_credential(secret)
    )


def _b64decode(token: str) -> bytes | None:
    """Standard or URL-safe base64, padding optional; None when it is not base64."""
    if not token.isascii():
        return None  # b64decode raises ValueError, not binascii.Error, for these
    token = token.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except binascii.Error:
        return None


def pem_in_base64(match: re.Match[str]) -> bool:
    # A certificate (tls.crt) is base64 of a PEM block too, and public.
    head = _b64decode(match.group(0)[:80])
    return head is not None and PEM_BEGIN.match(head.decode("ascii", "replace")) is not None


def azure_key(match: re.Match[str]) -> bool:
    return has_digit(match.group("secret")) and mixed_case(match)


def registry_auth(match: re.Match[str]) -> bool:
    """A docker config ``auth`` is base64 of ``user:password``."""
    raw = _b64decode(match.group("secret"))
    if raw is None:
        return False
    try:
        user, sep, password = raw.decode("utf-8").partition(":")
    except UnicodeDecodeError:
        return False
    return bool(sep and user and password) and password.isprintable()


def discord_token(match: re.Match[str]) -> bool:
    # The first part is the bot's user id (a snowflake) in base64.
    raw = _b64decode(match.group("id"))
    return raw is not None and raw.isdigit() and 17 <= len(raw) <= 20


def netrc_password(match: re.Match[str]) -> bool:
    secret = match.group("secret")
    return not is_template(secret) and PLACEHOLDER.fullmatch(secret) is None


def pgpass_line(match: re.Match[str]) -> bool:
    # Five colon-separated fields also make log lines and Redis keys
    # (worker:10:queue:default:started); a password has a digit, a symbol or
    # both cases, and a host has a letter, a dot or is *.
    host, value = match.group("host"), match.group("secret")
    return (
        (LETTER.search(host) is not None or "." in host or host == "*")
        and not is_placeholder(value)
        and not value.isdigit()
        and (has_digit(value) or SYMBOL.search(value) is not None or mixed_case(match))
    )


def basic_credential(match: re.Match[str]) -> bool:
    """Bare base64 after ``auth:`` or ``Basic``: it must decode to ``user:password``
    in printable ASCII, with no space in the user."""
    raw = _b64decode(match.group("secret"))
    if raw is None or not raw.isascii():
        return False
    user, sep, password = raw.decode("ascii").partition(":")
    return bool(sep and user and password) and (user + password).isprintable() and " " not in user


# An HTTP client's command, which a -u/--user/-a/--auth flag must follow on its line.
_HTTP_CLIENT = re.compile(r"(?<![A-Za-z0-9_-])(?:curl|wget|https?+|xhs?+)[ \t]")
CLIENT_REACH = 200


def client_password(match: re.Match[str]) -> bool:
    """``user:password`` after -u, --user, -a or --auth on an HTTP client's command
    line (curl, wget, HTTPie, xh), not piped or chained from an earlier command."""
    text, start = match.string, match.start()
    window = text[max(0, start - CLIENT_REACH) : start]
    window = window[window.rfind("\n") + 1 :]
    commands = [command.end() for command in _HTTP_CLIENT.finditer(window)]
    return (
        bool(commands)
        and not any(separator in window[commands[-1] :] for separator in "|;&")
        and flag_value_is_secret(match.group("secret"))
    )


def labelled_jwt(match: re.Match[str]) -> bool:
    signature = match.group("sig")
    return has_digit(signature) or (
        LOWER.search(signature) is not None and UPPER.search(signature) is not None
    )


def random_secret(match: re.Match[str]) -> bool:
    """A vendor token's body: mixes cases or has a digit, so a name or prose does not."""
    token = match.group("secret")
    return has_digit(token) or (LOWER.search(token) is not None and UPPER.search(token) is not None)


def mixed_and_digit(match: re.Match[str]) -> bool:
    return has_digit(match.group("secret")) and mixed_case(match)


_SAS_REACH = 600
_SAS_FIELD = re.compile(r"[?&;](?:sv|se|sp|sr|spr|st|srt|ss)=")


def sas_signature(match: re.Match[str]) -> bool:
    """``sig=`` of an Azure shared access signature: other SAS fields (``sv=``, ``se=``)
    sit in the same URL or query, with no whitespace between."""
    text = match.string
    window = text[max(0, match.start() - _SAS_REACH) : match.start()]
    before = "" if not window or window[-1].isspace() else window.rsplit(None, 1)[-1]
    after = _NO_SPACE.match(text, match.end(), match.end() + _SAS_REACH)
    query = before + (after.group() if after else "")
    return _SAS_FIELD.search(query) is not None and has_digit(match.group("secret"))


_NO_SPACE = re.compile(r"\S*+")


def oracle_password(match: re.Match[str]) -> bool:
    secret = match.group("secret")
    return (
        not is_template(secret)
        and not is_placeholder(secret)
        and (has_digit(secret) or SYMBOL.search(secret) is not None or mixed_case(match))
    )


def session_value(match: re.Match[str]) -> bool:
    """A session id: random (a digit and a letter, and mixed case, 20+ hex or base36
    with digits), not a placeholder or a name."""
    value = match.group("secret")
    letters = sum(char.isalpha() for char in value)
    digits = sum(char.isdigit() for char in value)
    return (
        letters >= 4
        and digits >= 4
        and not is_placeholder(value)
        and ALPHABET_RUN not in value.lower()
        and MASK_RUN.search(value) is None
    )


_CONTEXT_REACH = 60


def near_vendor(*names: str) -> Callable[[re.Match[str]], bool]:
    """Accept a bare random value only when a vendor's name is a few words before it
    and the words between do not make it an id."""

    def accept(match: re.Match[str]) -> bool:
        before = match.string[max(0, match.start() - _CONTEXT_REACH) : match.start()].lower()
        hits = [before.rfind(name) for name in names]
        first = max(hits)
        if first == -1:
            return False
        between = set(WORD_SPLIT.split(re.sub(r"[^a-z0-9_ -]", " ", before[first:])))
        return not ABOUT_THE_TOKEN.intersection(between)

    return accept


near_cloudflare = near_vendor("cloudflare", "cf_", "cf-")


def decodes_to_text(value: str) -> bool:
    """Base64 of printable ASCII."""
    raw = _b64decode(value)
    return raw is not None and raw.isascii() and raw.decode("ascii").isprintable()


PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")

# What follows a header mentioned in a sentence: on the same line, a word or
# punctuation, not the key's base64 (a key goes on after a line break, an escaped
# "\\n", a quote or the end of the text).
_PEM_MENTIONED = re.compile(
    r"[ \t]{0,3}+(?:[.,;:!?)]|(?<=[ \t])(?![A-Za-z0-9+/=]{16}|\\n|[\r\n\"']|\Z))"
)


def pem_spans(text: str) -> Iterable[tuple[int, int]]:
    # The whole block goes, through its END line, or to the end of the text
    # when the block was cut off. Searching on from there keeps this linear.
    pos = 0
    while (begin := PEM_BEGIN.search(text, pos)) is not None:
        if _PEM_MENTIONED.match(text, begin.end()):
            # "a file that starts with -----BEGIN PRIVATE KEY----- must not be
            # committed": the header in a sentence, no key after it.
            pos = begin.end()
            continue
        end = _PEM_END.search(text, begin.end())
        stop = end.end() if end is not None else len(text)
        yield begin.start(), stop
        pos = stop
