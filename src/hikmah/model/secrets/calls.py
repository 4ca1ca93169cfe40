"""Credentials passed to a call.

A call: a first string argument that names a credential and a second that is
its value (PHP ``define('DB_PASSWORD', '...')``, ``set("api_token", "...")``),
judged like an assignment of that name; the third string argument of a
connection call (``new PDO(dsn, user, 'X')``, ``getConnection(url, user, "X")``,
``mysqli_connect``) unless it is a template, placeholder or code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.assignments import KEYWORD
from hikmah.model.secrets.named import PASSWORD_WORDS, WEAK_WORDS, credential_word
from hikmah.model.secrets.randomness import random_value
from hikmah.model.secrets.values import (
    MIN_PROSE_VALUE,
    is_code,
    is_placeholder,
    is_template,
    prose_value_is_secret,
    value_is_secret,
)
from hikmah.model.secrets.words import METADATA_SUFFIXES

# A call whose first string argument names a credential and whose second is its value:
# PHP's define('DB_PASSWORD', '...'), putenv-like setters, config.set("api_key", "...").
_CALL_PAIR = re.compile(
    r"\([ \t]{0,3}+(?P<q1>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)(?P=q1)[ \t]{0,3}+,"
    r"[ \t]{0,3}+(?P<q2>[\"'])(?P<secret>[^\"'\r\n]{1,256}+)(?P=q2)[ \t]{0,3}+[),]",
    re.ASCII,
)
_STRING_ARG = r"(?:\"[^\"\r\n]{0,256}+\"|'[^'\r\n]{0,256}+')[ \t]{0,3}+,[ \t]{0,3}+"
# Connection calls whose third argument is the password: PDO (dsn, user, password), JDBC's
# getConnection (url, user, password), mysqli (host, user, password).
_CONNECT_CALL = re.compile(
    r"(?<![A-Za-z0-9_])(?:new[ \t]{1,3}+(?:PDO|mysqli)|getConnection|mysqli_connect"
    r"|mysql_connect)[ \t]{0,3}+\([ \t]{0,3}+"
    + _STRING_ARG
    + _STRING_ARG
    + r"(?P<q>[\"'])(?P<secret>[^\"'\r\n]{1,256}+)(?P=q)",
    re.ASCII,
)


def call_pairs(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the value span of a credential passed by name to a call."""
    for match in _CALL_PAIR.finditer(text):
        name, value = match.group("name"), match.group("secret")
        keyword = KEYWORD.search(name)
        word = None if keyword else credential_word(name)
        if name.lower().endswith(METADATA_SUFFIXES):
            continue
        if keyword is not None or word in PASSWORD_WORDS:
            secret = value_is_secret(value) and (
                word not in WEAK_WORDS or prose_value_is_secret(value, strict=False)
            )
        else:
            secret = word is not None and random_value(value)
        if secret:
            yield "credential passed by name", match.span("secret")


def connect_calls(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the span of the password given as a connection call's third argument."""
    for match in _CONNECT_CALL.finditer(text):
        value = match.group("secret")
        if (
            len(value) >= MIN_PROSE_VALUE
            and not is_template(value)
            and not is_placeholder(value)
            and not is_code(value)
        ):
            yield "password in a connection call", match.span("secret")
