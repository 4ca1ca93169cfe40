"""Credentials known by a name: a name built around a credential word, a credential
flag, an XML element, a named token.

A text holds a secret when one of these matches:

* A name built around a credential word: any ``NAME = value`` (``=``, ``:``,
  ``:=``, ``=>``; ``.env``, ``export``, YAML, JSON, TOML, INI) whose name has, as a
  ``_``/``-``/``.``/camel-case word, token, key, psk, auth, secret, password,
  passwd, passphrase, pass or pwd (``PAGERDUTY_TOKEN``, ``ansible_become_pass``,
  ``"pass"``, rclone's ``key``, ``SNOWSQL_PWD``), with no word after it that makes
  the name about the credential (``_id``, ``_type``, ``_ttl``, ``_path``...) and no
  word before a token or key that makes it a key of data (primary, sort, cache,
  public, next/page, csrf...; for a one-word name, the word before it in the text
  counts: "cache key: ..."). A password word's value passes the assignment test
  (pass and pwd also the prose one); a token, key or auth value must look random:
  16+ characters, no space, no ``=`` inside, random as a named token must be
  (below), or three character classes with a digit, or high entropy. A bare
  ``key: <hex>`` also needs mixed case; an ``auth`` whose value is base64 of
  text is left to the docker and basic-auth shapes.
* A named token: such a name, or ``token``, ``pat``, ``psk`` or an app/access/
  secret/master/(pre-)shared key,
  with up to four words and ``is``/``was``, a colon, ``=`` or only a space
  before a long random value ("datadog api key 55bd51f0...",
  "AWS_SECRET_ACCESS_KEY is MJ8P..."): 16+ characters mixing cases and digits,
  20+ hex digits, or 24+ lowercase letters and 4+ digits. A value starting with
  a known token prefix is left to its shape; words that make it about
  something else ("the password digest is ...", "api key id ...") leave it;
  ``=`` or ``:`` needs no space after it (``NOTION_TOKEN=secret_...``), and up to
  eight context words may carry brackets and commas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.assignments import KEYWORD, KEYWORDS, KIND_BY_KEYWORD, bare_value
from hikmah.model.secrets.checks import decodes_to_text
from hikmah.model.secrets.context import (
    assignment_allowed,
    find_seal,
    in_prose,
    inside_reference,
    name_before,
    negated,
    sealed,
)
from hikmah.model.secrets.randomness import looks_random, random_value
from hikmah.model.secrets.values import (
    LOWER,
    PUBLIC_TOKEN_PREFIXES,
    UPPER,
    WORD_SPLIT,
    flag_value_is_secret,
    prose_value_is_secret,
    value_is_secret,
    value_span,
)
from hikmah.model.secrets.words import (
    ABOUT_THE_TOKEN,
    ABOUT_WORDS,
    DATA_KEY_WORDS,
    METADATA_SUFFIXES,
)

# Any NAME = value: .env, export, YAML, JSON, TOML, INI. The name is scanned from its
# first character only (the lookbehind excludes its alphabet); its words decide.
_NAMED_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)[\\\"'`\]]{0,4}+[ \t]{0,5}+"
    r"(?::=|=>|[:=])[ \t]{0,5}+"
    r"(?:\"(?P<dq>[^\"\r\n]{1,256}+)\"|'(?P<sq>[^'\r\n]{1,256}+)'|`(?P<bq>[^`\r\n]{1,256}+)`"
    r"|[\"'`]?(?P<bare>[^\s\"'`,;&)\]}]{1,256}+))",
    re.ASCII,
)
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Name words that make the value a password; "pass", "pwd" and "auth" are short words
# that name other things too, so their value must also read as a password.
PASSWORD_WORDS = frozenset(["password", "passwd", "passphrase", "secret", "pass", "pwd"])
WEAK_WORDS = frozenset(["pass", "pwd"])
# Name words whose value must look random: long, mixed classes or high entropy.
_TOKEN_WORDS = frozenset(["token", "auth", "key", "psk"])
_NAME_WORDS = PASSWORD_WORDS | _TOKEN_WORDS

# First words that make a name a switch or a handler (onPass, is_token_valid,
# allow_key_reuse), not a credential.
_PREDICATE_WORDS = frozenset(
    ["on", "handle", "is", "has", "should", "can", "allow", "enable", "disable", "use", "skip"]
)


def credential_word(name: str) -> str | None:
    """The credential word a name is built around (``TOKEN`` in ``PAGERDUTY_TOKEN``,
    ``pass`` in ``ansible_become_pass``), or None when it has none or is about one."""
    words: list[str] = [word.lower() for word in _NAME_WORD.findall(name)]
    last = next((i for i in range(len(words) - 1, -1, -1) if words[i] in _NAME_WORDS), None)
    if last is None or "existing" in words or words[0] in _PREDICATE_WORDS:
        return None
    if ABOUT_WORDS.intersection(words[last + 1 :]):
        return None
    word: str = words[last]
    if word in _TOKEN_WORDS and DATA_KEY_WORDS.intersection(words[:last]):
        return None
    return word


def named_assignments(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every ``NAME = value`` whose name is built
    around a credential word (``PAGERDUTY_TOKEN=``, ``"pass": "..."``, INI ``key =``)
    and whose value is a secret."""
    sealed_at = find_seal(text)
    pos = 0
    while (match := _NAMED_ASSIGNMENT.search(text, pos)) is not None:
        pos = match.start("name") + len(match.group("name"))
        name = match.group("name")
        if not any(hint in name.lower() for hint in NAME_HINTS) or KEYWORD.search(name):
            # A name with a keyword of its own (DB_PASSWORD, apiKey) is judged as an
            # assignment already.
            continue
        # A name of one word takes the word before it ("cache key: ...").
        before = _WORD_BEFORE.search(text[max(0, match.start() - 30) : match.start()])
        full = f"{before.group(1)}_{name}" if before and _NAME_WORD.fullmatch(name) else name
        word = credential_word(full)
        if (
            word is None
            or name.lower().endswith(METADATA_SUFFIXES)
            or name.lower() in _PUBLIC_KEY_NAMES
        ):
            continue
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        value = bare_value(match, group)[0].rstrip("\\")
        if word == "auth" and decodes_to_text(value):
            # A docker or npm "auth" is base64 of user:password, which its shape decodes.
            continue
        if word in PASSWORD_WORDS:
            secret = value_is_secret(value) and (
                word not in WEAK_WORDS or prose_value_is_secret(value, strict=False)
            )
        else:
            secret = random_value(value) and (
                # A bare "key: <hex>" is as often a digest or an id: the name alone must
                # come with mixed case.
                full.lower() != "key" or (LOWER.search(value) and UPPER.search(value)) is not None
            )
        if (
            secret
            and not in_prose(text, match, group)
            and not assignment_allowed(text, match, group, sealed_at)
        ):
            kind = "password" if word in PASSWORD_WORDS and word != "secret" else word
            kind = {"auth": "auth token", "psk": "key", "secret": "secret"}.get(kind, kind)
            start = match.start(group)
            yield f"{kind} assignment", (start, start + len(value))
            pos = match.end()


