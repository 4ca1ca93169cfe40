"""The trace model: what one memory is, and the defaults a write starts from.

A :class:`Trace` is immutable once written. Its status (active, superseded,
fulfilled, purged) is derived state kept by the store, never a field, because
a correction is a new trace that supersedes the old one rather than an edit.
Times are epoch milliseconds (``int``); the kernel never reads the clock.
"""

from __future__ import annotations

import functools
import hashlib
import os
import unicodedata
from typing import Any

import msgspec

from hikmah.model.display import AGENT_LOCATOR_PREFIX
from hikmah.model.vocabulary import Kind, PredictionType, Privacy, SourceClass

DEFAULT_AUTHORITY = 0.5
DEFAULT_SALIENCE = 0.5
DEFAULT_CONFIDENCE = 0.5
DEFAULT_SOURCE = "unknown"
DEFAULT_PRIVACY: Privacy = "private"
GLOBAL_SCOPE = "global"


class Provenance(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a trace came from. ``source`` and ``verified`` are the writer's claims."""

    source: str = DEFAULT_SOURCE
    locator: str | None = None
    observed_at: int = 0
    authority: float = DEFAULT_AUTHORITY
    verified: bool = False
    # Traces a promoted belief rests on (consolidation); empty for direct writes.
    evidence: tuple[str, ...] = ()


class Trace(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One memory. Every field is fixed at write time."""

    id: str
    kind: Kind
    content: str
    tags: tuple[str, ...] = ()
    created_at: int
    deadline: int | None = None
    salience: float = DEFAULT_SALIENCE
    confidence: float = DEFAULT_CONFIDENCE
    privacy: Privacy = DEFAULT_PRIVACY
    provenance: Provenance = Provenance()
    claim_key: str | None = None
    claim_value: str | None = None
    supersedes: str | None = None
    scope: str = GLOBAL_SCOPE
    # Outcomes only: the commitment this outcome reports done.
    fulfills: str | None = None
    # Predictions only (kind == "prediction").
    family: str | None = None
    value: str | None = None
    answer_space: tuple[str, ...] = ()
    prediction_type: PredictionType | None = None
    probability: float | None = None


class TraceFields(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a writer says about a trace itself, ``None`` taking the default: the fields
    every way of writing shares (the base of :class:`BaseDraft` and of an imported line)."""

    content: str
    kind: Kind = "observation"
    tags: tuple[str, ...] = ()
    deadline: int | str | None = None
    salience: float | None = None
    confidence: float | None = None
    privacy: Privacy | None = None
    claim_key: str | None = None
    claim_value: str | None = None
    supersedes: str | None = None
    scope: str | None = None
    fulfills: str | None = None


class BaseDraft(TraceFields, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A trace and where it comes from, flat: what ``memory.remember`` takes (its params
    are exactly these fields)."""

    source: str | None = None
    locator: str | None = None
    authority: float | None = None
    verified: bool = False


class Draft(BaseDraft, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a writer asks for; :func:`hikmah.rules.writes.build_trace` turns it into a Trace.

    ``None`` means "take the default", so that a JSON Lines import line or an
    RPC call may give only ``kind`` and ``content``. The fields beyond
    :class:`BaseDraft` are set by the paths that need them: promotion (the
    evidence), predictions and their outcomes (the forecast).
    """

    evidence: tuple[str, ...] = ()
    family: str | None = None
    value: str | None = None
    answer_space: tuple[str, ...] = ()
    prediction_type: PredictionType | None = None
    probability: float | None = None


def draft_fields(found: msgspec.Struct) -> dict[str, Any]:
    """The fields of ``found`` (an import line, a test case) that a :class:`Draft` has too,
    by name: what a writing path copies over before it sets the rest."""
    return {name: getattr(found, name) for name in _shared_fields(type(found))}


@functools.cache
def _shared_fields(kind: type[msgspec.Struct]) -> tuple[str, ...]:
    return tuple(name for name in kind.__struct_fields__ if name in _DRAFT)


def new_trace_id(now_ms: int) -> str:
    """A time-sortable, stable id: ``tr_`` + 12 hex digits of milliseconds + 10 random.

    Ids sort by creation time across processes; the random part (40 bits)
    makes a collision within one millisecond negligible, and the store
    refuses a duplicate id anyway.
    """
    return f"tr_{now_ms & 0xFFFF_FFFF_FFFF:012x}{os.urandom(5).hex()}"


def derived_trace_id(at_ms: int | None, key: str, *, digest_size: int = 5) -> str:
    """A stable id in the shape of :func:`new_trace_id`: the same ``key`` gives the same id.

    For writes that must be idempotent (an import, an evaluation run): the
    random part is a BLAKE2b digest of ``key`` (``digest_size`` bytes; wider
    where many ids share one time), and the time is ``at_ms`` (0 when unknown).
    """
    digest = hashlib.blake2b(key.encode(), digest_size=digest_size).hexdigest()
    return f"tr_{(at_ms or 0) & 0xFFFF_FFFF_FFFF:012x}{digest}"


_DRAFT = frozenset(Draft.__struct_fields__)


def _collapse(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def normalize_claim_key(key: str) -> str:
    """Claim keys compare by Unicode NFC form, collapsed whitespace and case."""
    return _collapse(key).lower()


def normalize_claim_value(value: str) -> str:
    """Claim values compare by Unicode NFC form and collapsed whitespace; case is kept."""
    return _collapse(value)


def normalize_tag(tag: str) -> str:
    """Tags are trimmed and lowercased."""
    return tag.strip().lower()


def normalize_content(content: str) -> str:
    """The form near-duplicate detection compares: whitespace collapsed, lowercase."""
    return " ".join(content.split()).lower()


def is_model_source(source: str) -> bool:
    """``model:`` sources are model output: never verified, never authoritative."""
    return source.strip().lower().startswith("model:")


def source_class(trace: Trace) -> SourceClass:
    """``person``, ``agent``, ``tool`` or ``other``: who wrote a trace, by its provenance.

    A trace written from a detected agent session is an agent's whatever source it
    names, since the daemon stamped its locator (``agent-session:``).
    """
    source = trace.provenance.source.strip().lower()
    locator = trace.provenance.locator or ""
    if source.startswith("agent:") or locator.startswith(AGENT_LOCATOR_PREFIX):
        return "agent"
    if source.startswith("human:"):
        return "person"
    if source.startswith("tool:"):
        return "tool"
    return "other"
