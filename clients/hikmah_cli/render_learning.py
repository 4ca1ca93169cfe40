"""Writes and learning for a person's terminal: what was remembered, outcomes and
feedback, calibration, proposals, invalidation, verification and the review inbox."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hikmah.model.display import counted, is_agent_locator
from hikmah_client.text import awaiting, clip, when

from .render_text import provenance, trace_line, wrap

if TYPE_CHECKING:  # the reply's types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.learning import (
        CalibrationResult,
        FeedbackResult,
        InvalidateResult,
        OutcomeResult,
        PinResult,
        PredictResult,
    )
    from hikmah.model.wire.memory import RememberResult, VerifyResult
    from hikmah.model.wire.replay import ConsolidateResult, PromoteResult
    from hikmah.model.wire.review import ReviewDecisionResult, ReviewItem, ReviewListResult


def remembered(result: RememberResult | PredictResult | PromoteResult) -> str:
    trace = result.trace
    lines = [f"remembered {trace.id} ({trace.kind})"]
    if is_agent_locator(trace.provenance.locator):
        lines.append(f"  stamped {trace.provenance.locator}")
    if result.conflicts:
        lines.append(f"  conflicts with {', '.join(result.conflicts)}")
    return "\n".join(lines)


def resolved(result: OutcomeResult) -> str:
    return f"resolved {result.resolved} with {result.trace.id}"


def fed_back(result: FeedbackResult) -> str:
    return f"{result.outcome} outcome for {', '.join(result.ids)}"


def pinned(result: PinResult) -> str:
    return f"{'pinned' if result.pinned else 'unpinned'} {result.id}"


def calibration(result: CalibrationResult) -> str:
    families = result.families
    if not families:
        return "no resolved predictions yet"
    lines = [f"{'family':24} {'n':>5} {'Brier':>7} {'base':>7} {'ECE':>7} {'Z':>7}"]
    for report in families:
        cells = [
            "-" if value is None else f"{value:.3f}"
            for value in (report.brier, report.base_rate_brier, report.ece, report.spiegelhalter_z)
        ]
        numbers = " ".join(f"{cell:>7}" for cell in cells)
        lines.append(f"{clip(report.family, 24):24} {report.n:>5} {numbers}")
        if report.note:
            lines.append(f"  {report.note}")
    return "\n".join(lines)


def proposals(result: ConsolidateResult) -> str:
    if not result.proposals:
        return "no proposals"
    lines = []
    for proposal in result.proposals:
        mark = "ELIGIBLE " if proposal.eligible else ""
        lines.append(
            f"{mark}{proposal.id}  {proposal.key} = {proposal.value!r}"
            f"  confidence {proposal.confidence:.2f}, {counted(proposal.support, 'trace')},"
            f" {proposal.independent_sources} sources ({proposal.origin})"
        )
        if proposal.conflicting_values:
            rivals = ", ".join(map(repr, proposal.conflicting_values))
            lines.append(f"   conflicts with {rivals}")
        if proposal.quote:
            lines.append(wrap(f"said: {proposal.quote}"))
        lines.append(f"   evidence {', '.join(proposal.evidence)}")
    lines.append("promote one with: hikmah promote PROPOSAL [--verified]")
    return "\n".join(lines)


def invalidated(result: InvalidateResult) -> str:
    lines = []
    if result.dry_run:
        lines.append(f"{len(result.matched)} trace(s) match:")
        lines += [f"  {trace_line(t)}\n{wrap(t.content, '    ')}" for t in result.matched]
    else:
        lines += [f"superseded {w.id} by {w.correction}" for w in result.written]
    lines += [f"refused {r.id}: {r.reason}" for r in result.refused]
    if result.written:
        lines.append("undo one by superseding its correction: hikmah remember … --supersedes ID")
    return "\n".join(lines) or "nothing matches"


def verify_preview(preview: VerifyResult, source: str) -> str:
    lines = [f"{preview.matched} unverified active traces of {source}:"]
    lines += [f"  {t.id}  {t.kind:<11} {t.preview}" for t in preview.sample]
    if preview.matched > len(preview.sample):
        lines.append(f"  … and {preview.matched - len(preview.sample)} more")
    return "\n".join(lines)


def vouched(result: VerifyResult) -> str:
    if not result.matched:
        return "nothing to verify: no active, unverified trace has that source"
    lines = [
        f"verified {counted(result.verified, 'trace')}, each by a verified copy that supersedes it"
    ]
    if result.already:
        lines.append(f"  {result.already} were verified already")
    lines += [f"  refused {r.id}: {r.reason}" for r in result.refused]
    lines.append("  see one's history: hikmah show ID")
    return "\n".join(lines)


def held_note(item: ReviewItem) -> str:
    """Why a held trace waits: quarantined by which rules (and what each matched), or
    pending as an agent's standing rule."""
    if item.state == "pending":
        return f"PENDING: an agent's {item.trace.kind}, no agent reads it until you accept it"
    reasons = "; ".join(
        f"{r.rule} ({r.meaning}: {clip(' '.join(r.matched.split()), 40)!r})" for r in item.reasons
    )
    return f"QUARANTINED: {reasons}"


def review_inbox(result: ReviewListResult) -> str:
    # By key: a Reply is a dict, whose method ``items`` hides the member of that name.
    items: list[ReviewItem] = result["items"]  # type: ignore[index]
    if not items:
        return "nothing waits for review"
    lines = [f"{awaiting(result.waiting)}, newest first:", ""]
    for rank, item in enumerate(items, 1):
        trace = item.trace
        lines.append(wrap(f"[{trace.kind}] {trace.content}", "    ", f"{rank:>2}. "))
        lines.append(wrap(f"{trace.id} · {when(trace.created_at)} · {provenance(trace)}", "    "))
        lines.append(wrap(held_note(item), "      ", "    ↳ "))
    if result.waiting > len(items):
        lines.append(f"… and {result.waiting - len(items)} more (--limit)")
    lines += [
        "",
        "accept: hikmah review accept ID…   edit: hikmah review edit ID",
        "reject: hikmah review reject ID… --reason TEXT",
    ]
    return "\n".join(lines)


def reviewed(result: ReviewDecisionResult) -> str:
    lines = [f"{d.id}: decided by {d.by} (hikmah show {d.id})" for d in result.decided]
    lines += [f"refused {r.id}: {r.reason}" for r in result.refused]
    return "\n".join(lines) or "nothing decided"