# The lowercase form of a name built around a credential word holds one of these; a
# name without any is passed over.
NAME_HINTS = ("pass", "pwd", "secret", "token", "auth", "key", "psk")
# Public keys written with their type (Tailscale's nodekey:..., discokey:..., mkey:...).
_PUBLIC_KEY_NAMES = frozenset(["nodekey", "discokey", "mkey", "nlpub"])
_WORD_BEFORE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z0-9]{1,20}+)[ \t]{1,3}+\Z")

# A credential flag on a command line, its value after a space or "=":
# --client-secret X, --token X, --api-key=X, -passout pass:X.
_CLI_FLAG = re.compile(
    r"(?<![A-Za-z0-9_-])--?+(?:[A-Za-z0-9]{1,20}+-){0,4}"
    r"(?:pass(?:word|wd|phrase|in|out)?|pwd|secret|token"
    r"|(?:api|app|access|secret|private|client|auth)-?key)"
    r"(?:[ \t]{1,3}+|(?P<eq>=))(?P<quote>[\"']?)(?P<secret>[^\s\"']{6,256}+)",
    re.IGNORECASE | re.ASCII,
)
# <password>...</password>, <apiKey>...</apiKey>, <token>...</token>.
_XML_ELEMENT = re.compile(
    r"<(?P<name>[A-Za-z_][A-Za-z0-9_.:-]{0,60}+)[ \t]*+>(?P<secret>[^<>\r\n]{1,256}+)"
    r"</(?P=name)[ \t]*+>",
    re.ASCII,
)
_TOKEN_NAME = re.compile(r"token$", re.IGNORECASE)
# A credential named and followed by a long random value, with no "=" needed:
# "datadog api key 55bd51f0...", "the CI variable AWS_SECRET_ACCESS_KEY is MJ8P...",
# "the bot token for staging is ...".
_NAMED_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:" + KEYWORDS + r"|token|pat|psk"
    r"|(?:app|application|access|secret|master|(?:pre[ ._-]?)?shared)[ ._-]?key)"
    r"(?P<tail>[A-Za-z0-9_]{0,40}+)"
    # Context words may carry brackets and commas: "PAT for the job (full access, sorry):".
    r"(?:(?P<context>(?:[ \t]{1,3}+(?!(?:is|was)\b)[A-Za-z0-9_.,()-]{1,30}+){0,8}?)"
    r"(?:[ \t]{1,3}+(?:is|was)(?:[ \t]{1,3}+now)?[ \t]{1,3}+|[ \t]{0,3}+[:=][ \t]{0,3}+)"
    # NAME_TOKEN=value needs no space after "=".
    r"|[ \t]{0,3}+[:=][ \t]{0,3}+|[ \t]{1,3}+)"
    r"[\"'`]?(?P<secret>[A-Za-z0-9_+/.=-]{16,256}+)",
    re.IGNORECASE | re.ASCII,
)


