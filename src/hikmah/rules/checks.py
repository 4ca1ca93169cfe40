"""What a trace must be whoever wrote it, checked from the trace alone: when it is
written, and on every device that receives it from another (docs/sync.md, "Which
rules are checked where")."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from hikmah.model.display import is_agent_locator
from hikmah.model.errors import (
    ConflictError,
    InvalidInput,
    NotFound,
    ProvenanceRefused,
)
from hikmah.model.secrets import check_fields
from hikmah.model.trace import (
    Trace,
    is_model_source,
)
from hikmah.model.vocabulary import Status

_SCOPE = re.compile(r"global|[a-z][a-z0-9_-]{0,31}:\S.*", re.S)
# In UTF-8 bytes: each becomes part of an index key, and LMDB keys hold 511.
MAX_TAG = 200
MAX_CLAIM_KEY = 400
MAX_SCOPE = 400


def check_size(content: str, limit: int) -> None:
    """Refuse a text over ``limit`` UTF-8 bytes (the policy's ``max_trace_bytes``).

    Raises:
        InvalidInput: saying how large it is and what to do instead.
    """
    size = len(content)  # characters first: a huge text is refused without encoding it
    if size <= limit:
        size = len(content.encode())
    if size > limit:
        raise InvalidInput(
            f"content is {_size(size)}, over the policy's max_trace_bytes ({_size(limit)}):"
            " remember what matters in it, or where the document is"
        )


def _size(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB" if count >= 1 << 20 else f"{count / 1024:.0f} KiB"


def check_trace(trace: Trace, *, sealed: bool = False) -> None:
    """The rules a trace obeys whoever wrote it, checked from the trace alone: when it is
    written, and on every device that receives it from another (docs/sync.md, "Which
    rules are checked where").

    Args:
        sealed: the writer's text (content, tags, claim, locator) is sealed and
            cannot be opened here; the rest is checked.

    Raises:
        InvalidInput, SecretDetected, ProvenanceRefused: the first rule it breaks.
    """
    if not sealed and not trace.content:
        raise InvalidInput("content is empty: say what should be remembered")
    if trace.kind == "prediction":
        _check_forecast(trace)
    elif trace.family or trace.answer_space or trace.prediction_type or trace.probability:
        raise InvalidInput("family, answer_space, type and p belong to predictions only")
    elif trace.value is not None and not (trace.kind == "outcome" and trace.fulfills):
        raise InvalidInput("value belongs to a prediction, or to the outcome that resolves one")
    for name, number in _trace_scores(trace):
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise InvalidInput(f"{name} must be between 0 and 1")
    if trace.fulfills is not None and trace.kind != "outcome":
        raise InvalidInput("only an outcome fulfills a commitment (kind outcome)")
    if (trace.claim_key is None) != (trace.claim_value is None):
        raise InvalidInput("give both claim_key and claim_value, or neither")
    if trace.claim_key is not None and not trace.claim_key:
        raise InvalidInput("claim_key is empty")
    if trace.claim_value is not None and not trace.claim_value:
        raise InvalidInput("claim_value is empty: a claim says what its key is")
    if len(trace.scope.encode()) > MAX_SCOPE:
        raise InvalidInput(f"scope is at most {MAX_SCOPE} bytes")
    if not _SCOPE.fullmatch(trace.scope):
        raise InvalidInput(
            "scope must be 'global' or 'kind:value', e.g. project:/path or person:ana"
        )
    if any(len(tag.encode()) > MAX_TAG for tag in trace.tags):
        raise InvalidInput(f"a tag is at most {MAX_TAG} bytes")
    if trace.claim_key is not None and len(trace.claim_key.encode()) > MAX_CLAIM_KEY:
        raise InvalidInput(f"claim_key is at most {MAX_CLAIM_KEY} bytes")
    if any(not tag.isprintable() for tag in trace.tags):
        raise InvalidInput("tags must be printable text without control characters")
    if trace.claim_key is not None and not trace.claim_key.isprintable():
        raise InvalidInput("claim_key must be printable text without control characters")
    check_fields(_writer_fields(trace))
    provenance = trace.provenance
    if provenance.verified and is_model_source(provenance.source):
        raise ProvenanceRefused(
            "a model: source cannot be verified: model output never verifies itself;"
            " a person can verify it by superseding it with a verified correction"
        )
    if provenance.verified and is_agent_locator(provenance.locator):
        raise ProvenanceRefused(
            "a trace written in an agent session cannot be verified; a person verifies it"
            " from their own terminal with remember --verified --supersedes ID"
        )
    if trace.supersedes is not None:
        if trace.supersedes == trace.id:
            raise InvalidInput("a trace cannot supersede itself")
        if is_model_source(provenance.source):
            raise ProvenanceRefused(
                "a model: source cannot supersede a trace: model output never corrects"
                " memory on its own; record an observation and let a person correct it"
            )


def check_superseded(trace: Trace, superseded: tuple[Trace, Status] | None) -> None:
    """What the store's state allows a correction: its target exists, is active, and is
    not verified when the correction is not."""
    if superseded is None:
        raise NotFound(f"cannot supersede {trace.supersedes}: no trace has that id")
    old, status = superseded
    if status != "active":
        raise ConflictError(
            f"cannot supersede {old.id}: it is {status}; correct the trace that replaced it"
        )
    if old.provenance.verified and not trace.provenance.verified:
        raise ProvenanceRefused(
            f"an unverified trace cannot supersede the verified trace {old.id};"
            " a person can write a verified correction"
        )


def _check_forecast(trace: Trace) -> None:
    """A prediction says what family it belongs to, how it is scored, and how sure it is."""
    if not (trace.family or "").strip():
        raise InvalidInput("a prediction needs a family (e.g. build.ci-green), to be calibrated")
    if trace.prediction_type is None or trace.probability is None:
        raise InvalidInput("a prediction needs a type (noul, choice or score) and p")
    if trace.provenance.verified:
        raise ProvenanceRefused("a forecast is never verified; an outcome resolves it")
    if trace.fulfills is not None:
        raise InvalidInput("a prediction fulfills nothing; an outcome resolves it")
    space = trace.answer_space
    if trace.prediction_type == "choice":
        if len(set(space)) < 2 or len(set(space)) != len(space):
            raise InvalidInput("a choice prediction needs an answer_space of 2+ distinct answers")
        if trace.value not in space:
            raise InvalidInput("a choice prediction's value must be one of its answer_space")
    elif space:
        raise InvalidInput("answer_space belongs to choice predictions only")


def _trace_scores(trace: Trace) -> Iterator[tuple[str, float]]:
    yield "salience", trace.salience
    yield "confidence", trace.confidence
    yield "authority", trace.provenance.authority
    if trace.probability is not None:
        yield "probability", trace.probability


def _writer_fields(trace: Trace) -> Iterator[tuple[str, str | None]]:
    yield "content", trace.content
    for index, tag in enumerate(trace.tags):
        yield f"tags[{index}]", tag
    yield "supersedes", trace.supersedes
    yield "fulfills", trace.fulfills
    for index, evidence in enumerate(trace.provenance.evidence):
        yield f"provenance.evidence[{index}]", evidence
    yield "claim_key", trace.claim_key
    yield "claim_value", trace.claim_value
    yield "source", trace.provenance.source
    yield "locator", trace.provenance.locator
    yield "scope", trace.scope
    yield "family", trace.family
    yield "value", trace.value
    for index, answer in enumerate(trace.answer_space):
        yield f"answer_space[{index}]", answer
