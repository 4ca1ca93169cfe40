"""``memory.export``, ``memory.import``, ``memory.import_ledger`` and ``memory.import_source``:
memory in and out, as JSON Lines of traces, ledgers of the reference, and the exports of
other memory tools.

The mapping is the kernel's (:mod:`hikmah.migration.transfer`, :mod:`hikmah.migration`);
this module looks up what the store already holds, submits the operations so
that they share commits (those of a file in its order), and counts what
happened. Each call is bounded (at most 500 lines or items, and frames are at
most 1 MiB), so a client imports a large file in many calls, showing progress
between them (docs/protocol.md, "Import and export"). The daemon needs no
state between calls; it keeps an import's reading of a peer's export for the
same connection's next page only so as not to read the file again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import msgspec
import trio

from hikmah import migration
from hikmah.index import queries
from hikmah.ledger.chain import decode_record
from hikmah.migration import transfer
from hikmah.model.errors import HikmahError
from hikmah.model.head import Head
from hikmah.model.headtext import parse_head
from hikmah.model.paths import project_scope
from hikmah.model.secrets import preview, redact
from hikmah.model.wire.transfer import (
    Duplicate,
    ExportedTrace,
    ExportParams,
    ExportResult,
    ImportLedgerParams,
    ImportLedgerResult,
    ImportParams,
    ImportResult,
    ImportSourceParams,
    ImportSourceResult,
    LineNote,
    LineRefusal,
    Planned,
    RecordNote,
    RecordRefusal,
    SourceRefusal,
)
from hikmah.rules.operations import Operation, Remember, Written
from hikmah.rules.writes import payloads_for

from ..context import Context
from ..exports import read_export
from ..rpc import Registry
from .asof import reading

registry = Registry()

# A page of at least this many writes is shared with the checking worker; when its
# operations are made before the worker hears of it, from the AHEAD-th on.
SHARED_PAGE = 128
AHEAD = 32
YIELD_EVERY = 64  # lines an import page reads between turns of the event loop
# A page of export stays well under the 1 MiB frame limit (one trace larger than
# this still goes out alone: it came in through a frame of at most 1 MiB).
EXPORT_PAGE_BYTES = 512 * 1024
_ENCODER = msgspec.json.Encoder()
T = TypeVar("T")


@registry.blocking("memory.export")
def export(ctx: Context, params: ExportParams) -> ExportResult:
    """One page of traces in write order, as JSON Lines objects; purged ones never."""
    lines: list[ExportedTrace] = []
    size = 0
    with reading(ctx.services, params.as_of) as snapshot:
        entries, after = queries.export_page(
            snapshot, params.after, params.limit, include_superseded=params.include_superseded
        )
        for entry in entries:
            target = entry.trace.supersedes
            found = None if target is None else queries.lookup(snapshot, target)
            keep = found is not None and transfer.exported(
                found.status, include_superseded=params.include_superseded
            )
            line = transfer.export_line(entry, keep_supersedes=target is None or keep)
            size += len(_ENCODER.encode(line))
            if lines and size > EXPORT_PAGE_BYTES:
                after = lines[-1].id
                break
            lines.append(line)
    return ExportResult(traces=lines, next=after, as_of=snapshot.point)


@registry.method("memory.import")
async def import_(ctx: Context, params: ImportParams) -> ImportResult:
    """Write JSON Lines trace objects like any write; idempotent by trace id."""
    lines = params.lines
    if not _shares(ctx, len(lines)):
        return await _import(ctx, params, shared=False)
    # The worker checks the page's ids and contents from before its first line is read.
    contents, ids = transfer.line_texts(item.trace for item in lines)
    return await _alongside_worker(ctx, contents, ids, lambda: _import(ctx, params, shared=True))


async def _import(ctx: Context, params: ImportParams, *, shared: bool) -> ImportResult:
    """:func:`import_`; with ``shared``, the checking worker checks the page meanwhile."""
    session = ctx.session
    refused: list[LineRefusal] = []
    notes: list[LineNote] = []
    planned: list[tuple[int, Operation]] = []
    for number, item in enumerate(params.lines):
        if shared and number % YIELD_EVERY == 0:
            # The page's texts go to the worker first, its answers to the memos later.
            await trio.lowlevel.checkpoint()
        try:
            operation, note = transfer.trace_operation(item.trace, session=session)
        except HikmahError as exc:
            refused.append(LineRefusal(line=item.line, reason=str(exc)))
            continue
        planned.append((item.line, operation))
        if note is not None:
            notes.append(LineNote(line=item.line, note=note))
    applied = await _apply(ctx, planned, checked=shared)
    refused += [LineRefusal(line=line, reason=reason) for line, reason in applied.refused]

    settled = 0
    fulfils: list[tuple[int, Operation]] = []
    for due in params.settle:
        found = ctx.services.store.read(queries.lookup, due.id)
        action = transfer.settle(due.id, due.status, found, session=session)
        if action is None:
            settled += int(found is not None)
        elif isinstance(action, str):
            notes.append(LineNote(line=due.line, note=action))
        else:
            fulfils.append((due.line, action))
    done = await _apply(ctx, fulfils)
    settled += done.written + done.already
    notes += [LineNote(line=line, note=f"not fulfilled: {reason}") for line, reason in done.refused]
    refused.sort(key=lambda r: r.line)
    return ImportResult(
        written=applied.written,
        already=applied.already,
        refused=refused,
        settled=settled,
        notes=notes,
    )


@registry.method("memory.import_ledger")
async def import_ledger(ctx: Context, params: ImportLedgerParams) -> ImportLedgerResult:
    """Verify records of a reference ledger continuing a chain, and import those that verify."""
    after = None if params.after is None else Head(seq=params.after.seq, hash=params.after.hash)
    pinned = None if params.expect_head is None else Head(*parse_head(params.expect_head))
    rows = [(r.line, r.text.encode()) for r in params.records]
    check = transfer.check_chain(rows, after=after, pinned=pinned)
    reply = ImportLedgerResult(checked=check.checked, tail=check.tail, break_=check.broken)
    if params.check_only:
        return reply

    refused: list[tuple[int, int, str]] = []
    notes: list[RecordNote] = []
    planned: list[tuple[int, Operation]] = []
    checks: list[tuple[int, transfer.SupersedeCheck]] = []
    seq_of: dict[int, int] = {}
    for line, text in rows[: check.checked]:
        record = decode_record(text)
        seq_of[line] = record.seq
        try:
            mapped, note = transfer.reference_operation(record, session=ctx.session)
        except HikmahError as exc:
            refused.append((line, record.seq, str(exc)))
            continue
        if note is not None:
            notes.append(RecordNote(line=line, seq=record.seq, note=note))
        if isinstance(mapped, transfer.SupersedeCheck):
            checks.append((line, mapped))
        else:
            planned.append((line, mapped))
    applied = await _apply(ctx, planned)
    refused += [(line, seq_of[line], reason) for line, reason in applied.refused]
    linked = 0
    with ctx.services.store.snapshot() as snapshot:
        for line, link in checks:
            problem = transfer.supersede_problem(
                link,
                queries.lookup(snapshot, link.old_id),
                queries.lookup(snapshot, link.new_id),
            )
            if problem is None:
                linked += 1
            else:
                refused.append((line, seq_of[line], problem))
    refused.sort()
    return msgspec.structs.replace(
        reply,
        written=applied.written,
        already=applied.already,
        linked=linked,
        refused=[RecordRefusal(line=line, seq=seq, reason=reason) for line, seq, reason in refused],
        notes=notes,
    )


# The records a reader left out are named in the first page's reply, up to this many
# (every one is counted).
MAX_SKIPPED_NAMED = 100


class _Kept(NamedTuple):
    """An import's reading, kept for the connection's next page of the same import."""

    params: tuple[str, str, tuple[tuple[str, str], ...]]
    reading: migration.Reading
    next: int


@registry.method("memory.import_source")
async def import_source(ctx: Context, params: ImportSourceParams) -> ImportSourceResult:
    """One page of an import from another memory tool: each item of the export, from
    ``start``, written as an ordinary remember (never verified), skipped as already
    imported, or refused; with ``dry_run``, judged by the same rules and not written."""
    services = ctx.services
    reading = await _reading(ctx, params)
    total = len(reading.items)
    end = min(params.start + params.limit, total)
    following = end if end < total else None
    if following is not None:
        ctx.kept["memory.import_source"] = _Kept(_read_as(params), reading, following)
    items = reading.items[params.start : end]
    now, policy, session = services.now_ms(), services.policy, ctx.session

    def judge() -> tuple[migration.Page, dict[str, str]]:
        # Planning reads each item's versions and its restatements; a dry run also asks
        # the write rules (the detector among them) what the writer would answer.
        with services.store.snapshot() as snapshot:
            page = migration.plan_page(snapshot, items)
            refused: dict[str, str] = {}
            for write in page.writes if params.dry_run else ():
                try:
                    payloads_for(snapshot, write.operation(session), now_ms=now, policy=policy)
                except HikmahError as exc:
                    refused[write.trace_id] = str(exc)
            return page, refused

    page, refused = await services.offload(judge)
    raced: set[str] = set()  # written meanwhile, by another import of the same records
    if not params.dry_run:
        operations = [write.operation(session) for write in page.writes]
        outcomes = await services.writer.submit_all(operations, person=ctx.person)
        for write, outcome in zip(page.writes, outcomes, strict=True):
            if isinstance(outcome, Written):
                continue
            if transfer.is_taken_id(outcome):
                raced.add(write.trace_id)
            else:
                refused[write.trace_id] = str(outcome)
    done = [w for w in page.writes if w.trace_id not in refused and w.trace_id not in raced]
    skips = Counter(skip.reason for skip in page.skips)
    planned = None
    if params.dry_run:
        planned = [
            Planned(
                locator=redact(w.item.locator),
                id=w.trace_id,
                action="correction" if w.correction else "new",
                kind=w.draft.kind,
                preview=preview(w.draft.content),
            )
            for w in done
        ]
    return ImportSourceResult(
        total=total,
        next=following,
        dry_run=params.dry_run,
        written=sum(1 for w in done if not w.correction),
        corrected=sum(1 for w in done if w.correction),
        already=skips["already"] + len(raced),
        older=skips["older"],
        kept_correction=skips["kept_correction"],
        purged=skips["purged"],
        # A locator names a record the peer made: shown redacted, like any preview.
        # Items too large to be traces were refused as the export was read: the
        # first page names them.
        refused=[
            SourceRefusal(locator=locator, reason=reason)
            for locator, reason in (reading.refused if params.start == 0 else ())
        ]
        + [
            SourceRefusal(locator=redact(w.item.locator), reason=refused[w.trace_id])
            for w in page.writes
            if w.trace_id in refused
        ],
        duplicates=[
            Duplicate(locator=redact(w.item.locator), of=w.duplicate_of)
            for w in done
            if w.duplicate_of is not None
        ],
        skipped=len(reading.skipped),
        skipped_named=reading.skipped[:MAX_SKIPPED_NAMED] if params.start == 0 else [],
        planned=planned,
    )


def _read_as(params: ImportSourceParams) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    return params.source, params.path, tuple(sorted(params.projects.items()))


async def _reading(ctx: Context, params: ImportSourceParams) -> migration.Reading:
    """The export as read at the first page, for the page after it on this connection;
    read (off the event loop) otherwise."""
    kept = ctx.kept.pop("memory.import_source", None)
    if isinstance(kept, _Kept) and (kept.params, kept.next) == (_read_as(params), params.start):
        return kept.reading

    scopes = {name: project_scope(Path(folder)) for name, folder in params.projects.items()}
    return await read_export(
        params.source,
        Path(params.path),
        home=Path.home(),
        projects=scopes,
        limit=ctx.services.policy.max_trace_bytes,
    )


class _Applied:
    def __init__(self) -> None:
        self.written = 0
        self.already = 0
        self.refused: list[tuple[int, str]] = []


async def _apply(
    ctx: Context, planned: Sequence[tuple[int, Operation]], *, checked: bool = False
) -> _Applied:
    """Submit operations in their order; skip what an earlier import did already.
    ``checked``: the checking worker has their contents already."""
    done = _Applied()
    todo: list[tuple[int, Operation]] = []
    with ctx.services.store.snapshot() as snapshot:
        for line, operation in planned:
            own = transfer.target_id(operation)
            if own is not None and transfer.already_done(operation, queries.lookup(snapshot, own)):
                done.already += 1
            else:
                todo.append((line, operation))
    operations = [operation for _, operation in todo]
    writer = ctx.services.writer
    if checked or not _shares(ctx, len(operations)):
        outcomes = await writer.submit_all(operations, person=ctx.person)
    else:
        # The writer is past the first few before the worker's first answer comes.
        ahead = [op.draft.content for op in operations[AHEAD:] if isinstance(op, Remember)]
        outcomes = await _alongside_worker(
            ctx, ahead, (), lambda: writer.submit_all(operations, person=ctx.person)
        )
    for (line, _), outcome in zip(todo, outcomes, strict=True):
        if isinstance(outcome, Written):
            done.written += 1
        elif transfer.is_taken_id(outcome):
            done.already += 1  # the same id twice in one file
        else:
            done.refused.append((line, str(outcome)))
    return done


def _shares(ctx: Context, size: int) -> bool:
    """Whether a page of ``size`` writes is shared with the checking worker
    (:mod:`hikmahd.prescreen`); asking starts it for the pages to come."""
    return size >= SHARED_PAGE and ctx.services.prescreen.ready()


async def _alongside_worker(
    ctx: Context, texts: Sequence[str], ids: Sequence[str], work: Callable[[], Awaitable[T]]
) -> T:
    """``await work()`` while the checking worker checks ``ids``, then ``texts``: what it
    finds clear is in the kernel's memos when the writer's rules and index reach it, and
    what they reach first they check themselves. What the memos still hold of them is
    dropped once ``work`` is done: no text stays in memory longer than its page."""
    prescreen = ctx.services.prescreen
    done: list[T] = []
    failure: Exception | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(prescreen.check, texts, ids)
            try:
                done.append(await work())
            except Exception as exc:  # raised as it is, not in the nursery's group
                failure = exc
            nursery.cancel_scope.cancel()  # what the writer is past is of no use any more
    finally:
        prescreen.forget([*ids, *texts])
    if failure is not None:
        raise failure
    return done[0]
