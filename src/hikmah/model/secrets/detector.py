"""Finding credentials: the shapes in their order, then the other checks, over the text
and its normalised copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.assignments import assignments, key_values
from hikmah.model.secrets.calls import call_pairs, connect_calls
from hikmah.model.secrets.checks import Shape, pem_spans
from hikmah.model.secrets.commands import command_passwords
from hikmah.model.secrets.named import named_assignments, named_values
from hikmah.model.secrets.needles import CASED_NEEDLES, FOLDED_NEEDLES, NEEDLELESS
from hikmah.model.secrets.normalise import normalise
from hikmah.model.secrets.prose import prose_passwords, strong_pairs
from hikmah.model.secrets.shapes import PEM, SHAPES
from hikmah.model.secrets.values import MASK_RUN


def _shape_matches(shape: Shape, text: str) -> Iterable[re.Match[str]]:
    for match in shape.pattern.finditer(text):
        if shape.accept is None or shape.accept(match):
            yield match


def findings(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the label and the span to withhold of every credential in ``text``."""
    chosen = CASED_NEEDLES.selected(text) | FOLDED_NEEDLES.selected(text.lower())
    # The shapes in their order, then the checks: the first finding names the refusal.
    for position in sorted(NEEDLELESS.union(p for p in chosen if isinstance(p, int))):
        shape = SHAPES[position]
        if shape is PEM:
            # The whole block, not only its header.
            yield from ((shape.label, span) for span in pem_spans(text))
            continue
        group = "secret" if "secret" in shape.pattern.groupindex else 0
        for match in _shape_matches(shape, text):
            if MASK_RUN.search(match.group(group)) is None:
                yield shape.label, match.span(group)
    if "assignments" in chosen:
        yield from assignments(text)
        yield from key_values(text)
    if "named values" in chosen:
        yield from named_values(text)
    if "named assignments" in chosen:
        yield from named_assignments(text)
        if "(" in text:
            yield from call_pairs(text)
    if "connect calls" in chosen:
        yield from connect_calls(text)
    if "prose passwords" in chosen:
        yield from prose_passwords(text)
    if "command passwords" in chosen:
        yield from command_passwords(text)
    if "strong pairs" in chosen:
        yield from strong_pairs(text)


def find_secret(text: str) -> str | None:
    """Find a credential in a text.

    Args:
        text: Any writer-controlled text.

    Returns:
        A short label of the kind of credential found (``"GitHub token"``,
        ``"password assignment"``, ``"password in URL"``), or None.
    """
    for label, _span in findings(text):
        return label
    normalised = normalise(text)
    if normalised is not None:
        for label, _span in findings(normalised.text):
            return label
    return None
