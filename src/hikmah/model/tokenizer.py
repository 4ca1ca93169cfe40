"""Query and content terms for Resonance Recall (docs/storage.md, "Recall without a
scan").

Lowercase; split on every character that is neither alphanumeric nor ``_``;
split a token that mixes scripts into same-script runs; turn CJK runs into
character bigrams; drop short non-numeric tokens and stopwords; stem ASCII
words lightly. Linear in the length of the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)

# \w is "alphanumeric or _" in Unicode mode; everything else separates tokens.
_WORD = re.compile(r"\w+")
_CJK = "cjk"
_COMMON = ""
_CJK_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "IDEOGRAPHIC", "BOPOMOFO")


@lru_cache(maxsize=65536)
def _script(char: str) -> str:
    """The script a character belongs to; digits and ``_`` join any script."""
    if char.isdigit() or char == "_":
        return _COMMON
    name = unicodedata.name(char, "")
    if name.startswith(_CJK_SCRIPTS):
        return _CJK
    # "LATIN SMALL LETTER A", "CYRILLIC SMALL LETTER A", "GREEK ...": the first word.
    return name.split(" ", 1)[0]


def _script_runs(token: str) -> list[tuple[str, str]]:
    """Split a token into (script, run) pairs; common characters stick to their run."""
    runs: list[tuple[str, str]] = []
    current, start = _COMMON, 0
    for index, char in enumerate(token):
        script = _script(char)
        if script in (_COMMON, current):
            continue
        if current == _COMMON:
            current = script
            continue
        runs.append((current, token[start:index]))
        current, start = script, index
    runs.append((current, token[start:]))
    return runs


def stem(word: str) -> str:
    """Light suffix stripping for ASCII words longer than four characters."""
    if len(word) <= 4 or not word.isascii():
        return word
    if word.endswith("s") and len(word) - 1 >= 4 and not word.endswith("ss"):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def _word_term(word: str) -> str | None:
    """The term of one non-CJK word, or None when it is dropped.

    Cached: vocabularies are Zipfian, so a small cache answers most words.
    """
    if (len(word) < 2 and not word.isdigit()) or word in STOPWORDS:
        return None
    return stem(word)


def _emit(run: str, script: str, out: list[str]) -> None:
    if script == _CJK:
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    elif (term := _word_term(run)) is not None:
        out.append(term)


def tokenize(text: str) -> list[str]:
    """Every term of ``text`` in order, repeats kept."""
    lowered = text.lower()
    if lowered.isascii():  # most text: every token is one word, with no scripts to split
        return [term for term in map(_word_term, _WORD.findall(lowered)) if term is not None]
    out: list[str] = []
    for match in _WORD.finditer(lowered):
        token = match.group()
        if token.isascii():
            if (term := _word_term(token)) is not None:
                out.append(term)
            continue
        for script, run in _script_runs(token):
            _emit(run, script, out)
    return out


# Terms found in another process (a bulk import's contents, tokenized on the other
# core ahead of the writer), each taken once.
_PRIMED_KEPT = 8192
_primed: dict[str, frozenset[str]] = {}


def prime(found: Iterable[tuple[str, frozenset[str]]]) -> None:
    """Give :func:`terms` the terms of texts, found by it elsewhere: each is answered
    from here once. At most a few thousand are held; more start afresh."""
    if len(_primed) >= _PRIMED_KEPT:
        _primed.clear()
    _primed.update(found)


def unprime(texts: Iterable[str]) -> None:
    """Forget the primed terms of ``texts`` not taken yet."""
    for text in texts:
        _primed.pop(text, None)


def terms(text: str) -> frozenset[str]:
    """The distinct terms of ``text``: what coverage and Jaccard count."""
    found = _primed.pop(text, None)
    return frozenset(tokenize(text)) if found is None else found
