"""Durable-memory candidates from the person's own words in a session transcript.

:func:`extract_candidates` proposes :class:`Candidate` memories (rules,
preferences, procedures, decisions, corrections) from the messages of a
:class:`~hikmah.learning.transcripts.Transcript` that the person typed, never from
assistant or tool output. Each carries an evidence quote that
:func:`evidence_holds` finds verbatim (after normalisation) in its message,
and a candidate that :func:`restates` an active trace is not proposed.
Extraction is rule-based and deterministic; see :func:`extract_candidates`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Literal, NamedTuple

import msgspec

from hikmah.learning.transcripts import Transcript
from hikmah.model.tokenizer import terms

CandidateKind = Literal["preference", "constraint", "procedure", "belief", "correction"]

# A sentence shorter than this is an interjection ("No, thanks."); a longer one
# is pasted material or a paragraph that lost its punctuation, not one rule.
MIN_EVIDENCE_CHARS = 12
MAX_EVIDENCE_CHARS = 300
# "Always use tabs" has three content words; fewer is too little to act on.
MIN_CONTENT_TERMS = 3
# restates(): Jaccard at or above 3/5, compared in integers.
NEAR_DUPLICATE = (3, 5)


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A durable memory proposed from one sentence of the person's words."""

    kind: CandidateKind
    content: str  # a clean standalone statement
    evidence: str  # the sentence, exactly as it appears in the message
    message_id: str
    rule: str  # the pattern that fired


# --- evidence and admission ---------------------------------------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
    }
)
_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = unicodedata.normalize("NFC", text.casefold()).translate(_QUOTES)
    return _SPACE.sub(" ", text).strip()


def evidence_holds(evidence: str, source_text: str) -> bool:
    """True when the quote appears verbatim in the source after normalisation.

    Both sides are put in Unicode NFC, case-folded, curly quotes made straight
    and whitespace runs collapsed to one space. An empty quote proves nothing
    and never holds.
    """
    quote = _normalise(evidence)
    return bool(quote) and quote in _normalise(source_text)


def restates(candidate: str, existing: Iterable[str]) -> bool:
    """True when ``candidate`` says nothing an existing text does not.

    Content words are :func:`hikmah.model.tokenizer.terms` (stopwords dropped,
    stemmed). A text restates another when their Jaccard similarity is at
    least 0.6, or when all the content words of one are among the other's
    (either way round). A text without content words restates nothing.
    """
    words = terms(candidate)
    if not words:
        return False
    need, out_of = NEAR_DUPLICATE
    for text in existing:
        other = terms(text)
        if not other:
            continue
        shared = len(words & other)
        if out_of * shared >= need * len(words | other):
            return True
        if shared in (len(words), len(other)):
            return True
    return False


# --- extraction -------------------------------------------------------------

_BULLET = re.compile(r"(?:[-*+•]|\d{1,3}[.)])\s+")
_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]\u201d\u2019]))\s+")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "incl.", "approx.")
_STRAIGHT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})

