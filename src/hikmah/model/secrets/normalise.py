"""The normalised copy of a text that detection reads besides the text itself.

Detection reads the text as written and, when it differs, a normalised copy:
each non-ASCII character in NFKC form (fullwidth letters become ASCII),
invisible characters dropped (Unicode format characters, category Cf, such as
the zero-width space and joiners, and the other default-ignorable ones),
Cyrillic and Greek letters drawn like Latin ones folded to them, and a token
that starts with a known prefix (``eyJ``, ``ghp_``, ``AKIA``...) joined across
the spaces or line breaks that split it, as long as the pieces are not words;
and a run of 16 or more single characters each followed by a space ("g h p _
E E h V ...") joined.
What is stored is never changed; :func:`.redaction.redact` maps what it finds in the copy
back to the span of the original text it came from. Pure ASCII text with no
prefixed token followed by whitespace costs one scan and no copy.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass

from hikmah.model.secrets.values import TOKEN_PREFIXES

# Characters that render as nothing, so they can sit inside a token unseen: the
# format characters (Unicode category Cf: zero-width space and joiners, bidi
# controls, the soft hyphen, the BOM) and the other default-ignorable ones
# (combining grapheme joiner, Hangul fillers, variation selectors).
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u180b-\u180d\u3164\ufe00-\ufe0f\uffa0]"
)
# Cyrillic and Greek letters drawn like Latin ones (NFKC leaves them be).
_HOMOGLYPHS = str.maketrans(
    "аеорсухіјѕһԁԛԝӏ"  # Cyrillic lowercase
    "АВЕКМНОРСТУХІЈЅԚԜҮ"  # Cyrillic uppercase
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek uppercase
    "οιυνκρα",  # Greek lowercase
    "aeopcyxijshdqwlABEKMHOPCTYXIJSQWYABEZHIKMNOPTYXoiuvkpa",
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]++")

# A token broken over lines or by spaces: it starts with a known prefix and goes on
# in pieces that are not words (a word ends the token). The lookbehind excludes the
# first piece's alphabet, so each piece is scanned once; "=" ends a name
# (id_token=eyJ...) as well as a base64 token, hence only at the end.
_SPLIT_START = re.compile(
    r"(?<![A-Za-z0-9_.+/-])(?:" + TOKEN_PREFIXES + r")[A-Za-z0-9_.+/-]*+={0,2}+(?=[ \t\r\n])"
)
_SPLIT_GAP = re.compile(r"[ \t]{0,8}+(?:\r?\n[ \t]{0,8}+)?")
_SPLIT_PIECE = re.compile(r"[A-Za-z0-9_.+/=-]++")
_WORD_PIECE = re.compile(r"(?:[A-Z]?[a-z]{1,40}+|[0-9]{1,3}+)\.?")
_MAX_JOINED = 8192
# A token typed one character at a time with a space between ("g h p _ E E h V ..."):
# 16 or more single characters, each followed by one space or tab.
_SPACED = re.compile(r"(?<!\S)(?:\S[ \t]){15,}\S(?!\S)")


class _Layer:
    """One step of normalisation: a new text made of pieces of an old one, and the
    way back from a position in the new text to one in the old."""

    __slots__ = ("_copied", "_origins", "_pieces", "_starts", "length")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._starts: list[int] = []
        self._origins: list[int] = []
        self._copied: list[bool] = []
        self.length = 0

    def add(self, piece: str, origin: int, copied: bool = True) -> None:
        """Append ``piece``: the old text from ``origin`` on, character for character
        when ``copied``, else what the one old character at ``origin`` became."""
        if not piece:
            return
        self._pieces.append(piece)
        self._starts.append(self.length)
        self._origins.append(origin)
        self._copied.append(copied)
        self.length += len(piece)

    def text(self) -> str:
        return "".join(self._pieces)

    def old(self, position: int) -> int:
        """The old position of the character at ``position`` of the new text."""
        i = bisect_right(self._starts, position) - 1
        return self._origins[i] + (position - self._starts[i] if self._copied[i] else 0)


@dataclass(frozen=True, slots=True)
class _Normalised:
    """The text detection reads besides the original, and the way back to it."""

    text: str
    layers: tuple[_Layer, ...]

    def original(self, span: tuple[int, int]) -> tuple[int, int]:
        """The span of the original text that ``span`` of this one came from."""
        first, last = span[0], max(span[0], span[1] - 1)
        for layer in reversed(self.layers):
            first, last = layer.old(first), layer.old(last)
        return first, last + 1


@functools.lru_cache(maxsize=4096)
def _normalised_char(char: str) -> str:
    """What one non-ASCII character becomes: nothing if invisible, else its NFKC form
    with homoglyphs folded."""
    if _INVISIBLE.match(char) is not None:
        return ""
    return unicodedata.normalize("NFKC", char).translate(_HOMOGLYPHS)


def _unicode_layer(text: str) -> _Layer | None:
    """NFKC, invisible characters dropped and homoglyphs folded; None if that changes
    nothing. Only non-ASCII runs are looked at, and a run that needs none of it is
    copied whole."""
    layer = _Layer()
    changed = False
    cursor = 0
    for run in _NON_ASCII.finditer(text):
        layer.add(text[cursor : run.start()], cursor)
        folded = run.group().translate(_HOMOGLYPHS)
        if unicodedata.is_normalized("NFKC", folded) and _INVISIBLE.search(folded) is None:
            layer.add(folded, run.start())
            changed = changed or folded != run.group()
        else:
            changed = True
            # Character by character, so that each maps back; NFKC may expand one
            # character into several (the ligature "ﬁ" into "fi"). Characters that
            # each become one character map back one for one, so a stretch of them
            # is one piece.
            stretch: list[str] = []
            stretch_start = run.start()
            for position, char in enumerate(run.group(), run.start()):
                new = _normalised_char(char)
                if len(new) == 1:
                    if not stretch:
                        stretch_start = position
                    stretch.append(new)
                    continue
                layer.add("".join(stretch), stretch_start)
                stretch = []
                layer.add(new, position, copied=False)
            layer.add("".join(stretch), stretch_start)
        cursor = run.end()
    layer.add(text[cursor:], cursor)
    return layer if changed else None


def _split_layer(text: str) -> _Layer | None:
    """The text with the whitespace inside a split token removed; None if there is none."""
    layer: _Layer | None = None
    cursor = pos = 0
    while (start := _SPLIT_START.search(text, pos)) is not None:
        end = start.end()
        while end - start.start() < _MAX_JOINED:
            gap = _SPLIT_GAP.match(text, end)
            piece = _SPLIT_PIECE.match(text, gap.end()) if gap is not None else None
            if gap is None or piece is None or gap.end() == end:
                break
            if _WORD_PIECE.fullmatch(piece.group()) is not None:
                break
            layer = layer or _Layer()
            layer.add(text[cursor:end], cursor)
            cursor, end = gap.end(), piece.end()
        pos = end
    if layer is None:
        return None
    layer.add(text[cursor:], cursor)
    return layer


def _spaced_layer(text: str) -> _Layer | None:
    """The text with the spaces inside runs of single spaced characters removed; None
    if there is none."""
    layer: _Layer | None = None
    cursor = 0
    for run in _SPACED.finditer(text):
        layer = layer or _Layer()
        layer.add(text[cursor : run.start()], cursor)
        for position in range(run.start(), run.end(), 2):
            layer.add(text[position], position)
        cursor = run.end()
    if layer is None:
        return None
    layer.add(text[cursor:], cursor)
    return layer


def normalise(text: str) -> _Normalised | None:
    """What detection reads besides ``text`` itself, or None when that is ``text``.

    Pure ASCII text with no token followed by whitespace costs one scan.
    """
    layers: list[_Layer] = []
    current = text
    if not text.isascii() and (layer := _unicode_layer(text)) is not None:
        layers.append(layer)
        current = layer.text()
    if " " in current and (layer := _spaced_layer(current)) is not None:
        layers.append(layer)
        current = layer.text()
    if (layer := _split_layer(current)) is not None:
        layers.append(layer)
        current = layer.text()
    return _Normalised(current, tuple(layers)) if layers else None
