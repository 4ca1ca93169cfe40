"""Reports of what moved memory in or out, for a person's terminal: transcripts ingested,
imports, backups, and the progress bar of a long transfer."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the reply's types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.replay import IngestResult
    from hikmah.model.wire.service import BackupResult


def ingested(report: IngestResult) -> str:
    line = (
        f"{report.path}: {report.format} session, {report.messages} messages,"
        f" {report.written} new, {report.already} already ingested"
    )
    if report.refused:
        line += f", {len(report.refused)} refused ({report.refused[0].reason})"
    if report.skipped_lines:
        line += f", {report.skipped_lines} unreadable lines skipped"
    return line


class Progress:
    """``imported 1500/20000 lines [####      ] 7%`` on stderr, redrawn in place, only
    when stderr is a terminal (a script reading stderr gets no carriage returns)."""

    BAR = 24
    EVERY_S = 0.1

    def __init__(self, verb: str, total: int, unit: str) -> None:
        self.verb, self.total, self.unit = verb, total, unit
        self.shown = sys.stderr.isatty()
        self.drawn = False
        self._last = 0.0

    def update(self, done: int) -> None:
        if not self.shown:
            return
        now = time.monotonic()
        if done < self.total and now - self._last < self.EVERY_S:
            return
        self._last = now
        share = min(done / self.total, 1.0) if self.total else 1.0
        bar = "#" * round(share * self.BAR)
        sys.stderr.write(
            f"\r{self.verb} {done}/{self.total} {self.unit} [{bar:<{self.BAR}}] {share:4.0%}"
        )
        sys.stderr.flush()
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.drawn = False


def refused_line(refused: dict[str, Any]) -> str:
    where = f"line {refused['line']}"
    if refused.get("seq") is not None:
        where += f" (seq {refused['seq']})"
    return f"{where} refused: {refused['reason']}"


def chain_break(broken: dict[str, Any]) -> str:
    where = []
    if broken.get("line") is not None:
        where.append(f"line {broken['line']}")
    if broken.get("seq") is not None:
        where.append(f"seq {broken['seq']}")
    at = f" at {', '.join(where)}" if where else ""
    return f"the ledger's hash chain breaks{at}: {broken['reason']}"


def imported(report: dict[str, Any]) -> str:
    refused = len(report["refused"])
    if report["format"] == "traces":
        lines = [
            f"imported {report['file']}: {report['lines']} lines, {report['written']} written,"
            f" {report['already']} already present, {refused} refused"
        ]
    else:
        lines = [
            f"imported reference ledger {report['file']}: {report['verified']} of"
            f" {report['records']} records verify",
        ]
        if report["break"] is not None:
            lines.append(f"  {chain_break(report['break'])}")
            if report["imported"]:
                lines.append("  only the records before the break were imported")
        if report["imported"]:
            lines.append(
                f"  {report['written']} written, {report['already']} already present,"
                f" {report['linked']} supersessions linked, {refused} refused"
            )
        else:
            lines.append("  nothing was imported")
    for note in report["notes"]:
        lines.append(f"  note: line {note['line']}: {note['note']}")
    return "\n".join(lines)


def imported_source(report: dict[str, Any]) -> str:
    """An import of another tool's export (the refusals go to stderr on their own)."""
    dry = report["dry_run"]
    lines = [f"{'dry run of' if dry else 'imported'} {report['source']} {report['path']}:"]
    lines += [
        f"  {p['action']:<10} {p['kind']:<11} {p['locator']}\n    {p['preview']}"
        for p in report.get("planned", [])
    ]
    lines.append(
        f"  {report['total']} records{', would be' if dry else ''}: {report['written']} new,"
        f" {report['corrected']} corrected, {report['already']} already imported,"
        f" {len(report['refused'])} refused"
    )
    left = [
        (report["older"], "older than what was imported"),
        (report["kept_correction"], "changed, but you corrected or verified the import"),
        (report["purged"], "purged since they were imported"),
    ]
    lines += [f"  {count} left alone: {why}" for count, why in left if count]
    if report["duplicates"]:
        lines.append("  near-duplicates of what memory holds (kept; recall folds them):")
        lines += [f"    {d['locator']} restates {d['of']}" for d in report["duplicates"]]
    if report["skipped"]:
        lines.append(f"  {report['skipped']} records not imported:")
        lines += [f"    {why}" for why in report["skipped_named"]]
        if report["skipped"] > len(report["skipped_named"]):
            lines.append(f"    … and {report['skipped'] - len(report['skipped_named'])} more")
    if dry:
        lines.append("  nothing was written (--dry-run)")
    elif report["written"] or report["corrected"]:
        lines.append("  imported traces are unverified: check them (hikmah recall, hikmah show),")
        lines.append(
            f"  then verify what you checked: hikmah verify --source tool:{report['source']}"
        )
    return "\n".join(lines)


def backed_up(result: BackupResult) -> str:
    head = result.head
    at = f"head {head.seq}:{head.hash}" if head else "an empty ledger"
    return (
        f"backed up {result.records} ledger records ({at}) to {result.dir}\n"
        f"  {result.data_bytes / (1 << 20):.1f} MiB, checked; restore it with"
        f" hikmahd --restore {result.dir} while no daemon runs"
    )