_FLAGS = re.I | re.S
_FILLERS = re.compile(
    r"(?:(?:also|and|oh|ok|okay|so|again|btw|by\s+the\s+way|fyi|note|reminder"
    r"|remember(?:\s+to)?|make\s+sure\s+(?:to|you)|just"
    r"|please|one\s+more\s+thing|for\s+the\s+record|importantly|important|heads\s+up"
    r"|as\s+a\s+rule|in\s+general|generally|rule)\b[\s,:;!\u2014\u2013-]*)+",
    re.I,
)
_QUESTION_END = re.compile(r"\?[\"')\]\s]*$")
_HYPOTHETICAL = re.compile(
    r"(?:if|what\s+if|suppose|supposing|imagine|unless|in\s+case|should\s+(?:we|i|you)"
    r"|could\s+(?:we|i|you)|would\s+(?:we|i|you|it)|shall\s+(?:we|i)|can\s+(?:we|i|you)"
    r"|do\s+(?:we|you)|does|is\s+it|are\s+we|maybe|perhaps|wonder)\b",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|might|not\s+sure|i\s+wonder|i\s+guess|i\s+think"
    r"|wondering)\b",
    re.I,
)
# One-off instructions are about this task, not the ones weeks from now.
_ONE_OFF = re.compile(
    r"\b(?:for\s+now|right\s+now|this\s+time|for\s+the\s+moment|at\s+the\s+moment|temporarily"
    r"|today|tonight|tomorrow|(?:for|in)\s+this\s+(?:pr|task|ticket|change|commit|branch|one"
    r"|session))\b",
    re.I,
)
_CORRECTION = re.compile(
    r"(?:(?:no|nope|nah|wrong|not\s+quite|incorrect|correction)\s*[,.:;!\u2014\u2013-]+(?:\s+|$)"
    r"|actually\b[\s,:;\u2014\u2013-]*"
    r"|that(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|correct|true|it"
    r"|what\s+i\s+(?:meant|asked|said)))\b[\s,.:;!\u2014\u2013-]*"
    r"|(?:you(?:'re|\s+are|\s+were)|i\s+was)\s+wrong\b[\s,.:;!\u2014\u2013-]*)+",
    re.I,
)
# A correction that only points back ("No, I meant the other one") needs the
# conversation to make sense, so it is no standalone statement.
_DEICTIC = re.compile(
    r"(?:it|it's|that|this|those|these|he|she|they|you|i\s+(?:meant|mean|said|asked)"
    r"|the\s+other|same)\b",
    re.I,
)
_STANDING = re.compile(
    r"(?:from\s+now\s+on|going\s+forward|from\s+here\s+on(?:\s+out)?|in\s+(?:the\s+)?future"
    r"|henceforth)\b[\s,:;\u2014\u2013-]*",
    re.I,
)
_ALWAYS_NEVER = re.compile(
    # "We always ..." states a practice; "you always ..." is a complaint
    # unless a modal makes it an instruction ("you should always ...").
    r"(?:we\s+(?:should\s+|must\s+|need\s+to\s+|have\s+to\s+|will\s+)?"
    r"|you\s+(?:should|must|need\s+to|have\s+to|will)\s+)?"
    r"(?P<word>always|never)\s+(?P<rest>\S.*)",
    _FLAGS,
)
# "Never mind", "always the same error": the adverb does not start a rule.
_NOT_A_RULE = frozenset(
    {
        *("mind", "the", "a", "an", "this", "that", "these", "those", "it", "its"),
        *("been", "seen", "heard", "had", "was", "were", "is", "are", "knew", "thought"),
        *("happens", "happened", "works", "worked", "fails", "failed", "again"),
    }
)
# "Don't worry, ...", "don't know": not an instruction.
_NOT_AN_INSTRUCTION = frozenset(
    {
        *("worry", "bother", "mind", "know", "think", "care", "understand", "see", "get"),
        *("need", "want", "like", "have", "be", "remember", "recall"),
    }
)
_DONT_EVER = re.compile(r"(?:don'?t|do\s+not)\s+ever\s+(?P<rest>\S.*)", _FLAGS)
_DO_NOT = re.compile(
    r"(?:don'?t|do\s+not|(?:we|you)\s+(?:should\s+not|shouldn'?t|must\s+not|mustn'?t))"
    r"\s+(?P<rest>\S.*)",
    _FLAGS,
)
_MODAL = re.compile(
    r"\b(?:must|should|shall)\s+(?:always|never)\b|\b(?:must\s+not|mustn'?t)\b", re.I
)
_PREFER = re.compile(
    r"(?:i|we)(?:'d|\s+would|\s+do|\s+really|\s+strongly|\s+generally|\s+much|\s+definitely"
    r"|\s+still)*\s+prefer\s+(?P<rest>\S.*)",
    _FLAGS,
)
_PREFERENCE_IS = re.compile(
    r"(?:my|our)\s+preference\s+is\s+(?:to\s+|for\s+)?(?P<rest>\S.*)", _FLAGS
)
_USE_INSTEAD = re.compile(
    r"(?:(?:we|i)\s+)?use\s+(?P<rest>\S.*?\s(?:instead\s+of|rather\s+than)\s+\S.*)", _FLAGS
)
_USE_NOT = re.compile(r"(?:(?:we|i)\s+)?use\s+(?P<rest>\S.*?,\s*(?:and\s+)?not\s+\S.*)", _FLAGS)
_VERBS = (
    r"(?:run|use|call|execute|type|invoke|open|set|make|push|pull|build|add|put|start|stop"
    r"|restart|edit|update|create|install|check|pass|bump|tag|merge|rebase|deploy|ssh|source"
    r"|export|cd|copy|delete|remove|regenerate|generate|write|ask|ping|post|send|commit"
    r"|squash|test|lint|format|wait|go|do|follow|log|read)"
)
_TO_DO = re.compile(rf"to\s+[^,]{{2,80}},\s*(?:just\s+|always\s+|first\s+)?{_VERBS}\b", re.I)
_WHEN_DO = re.compile(
    rf"(?:before|after|whenever|every\s+time|each\s+time)\s+[^,]{{2,80}},\s*"
    rf"(?:just\s+|always\s+|first\s+|please\s+)?{_VERBS}\b",
    re.I,
)
_STEPS = re.compile(
    r"\bfirst\b.*\bthen\b|,\s*(?:and\s+)?then\s|\bafter\s+that\b|\bstep\s+\d", _FLAGS
)
_DECIDED = re.compile(
    r"(?:we|i|the\s+team)(?:'ve|'d|'re|\s+have|\s+had|\s+are)?\s+(?:just\s+|finally\s+|already\s+)?"
    r"(?:decided|agreed|settled\s+on|chose|chosen|went\s+with|going\s+with"
    r"|standardi[sz]ed\s+on)\b",
    re.I,
)
_LETS = re.compile(
    r"let'?s\s+(?P<rest>(?:go|stick)\s+with\s+\S.*|standardi[sz]e\s+on\s+\S.*"
    r"|settle\s+on\s+\S.*|switch\s+to\s+\S.*)",
    _FLAGS,
)


