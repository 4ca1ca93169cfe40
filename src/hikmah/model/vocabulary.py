"""The words of the trace model: kinds, statuses, privacy classes, prediction types,
classes of source, review holds, and the memory tools an import reads.

Standard library only, and nothing but these names: the CLI imports this on
every shell command (its choices of ``--kind`` and ``--privacy``), and the
kernel's Structs use the same Literals as their field types, so a word is
added here once and reaches the wire, the store and the flags.
"""

from __future__ import annotations

from typing import Literal, get_args

# A prediction is written with predict (which records the forecast), never with remember.
RememberedKind = Literal[
    "observation",
    "episode",
    "belief",
    "procedure",
    "commitment",
    "preference",
    "constraint",
    "outcome",
    "correction",
]
Kind = Literal[RememberedKind, "prediction"]
Status = Literal["active", "superseded", "fulfilled", "purged"]
Privacy = Literal["public", "private", "sensitive"]
PredictionType = Literal["noul", "choice", "score"]
# Who wrote a trace, by its provenance (hikmah.model.trace.source_class).
SourceClass = Literal["person", "agent", "tool", "other"]
# Why a trace an agent wrote is held from agents until a person decides (hikmah.index.review).
Hold = Literal["pending", "quarantined"]
# ``hikmah import --from``: hikmah.migration has a reader for each.
ImportSource = Literal["mcp-memory", "claude-mem", "mem0", "basic-memory", "claude-md"]

KINDS: tuple[Kind, ...] = get_args(Kind)
REMEMBERED_KINDS: tuple[RememberedKind, ...] = get_args(RememberedKind)
STATUSES: tuple[Status, ...] = get_args(Status)
PRIVACIES: tuple[Privacy, ...] = get_args(Privacy)
PREDICTION_TYPES: tuple[PredictionType, ...] = get_args(PredictionType)
SOURCE_CLASSES: tuple[SourceClass, ...] = get_args(SourceClass)
IMPORT_SOURCES: tuple[ImportSource, ...] = get_args(ImportSource)

# The rules a session starts with (memory.context) and writeback renders.
STANDING_KINDS: tuple[Kind, ...] = ("constraint", "preference", "procedure")
