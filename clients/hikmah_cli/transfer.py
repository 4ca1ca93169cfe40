"""The client side of moving memory in and out: paging an export, importing a file in calls.

Any client can drive the daemon's ``memory.export``, ``memory.import``,
``memory.import_ledger`` and ``memory.import_source`` with these
(docs/protocol.md, "Import and export" is the protocol): a file is sent in
batches that stay well under the 1 MiB frame limit, lines in file order; the
statuses a trace file was exported with are settled once every line is
written; a reference ledger is verified whole (``check_only``) before any
record is imported; another tool's export is read by the daemon itself and
imported page by page. Each function takes ``call(method, params)``, which
sends one request and returns its result, its objects read as attributes too
(:class:`~hikmah_cli.replies.Reply`; raising as the client sees fit), and a
progress callback.

Standard library only, like the rest of the CLI's hot path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hikmah.model.headtext import parse_head

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.head import Head
    from hikmah.model.wire.transfer import (
        ChainBreak,
        ExportedTrace,
        ExportResult,
        ImportLedgerResult,
        ImportResult,
        ImportSourceResult,
    )

Call = Callable[[str, dict[str, Any]], Any]
Progress = Callable[[int], None]

# Import batches stay well under the daemon's 1 MiB frame limit.
BATCH_LINES = 500
BATCH_BYTES = 512 * 1024
MAX_LINE_BYTES = 900 * 1024
EXPORT_PAGE = 500
LEDGER_KEYS = frozenset({"seq", "prev_hash", "payload", "hash"})

Row = tuple[int, bytes]  # (line number, the line's bytes)
T = TypeVar("T")


def rows_of(data: bytes) -> list[Row]:
    """The non-blank lines of a file, numbered from 1 (a CR before the LF is dropped)."""
    return [
        (number, raw.rstrip(b"\r"))
        for number, raw in enumerate(data.split(b"\n"), 1)
        if raw.strip()
    ]


def is_ledger(rows: list[Row]) -> bool:
    """Whether the file is a ledger (its first line a record), not JSON Lines of traces."""
    first, _ = json_line(rows[0][1]) if rows else (None, None)
    return isinstance(first, dict) and first.keys() >= LEDGER_KEYS


def export_pages(
    call: Call, *, include_superseded: bool, as_of: int | str | None = None
) -> Iterator[list[ExportedTrace]]:
    """Every trace, page by page, in write order (``memory.export`` until ``next`` is null);
    as of a point, every page as of the record the first one was read as of."""
    params: dict[str, Any] = {"include_superseded": include_superseded, "limit": EXPORT_PAGE}
    if as_of is not None:
        params["as_of"] = as_of
    after = None
    while True:
        page: ExportResult = call("memory.export", {**params, "after": after})
        yield page.traces
        if point := getattr(page, "as_of", None):  # a read as of the past says which record
            params["as_of"] = point.seq  # "-3d" moves on between pages
        after = page.next
        if after is None:
            return


class Requests(Protocol):
    """A connection on which a request is sent and its answer read later (the CLI's
    :class:`~hikmah_cli.session.Session`)."""

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, encoded: str | None = None
    ) -> int: ...

    def result(self, request_id: int) -> Any: ...


def import_traces(requests: Requests, rows: list[Row], progress: Progress) -> dict[str, Any]:
    """JSON Lines of traces: each line checked locally for JSON, then written by the daemon;
    the statuses the file was exported with are settled once every line is written.

    One page is in flight at a time, so the daemon writes the lines in file order; the
    next page is read and encoded while the daemon writes the one before."""
    refused: list[Any] = []  # this file's refusals and the daemon's, each a line and why
    settle: list[dict[str, Any]] = []
    report: dict[str, Any] = {"format": "traces", "lines": len(rows), "written": 0, "already": 0}
    notes: list[Any] = []
    sent: tuple[int, int] | None = None  # the page in flight: its request, the rows read

    def answered(request_id: int, done: int) -> None:
        result: ImportResult = requests.result(request_id)
        report["written"] += result.written
        report["already"] += result.already
        refused.extend(result.refused)
        notes.extend(result.notes)
        progress(done)

    for page in _paged(_encoded_lines(rows, refused, settle)):
        encoded = '{"lines":[' + ",".join(line for line, _ in page) + "]}"
        if sent is not None:
            answered(*sent)
        sent = (requests.send("memory.import", encoded=encoded), page[-1][1])
    if sent is not None:
        answered(*sent)
    progress(len(rows))
    # Statuses that only the whole file makes: fulfil what no imported outcome did.
    gone = {r["line"] for r in refused}
    pending = [s for s in settle if s["line"] not in gone]
    settled = 0
    for start in range(0, len(pending), BATCH_LINES):
        params = {"settle": pending[start : start + BATCH_LINES]}
        result: ImportResult = requests.result(requests.send("memory.import", params))
        settled += result.settled
        notes += result.notes
    refused.sort(key=lambda r: r["line"])
    notes.sort(key=lambda n: n["line"])
    return {**report, "settled": settled, "refused": refused, "notes": notes}


def _encoded_lines(
    rows: list[Row], refused: list[Any], settle: list[dict[str, Any]]
) -> Iterator[tuple[tuple[str, int], int]]:
    """Each line of ``rows`` that may be sent, as the JSON text of its ``memory.import``
    item with how many rows are read once it is, and that text's size. Each line is
    parsed and encoded once; a line refused here goes to ``refused``, and the status a
    line was exported with, to ``settle``."""
    for read, (number, raw) in enumerate(rows, 1):
        value, problem = json_line(raw)
        if problem is None and not isinstance(value, dict):
            problem = f"not a trace object but a JSON {_json_type(value)}"
        encoded = (
            ""
            if problem is not None
            else json.dumps({"line": number, "trace": value}, ensure_ascii=False)
        )
        length = len(encoded) if encoded.isascii() else len(encoded.encode())
        if problem is None and length > MAX_LINE_BYTES:
            problem = f"too large to import (over {MAX_LINE_BYTES >> 10} KiB)"
        if problem is not None:
            refused.append({"line": number, "reason": problem})
            continue
        status, trace_id = value.get("status"), value.get("id")
        if status in ("fulfilled", "superseded") and isinstance(trace_id, str):
            settle.append({"line": number, "id": trace_id, "status": status})
        yield (encoded, read), length + 1


def verify_ledger(
    call: Call, rows: list[Row], expect_head: str | None, progress: Progress
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A reference ledger's whole chain, checked by the daemon and written nowhere.

    Returns:
        The report of the import so far (``records``, ``verified``, ``head``: the
        last record that verifies, and ``break``: where the chain stops verifying,
        or None; nothing imported yet), and the records to import.

    Raises:
        InvalidInput: ``expect_head`` is not ``SEQ:HASH``.
    """
    records: list[dict[str, Any]] = []
    broken: dict[str, Any] | ChainBreak | None = None  # found here, or by the daemon
    for number, raw in rows:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            broken = {"line": number, "seq": None, "reason": "the record is not UTF-8 text"}
            break
        if len(raw) > MAX_LINE_BYTES // 2:  # escaped as a JSON string, it may double
            broken = {"line": number, "seq": None, "reason": "the record is too large to check"}
            break
        records.append({"line": number, "text": text})
    pinned = None if expect_head is None else parse_head(expect_head)[0]
    after: Head | None = None
    checked = 0
    for batch in batches(records):
        params = {"records": batch, "after": after, "expect_head": expect_head}
        result: ImportLedgerResult = call("memory.import_ledger", {**params, "check_only": True})
        checked += result.checked
        after = result.tail or after
        progress(checked)
        if result.break_ is not None:
            broken = result.break_
            break
    ends = 0 if after is None else after.seq
    if broken is None and pinned is not None and ends < pinned:
        broken = {
            "line": None,
            "seq": None,
            "reason": f"the ledger ends at seq {ends}, before the pinned head (seq {pinned}):"
            " records were removed",
        }
    report: dict[str, Any] = {
        "format": "reference-ledger",
        "records": len(rows),
        "verified": checked,
        "head": after,
        "break": broken,
        "imported": False,
        "written": 0,
        "already": 0,
        "linked": 0,
        "refused": [],
        "notes": [],
    }
    return report, records


