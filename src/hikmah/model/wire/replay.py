"""``replay.*``: consolidation's proposals, promoting one, and ingesting a transcript."""

from __future__ import annotations

import msgspec

from hikmah.model.proposal import Proposal
from hikmah.model.trace import Trace
from hikmah.model.wire.base import NoParams, Params, Result, Signature


class ConsolidateResult(Result, frozen=True):
    proposals: list[Proposal]  # eligible first, then by confidence


class PromoteParams(Params, frozen=True):
    id: str
    verified: bool = False
    source: str | None = None


class PromoteResult(Result, frozen=True):
    """The belief written, the active traces claiming another value, and its proposal."""

    trace: Trace
    conflicts: list[str]
    proposal: str


class IngestParams(Params, frozen=True):
    path: str  # absolute: the daemon does not share the client's working directory


class MessageRefused(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A transcript's message a write rule refused (never its text)."""

    message: str  # the message's id in the transcript
    reason: str


class IngestResult(Result, frozen=True):
    path: str  # the transcript
    format: str  # claude-code or codex
    session_id: str  # the session the transcript records
    scope: str  # the project the session worked in, else global
    messages: int  # the person's words and the agent's replies read
    written: int  # traces written now
    already: int  # messages ingested before (idempotent by message id)
    refused: list[MessageRefused]  # messages a write rule refused (a credential, say)
    skipped_lines: int  # lines that were not a record of the format


METHODS = {
    "replay.consolidate": Signature(NoParams, ConsolidateResult),
    "replay.promote": Signature(PromoteParams, PromoteResult),
    "replay.ingest": Signature(IngestParams, IngestResult),
}
