"""Whether a value reads as generated: its length, character classes and entropy."""

from __future__ import annotations

import math
import re

from hikmah.model.secrets.values import (
    BASE64_SEGMENT,
    DATE,
    DIGIT,
    KNOWN_PREFIX,
    LETTER,
    LOWER,
    SYMBOL,
    UPPER,
    URL,
    has_digit,
    is_code,
    is_path,
    is_placeholder,
    is_technical,
    value_is_secret,
)


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_HEX_NUMBER = re.compile(r"0[xX][0-9A-Fa-f]++")
_RELATIVE_PATH = re.compile(r"(?:[A-Za-z0-9_.-]{1,64}+/){1,16}+[A-Za-z0-9_.-]{1,64}+")


ALPHABET_RUN = "abcdefgh"


def random_value(value: str) -> bool:
    """A generated credential: 16+ characters with no space, and random (what a named
    token must be), three character classes, or high entropy."""
    value = value.strip()
    # An "=" inside (not base64 padding) makes a k=v list, not one token.
    if len(value) < 16 or " " in value or "=" in value.rstrip("="):
        return False
    if not value_is_secret(value) or is_placeholder(value):
        return False
    if KNOWN_PREFIX.match(value) is not None:
        # Left to its shape, which names it better (and finds it joined when split).
        return False
    if _HEX_NUMBER.fullmatch(value) is not None:
        # 0x4AEE18F83AFDEB23: a number or a key id written in hex.
        return False
    if ALPHABET_RUN in value.lower():
        # 123456789:ABCdefGhIJKlmNoPQRsTUVwxyZ: documentation spells out the alphabet;
        # a generated token never holds eight letters in order.
        return False
    if _RELATIVE_PATH.fullmatch(value) is not None and not any(
        BASE64_SEGMENT.fullmatch(segment) for segment in value.split("/")
    ):
        # uploads/2024/06/Report_Q2.pdf: an object key, made of names.
        return False
    if looks_random(value):
        return True
    classes = sum(pattern.search(value) is not None for pattern in (LOWER, UPPER, DIGIT, SYMBOL))
    return has_digit(value) and (classes >= 3 or _entropy(value) >= 4.0)


_HEX = re.compile(r"[0-9a-fA-F-]++")

_BASE36 = re.compile(r"[a-z0-9]++")


def looks_random(value: str) -> bool:
    """Whether a value named without ``=`` reads as a generated token: 16+ characters
    mixing cases and digits, 20+ of hex, or 24+ of lowercase letters and 4+ digits; and
    none of the things a sentence names instead."""
    value = value.rstrip(".,;:)")
    if len(value) < 16 or LETTER.search(value) is None or not has_digit(value):
        return False
    if KNOWN_PREFIX.match(value) is not None:
        return False
    if (
        is_placeholder(value)
        or is_path(value)
        or URL.match(value)
        or DATE.fullmatch(value)
        or is_code(value)
        or is_technical(value)
    ):
        return False
    if LOWER.search(value) is not None and UPPER.search(value) is not None:
        return True
    if _HEX.fullmatch(value) is not None:
        return len(value.replace("-", "")) >= 20
    return (
        _BASE36.fullmatch(value) is not None and len(value) >= 24 and len(DIGIT.findall(value)) >= 4
    )


# Words in CamelCase (ResetPassword) or capitals; a mix that is neither reads as random.
_CAMEL_WORDS = re.compile(r"(?:[A-Z]?[a-z]{2,}+)++|[A-Z]++(?:[a-z]{2,}+)?+")
_SEPARATOR = re.compile(r"[-_.]")


def random_letters(value: str) -> bool:
    """Letters mixing cases at random (``fzGOABJwkwqcgcyNb``, ``CPtHCLStjb-Hpy``), 10+
    of them, perhaps split by - _ or .: no word in CamelCase or capitals reads so."""
    value = value.rstrip(".,;:)")
    pieces = _SEPARATOR.split(value)
    return (
        len(value) >= 10
        and all(piece.isascii() and piece.isalpha() for piece in pieces)
        and LOWER.search(value) is not None
        and UPPER.search(value) is not None
        and not all(_CAMEL_WORDS.fullmatch(piece) for piece in pieces)
        and not is_placeholder(value)
        and not is_technical(value)
    )