class _Match(NamedTuple):
    kind: CandidateKind
    content: str
    rule: str


def extract_candidates(transcript: Transcript, *, existing: Iterable[str] = ()) -> list[Candidate]:
    """Durable-memory candidates from the person's own messages, in order.

    Only messages with ``person=True`` are read. Each message is split into
    sentences (lines first, then ``.``, ``!`` or ``?`` and a space; fenced or
    indented code, ``>`` quotes and list bullets are left out), and each
    sentence yields at most one candidate. Leading fillers ("Also,",
    "Please", "btw", "Remember to") are ignored. Patterns, first match wins:

    * correction: "No, …", "Actually …", "That's wrong …", "You're wrong …";
      the rest is classified by the patterns below for its content, and a
      rest that only points back ("No, I meant that one") is skipped;
    * constraint: "always …" / "never …" (also after "we" or "you should"),
      "don't ever …", "do not …" / "don't …", and "… must never / must not …"
      anywhere;
    * preference: "I prefer …" / "we'd prefer …", "my preference is …",
      "use X instead of / rather than Y", "use X, not Y";
    * procedure: "To deploy, run …", "Before/after/whenever …, run …";
    * belief: "we decided / agreed / chose …", "let's go with / stick with /
      switch to …", "from now on / going forward …"; a procedure instead
      when it describes steps ("first … then …").

    Skipped: questions (ending in ``?``), hypotheticals (starting with "if",
    "what if", "should we", "maybe", ...), hedged sentences ("maybe",
    "probably", "I think" anywhere), one-offs ("for now", "this time", "in
    this PR"), sentences under 12 or over 300 characters, and contents with
    fewer than 3 content words. A conditional rule that does not open with
    its condition ("Never deploy if the build is red") is kept.

    Every candidate's evidence is the sentence as it stands in the message,
    and a candidate is emitted only if :func:`evidence_holds` confirms it.
    A candidate that :func:`restates` an earlier one, or one of ``existing``
    (the contents of active traces), is dropped.
    """
    known = list(existing)
    found: list[Candidate] = []
    for message in transcript.messages:
        if not message.person:
            continue
        for sentence in _sentences(message.text):
            match = _match_sentence(sentence)
            if match is None:
                continue
            # By construction the sentence is a slice of the text; the check
            # keeps that promise if the splitter ever changes.
            if not evidence_holds(sentence, message.text):
                continue
            if restates(match.content, known):
                continue
            known.append(match.content)
            found.append(
                Candidate(
                    kind=match.kind,
                    content=match.content,
                    evidence=sentence,
                    message_id=message.id,
                    rule=match.rule,
                )
            )
    return found


