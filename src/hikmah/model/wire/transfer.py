"""``memory.export`` and the imports: traces out, and traces, ledgers and other tools' files in.

Each call is bounded (docs/protocol.md, "Import and export"): at most :data:`MAX_LINES`
lines, records or items, so that a client sends a large file in many calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from hikmah.model.errors import InvalidInput
from hikmah.model.head import Head
from hikmah.model.moment import AsOf, Moment
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import ImportSource, Kind, Status
from hikmah.model.wire.base import Params, Result, Signature

MAX_LINES = 500
Line = Annotated[int, msgspec.Meta(ge=1)]  # a line of the file, from 1

# --- the objects of the replies ------------------------------------------------------


class ExportedTrace(Trace, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of an export: the trace as the daemon answers it, and its status."""

    status: Status


class LineRefusal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    line: int
    reason: str  # why it was not written


class LineNote(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    line: int
    note: str  # what was done otherwise than the line says


class ChainBreak(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a ledger stops verifying: the file line, the record's seq if readable, why."""

    line: int
    seq: int | None
    reason: str


class RecordRefusal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    line: int
    seq: int  # the record's
    reason: str  # why it was not imported


class RecordNote(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    line: int
    seq: int  # the record's
    note: str  # what was done otherwise than the record says


class SourceRefusal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    locator: str  # the record in the export (redacted)
    reason: str


class Duplicate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    locator: str  # the record in the export (redacted)
    of: str  # the trace it restates


class Planned(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a dry run would write of one record."""

    locator: str  # the record in the export (redacted)
    id: str  # the trace it would be
    action: Literal["new", "correction"]
    kind: Kind
    preview: str  # its text, credentials redacted, at most 80 characters


# --- the methods ---------------------------------------------------------------------


class ExportParams(Params, frozen=True):
    after: str | None = None  # the "next" of the previous page; None for the first
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 500
    include_superseded: bool = False
    as_of: AsOf | None = None  # memory as it stood then (give every page the same record)


class ExportResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """One page of traces in write order. ``as_of`` only for a read as of the past (None
    leaves it out)."""

    traces: list[ExportedTrace]
    next: str | None  # the "after" of the next page; None after the last
    as_of: Moment | None = None  # the record read as of


class ImportLine(Params, frozen=True):
    line: Line
    trace: dict[str, Any]  # a JSON Lines trace object, as an export writes it


class SettleLine(Params, frozen=True):
    line: Line
    id: str
    status: Literal["fulfilled", "superseded"]  # as the file was exported with


class ImportParams(Params, frozen=True):
    lines: Annotated[tuple[ImportLine, ...], msgspec.Meta(max_length=MAX_LINES)] = ()
    # After every line of a file: the exported statuses that still need checking.
    settle: Annotated[tuple[SettleLine, ...], msgspec.Meta(max_length=MAX_LINES)] = ()


class ImportResult(Result, frozen=True, kw_only=True):
    written: int
    already: int  # present from an earlier import
    refused: list[LineRefusal]  # by line
    settled: int  # statuses found or made as exported
    notes: list[LineNote]


class LedgerLine(Params, frozen=True):
    line: Line
    text: str  # the record line exactly as in the file (its bytes are hashed)


class HeadParams(Params, frozen=True):
    seq: Annotated[int, msgspec.Meta(ge=0)]
    hash: str


class ImportLedgerParams(Params, frozen=True):
    records: Annotated[tuple[LedgerLine, ...], msgspec.Meta(max_length=MAX_LINES)]
    after: HeadParams | None = None  # the "tail" of the previous call; None at the start
    expect_head: str | None = None  # SEQ:HASH pinned by the person
    check_only: bool = False


class ImportLedgerResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """How far the records verify, and (unless ``check_only``) what importing those did:
    a check alone leaves out ``written`` to ``notes`` (None)."""

    checked: int  # records, from the first, that verify
    tail: Head | None  # the last that verifies: the next call's "after"
    break_: ChainBreak | None = msgspec.field(name="break")  # the first that does not
    written: int | None = None
    already: int | None = None  # present from an earlier import
    linked: int | None = None  # supersessions checked in place
    refused: list[RecordRefusal] | None = None  # by line
    notes: list[RecordNote] | None = None


class ImportSourceParams(Params, frozen=True):
    source: ImportSource
    path: str  # absolute: the daemon does not share the client's working directory
    start: Annotated[int, msgspec.Meta(ge=0)] = 0  # the "next" of the previous page
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LINES)] = MAX_LINES
    dry_run: bool = False
    # claude-mem project names -> their folders (absolute), whose project scope they take
    projects: dict[str, str] = msgspec.field(default_factory=dict)

    def check(self) -> None:
        named = [("path", self.path), *((f"projects[{n!r}]", f) for n, f in self.projects.items())]
        for what, path in named:
            if not Path(path).is_absolute():
                raise InvalidInput(
                    f"{what} must be an absolute path: the daemon does not share your"
                    " working directory"
                )


class ImportSourceResult(Result, frozen=True, kw_only=True, omit_defaults=True):
    """One page of an import from another tool. ``planned`` only in a dry run (None
    leaves it out)."""

    total: int  # items the export holds
    next: int | None  # the "start" of the next page; None after the last
    dry_run: bool
    written: int  # new traces (would be, in a dry run)
    corrected: int  # corrections of an earlier import
    already: int  # imported before
    older: int  # older than what was imported
    kept_correction: int  # changed, but a person corrected or verified the import
    purged: int  # purged since they were imported
    # The first page also names the records too large to be traces.
    refused: list[SourceRefusal]
    duplicates: list[Duplicate]  # near-duplicates of what memory holds (kept)
    skipped: int  # records the reader left out
    skipped_named: list[str]  # the first of them, each a locator and why (first page)
    planned: list[Planned] | None = None


METHODS = {
    "memory.export": Signature(ExportParams, ExportResult),
    "memory.import": Signature(ImportParams, ImportResult),
    "memory.import_ledger": Signature(ImportLedgerParams, ImportLedgerResult),
    "memory.import_source": Signature(ImportSourceParams, ImportSourceResult),
}
