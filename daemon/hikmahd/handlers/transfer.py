"""``memory.export``, ``memory.import`` and ``memory.import_ledger``: memory in and out, as JSON
Lines of traces and ledgers of the reference.

The mapping is the kernel's (:mod:`hikmah.transfer`); this module looks up
what the store already holds, submits the operations so that they share
commits yet take effect in file order, and counts what happened. Each call
is bounded (at most 500 lines, and frames are at most 1 MiB), so a client
imports a large file in many calls, showing progress between them; the
daemon keeps no state between calls (docs/protocol.md, "Import and export").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from hikmah import queries, transfer
from hikmah.errors import HikmahError
from hikmah.headtext import parse_head
from hikmah.ledger import Head, decode_record
from hikmah.rules import Operation, Written

from ..context import Context
from ..rpc import JSON, Params, Registry, to_json

registry = Registry()

MAX_LINES = 500
# A page of export stays well under the 1 MiB frame limit (one trace larger than
# this still goes out alone: it came in through a frame of at most 1 MiB).
EXPORT_PAGE_BYTES = 512 * 1024
_ENCODER = msgspec.json.Encoder()


class ExportParams(Params, frozen=True):
    after: str | None = None  # the "next" of the previous page; None for the first
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 500
    include_superseded: bool = False


@registry.blocking("memory.export", ExportParams)
def export(ctx: Context, params: ExportParams) -> JSON:
    """One page of traces in write order, as JSON Lines objects; purged ones never."""
    lines: list[Any] = []
    size = 0
    with ctx.services.store.snapshot() as snapshot:
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
                return {"traces": lines, "next": lines[-1]["id"]}
            lines.append(line)
    return {"traces": lines, "next": after}


class ImportLine(Params, frozen=True):
    line: Annotated[int, msgspec.Meta(ge=1)]
    trace: dict[str, Any]


class SettleLine(Params, frozen=True):
    line: Annotated[int, msgspec.Meta(ge=1)]
    id: str
    status: Literal["fulfilled", "superseded"]


class ImportParams(Params, frozen=True):
    lines: Annotated[tuple[ImportLine, ...], msgspec.Meta(max_length=MAX_LINES)] = ()
    # After every line of a file: the exported statuses that still need checking.
    settle: Annotated[tuple[SettleLine, ...], msgspec.Meta(max_length=MAX_LINES)] = ()


@registry.method("memory.import", ImportParams)
async def import_(ctx: Context, params: ImportParams) -> JSON:
    """Write JSON Lines trace objects like any write; idempotent by trace id."""
    refused: list[JSON] = []
    notes: list[JSON] = []
    planned: list[tuple[int, Operation]] = []
    for item in params.lines:
        try:
            operation, note = transfer.trace_operation(item.trace, session=ctx.session)
        except HikmahError as exc:
            refused.append({"line": item.line, "reason": str(exc)})
            continue
        planned.append((item.line, operation))
        if note is not None:
            notes.append({"line": item.line, "note": note})
    applied = await _apply(ctx, planned)
    refused += [{"line": line, "reason": reason} for line, reason in applied.refused]

    settled = 0
    fulfils: list[tuple[int, Operation]] = []
    for due in params.settle:
        found = ctx.services.store.read(queries.lookup, due.id)
        action = transfer.settle(due.id, due.status, found, session=ctx.session)
        if action is None:
            settled += int(found is not None)
        elif isinstance(action, str):
            notes.append({"line": due.line, "note": action})
        else:
            fulfils.append((due.line, action))
    done = await _apply(ctx, fulfils)
    settled += done.written + done.already
    notes += [{"line": line, "note": f"not fulfilled: {reason}"} for line, reason in done.refused]
    refused.sort(key=lambda r: r["line"])
    return {
        "written": applied.written,
        "already": applied.already,
        "refused": refused,
        "settled": settled,
        "notes": notes,
    }


class LedgerLine(Params, frozen=True):
    line: Annotated[int, msgspec.Meta(ge=1)]
    text: str  # the record line exactly as in the file (its bytes are hashed)


class HeadParams(Params, frozen=True):
    seq: Annotated[int, msgspec.Meta(ge=0)]
    hash: str


class ImportLedgerParams(Params, frozen=True):
    records: Annotated[tuple[LedgerLine, ...], msgspec.Meta(max_length=MAX_LINES)]
    after: HeadParams | None = None  # the "tail" of the previous call; None at the start
    expect_head: str | None = None  # SEQ:HASH pinned by the person
    check_only: bool = False


@registry.method("memory.import_ledger", ImportLedgerParams)
async def import_ledger(ctx: Context, params: ImportLedgerParams) -> JSON:
    """Verify records of a reference ledger continuing a chain, and import those that verify."""
    after = None if params.after is None else Head(seq=params.after.seq, hash=params.after.hash)
    pinned = None if params.expect_head is None else Head(*parse_head(params.expect_head))
    rows = [(r.line, r.text.encode()) for r in params.records]
    check = transfer.check_chain(rows, after=after, pinned=pinned)
    reply: dict[str, JSON] = {
        "checked": check.checked,
        "tail": to_json(check.tail),
        "break": to_json(check.broken),
    }
    if params.check_only:
        return reply

    refused: list[tuple[int, int, str]] = []
    notes: list[JSON] = []
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
            notes.append({"line": line, "seq": record.seq, "note": note})
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
    reply.update(
        written=applied.written,
        already=applied.already,
        linked=linked,
        refused=[{"line": line, "seq": seq, "reason": reason} for line, seq, reason in refused],
        notes=notes,
    )
    return reply


class _Applied:
    def __init__(self) -> None:
        self.written = 0
        self.already = 0
        self.refused: list[tuple[int, str]] = []


async def _apply(ctx: Context, planned: Sequence[tuple[int, Operation]]) -> _Applied:
    """Submit operations in their order; skip what an earlier import did already."""
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
    outcomes = await ctx.services.writer.submit_all(operations, in_order=True)
    for (line, _), outcome in zip(todo, outcomes, strict=True):
        if isinstance(outcome, Written):
            done.written += 1
        elif transfer.is_taken_id(outcome):
            done.already += 1  # the same id twice in one file
        else:
            done.refused.append((line, str(outcome)))
    return done