def _sentences(text: str) -> Iterator[str]:
    """The sentences of prose in ``text``, each a slice of it."""
    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith(">") or line.startswith(("    ", "\t")):
            continue
        body = stripped
        if bullet := _BULLET.match(body):
            body = body[bullet.end() :]
        start = 0
        for boundary in _BOUNDARY.finditer(body):
            piece = body[start : boundary.start()]
            if piece.lower().endswith(_ABBREVIATIONS):
                continue
            if piece:
                yield piece
            start = boundary.end()
        if body[start:]:
            yield body[start:]


def _match_sentence(sentence: str) -> _Match | None:
    if not MIN_EVIDENCE_CHARS <= len(sentence) <= MAX_EVIDENCE_CHARS:
        return None
    if _QUESTION_END.search(sentence) or _HEDGE.search(sentence) or _ONE_OFF.search(sentence):
        return None
    core = _strip_fillers(sentence.translate(_STRAIGHT))
    if cue := _CORRECTION.match(core):
        rest = _strip_fillers(core[cue.end() :])
        if not rest or _HYPOTHETICAL.match(rest):
            return None
        inner = _classify(rest)
        if inner is not None:
            match = _Match("correction", inner.content, "correction")
        elif _DEICTIC.match(rest):
            return None
        else:
            match = _Match("correction", _clean(rest), "correction")
    else:
        if _HYPOTHETICAL.match(core):
            return None
        found = _classify(core)
        if found is None:
            return None
        match = found
    if len(terms(match.content)) < MIN_CONTENT_TERMS:
        return None
    return match


def _classify(core: str) -> _Match | None:
    """The first constraint, preference, procedure or decision pattern."""
    standing = _STANDING.match(core)
    if standing:
        core = _strip_fillers(core[standing.end() :])
        if not core or _HYPOTHETICAL.match(core):
            return None
    if (m := _ALWAYS_NEVER.match(core)) and _first_word(m["rest"]) not in _NOT_A_RULE:
        return _Match("constraint", _clean(f"{m['word']} {m['rest']}"), "always-never")
    if m := _DONT_EVER.match(core):
        return _Match("constraint", _clean(f"never {m['rest']}"), "always-never")
    if (m := _DO_NOT.match(core)) and _first_word(m["rest"]) not in _NOT_AN_INSTRUCTION:
        return _Match("constraint", _clean(f"do not {m['rest']}"), "do-not")
    if _MODAL.search(core):
        return _Match("constraint", _clean(core), "must")
    if m := _PREFER.match(core) or _PREFERENCE_IS.match(core):
        return _Match("preference", _clean(f"prefer {m['rest']}"), "prefer")
    if m := _USE_INSTEAD.match(core) or _USE_NOT.match(core):
        return _Match("preference", _clean(f"use {m['rest']}"), "use-not")
    if _TO_DO.match(core) or _WHEN_DO.match(core):
        return _Match("procedure", _clean(core), "procedure")
    if m := _LETS.match(core):
        content = m["rest"]
    elif _DECIDED.match(core) or standing:
        content = core
    else:
        return None
    if _STEPS.search(content):
        return _Match("procedure", _clean(content), "procedure")
    return _Match("belief", _clean(content), "decision" if not standing else "from-now-on")


def _first_word(text: str) -> str:
    return text.split(maxsplit=1)[0].strip(",.;:!").lower()


def _strip_fillers(text: str) -> str:
    text = text.strip()
    if filler := _FILLERS.match(text):
        text = text[filler.end() :]
    return text


def _clean(text: str) -> str:
    """A standalone statement: one line, capitalised, no closing punctuation."""
    text = " ".join(text.split()).rstrip(" .!;:,")
    return text[:1].upper() + text[1:]