def import_ledger(
    call: Call, report: dict[str, Any], records: list[dict[str, Any]], progress: Progress
) -> dict[str, Any]:
    """Import the records :func:`verify_ledger` checked, up to its break, into its report."""
    report = {**report, "imported": True}
    after: Head | None = None
    done = 0
    for batch in batches(records[: report["verified"]]):
        result: ImportLedgerResult = call(
            "memory.import_ledger", {"records": batch, "after": after}
        )
        after = result.tail
        report["written"] += result.written
        report["already"] += result.already
        report["linked"] += result.linked
        report["refused"] += result.refused
        report["notes"] += result.notes
        done += len(batch)
        progress(done)
    return report


def import_source(
    call: Call, params: dict[str, Any], progress: Callable[[int, int], None]
) -> dict[str, Any]:
    """Another memory tool's export, page by page (``memory.import_source`` from ``start``
    0 until ``next`` is null); the report of the whole import. ``progress`` gets the
    records done and the total, which the first page tells."""
    report: dict[str, Any] = {"source": params["source"], "path": params["path"]}
    start = 0
    while True:
        reply = call("memory.import_source", {**params, "start": start})
        page: ImportSourceResult = reply
        if start == 0:
            report.update(reply)  # the first page's members, as they came
        else:
            report["written"] += page.written
            report["corrected"] += page.corrected
            report["already"] += page.already
            report["older"] += page.older
            report["kept_correction"] += page.kept_correction
            report["purged"] += page.purged
            report["refused"] += page.refused
            report["duplicates"] += page.duplicates
            if planned := getattr(page, "planned", None):  # only in a dry run
                report["planned"] += planned
        progress(page.next or page.total, report["total"])
        if page.next is None:
            del report["next"]
            return report
        start = page.next


def batches(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive runs of at most BATCH_LINES items and about BATCH_BYTES of JSON."""
    return _paged((item, len(json.dumps(item, ensure_ascii=False).encode()) + 1) for item in items)


def _paged(sized: Iterable[tuple[T, int]]) -> Iterator[list[T]]:
    """Consecutive runs of at most BATCH_LINES of the items of ``sized`` (each with its
    size in bytes) and about BATCH_BYTES in all, taken from it as they are needed."""
    batch: list[T] = []
    size = 0
    for item, length in sized:
        if batch and (len(batch) >= BATCH_LINES or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += length
    if batch:
        yield batch


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_line(raw: bytes) -> tuple[Any, str | None]:
    """The JSON value of one line, or why it has none (never echoing the line)."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({exc})" if isinstance(exc, ValueError) else "nested too deeply"


def _json_type(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), "value")