def named_values(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of credentials named by a command-line flag or an
    XML element, or named in a sentence and followed by a long random value."""
    pos = 0 if "-" in text else len(text)
    while (match := _CLI_FLAG.search(text, pos)) is not None:
        # A value quoted after "=" (--password='-B_q...') is no other flag, whatever
        # it starts with.
        dash = bool(match.group("eq") and match.group("quote"))
        if flag_value_is_secret(match.group("secret"), dash):
            yield "credential on a command line", value_span(match)
            pos = match.end()
        else:
            # The value may be the next flag (--with-token --token X).
            pos = match.start("secret")
    if "</" in text:
        for match in _XML_ELEMENT.finditer(text):
            name, raw = match.group("name"), match.group("secret")
            value = raw.strip()
            keyword = KEYWORD.search(name)
            if (
                (keyword is not None or _TOKEN_NAME.search(name) is not None)
                and not name.lower().endswith(METADATA_SUFFIXES)
                and (value_is_secret(value) or prose_value_is_secret(value, strict=True))
            ):
                kind = KIND_BY_KEYWORD[keyword.group()[:3].lower()] if keyword else "token"
                start = match.start("secret") + len(raw) - len(raw.lstrip())
                yield f"{kind} in XML", (start, start + len(value))
    sealed_at = find_seal(text)
    for match in _NAMED_TOKEN.finditer(text):
        about = f"{match.group('tail')} {match.group('context') or ''}".lower()
        before = name_before(text, match.start()).lower()
        if (
            not ABOUT_THE_TOKEN.intersection(WORD_SPLIT.split(about))
            # next_page_token, csrf_token, cache_key: a key of data, not a credential.
            and not DATA_KEY_WORDS.intersection(WORD_SPLIT.split(before))
            and looks_random(match.group("secret"))
            and not match.group("secret").startswith(PUBLIC_TOKEN_PREFIXES)
            and not sealed(text, sealed_at, match.start("secret"), match.group("secret"))
            and not inside_reference(text, match.start())
            and not negated(text, match.start())
        ):
            yield "named token", value_span(match)
