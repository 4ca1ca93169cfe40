"""The daemon's state for a person's terminal: status and presence, the ledger's
verification and compaction, the vault, and sync."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hikmah.model.display import counted
from hikmah_client.text import awaiting, clip, when

from .render_text import WIDTH, wrap

if TYPE_CHECKING:  # the reply's types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.ledger import ChainReport, CompactResult
    from hikmah.model.wire.ledger import VerifyResult as LedgerVerifyResult
    from hikmah.model.wire.presence import PresenceStatusResult
    from hikmah.model.wire.service import DaemonStatusResult, SemanticChannel
    from hikmah.model.wire.sync import (
        ExchangeResult,
        Finding,
        InviteResult,
        JoinResult,
        RemoveResult,
        SyncStatusResult,
    )
    from hikmah.model.wire.vault import RotateResult, VaultStatusResult


def verified(report: LedgerVerifyResult) -> str:
    head = report.head
    head_text = f"{head.seq}:{head.hash}" if head else "none"
    verdict = "ok" if report.ok else "NOT OK"
    lines = [f"ledger {verdict}: {counted(report.records, 'record')}", f"  head {head_text}"]
    lines += [f"  error: {error}" for error in report.errors]
    lines += [f"  warning: {warning}" for warning in report.warnings]
    tail = report.unacknowledged
    if tail:
        lines.append("  unacknowledged records (inspect them before --accept-tail):")
        for item in tail:
            said_of = {
                "trace_id": item.trace_id,
                "kind": item.kind,
                "source": item.source,
                "locator": item.locator,
                "verified": item.verified,
                "claim": item.claim,
            }
            detail = " ".join(f"{k}={v}" for k, v in said_of.items() if v is not None)
            lines.append(f"   #{item.seq} {item.event} {detail}")
            if item.preview:
                lines.append(f"      {item.preview}")
    devices = report.devices
    if devices:
        lines.append(f"paired devices' chains, as this device keeps them: {len(devices)}")
        for chain in devices:
            lines += _chain(chain)
    return "\n".join(lines)


def _chain(chain: ChainReport) -> list[str]:
    """One paired device's chain in ``verify-ledger``: its verdict, records and head (on
    that device, ``verify-ledger`` names the same record at that seq)."""
    verdict = "ok" if chain.ok else "NOT OK"
    head = chain.head
    lines = [
        f"  {chain.name} {chain.device}: {verdict}, {counted(chain.records, 'record')}",
        f"    head {head.seq}:{head.hash}" if head else "    head none",
    ]
    if chain.stopped:
        lines.append(wrap(f"stops verifying there: {chain.stopped}", "    "))
    if chain.halted:
        lines.append(wrap(f"halted, nothing more of it is applied: {chain.halted}", "    "))
    if chain.removed_at is not None:
        lines.append(f"    removed: nothing past record {chain.removed_at} is applied")
    return lines


def status(result: DaemonStatusResult) -> str:
    counts = result.counts
    head = result.head
    reminders = result.reminders
    policy = result.policy
    lines = [
        f"hikmahd {result.version}, pid {result.pid}, up {result.uptime_s:.0f} s",
        f"  socket    {result.socket}",
        f"  data      {result.data_dir}",
        "  traces    " + ", ".join(f"{n} {status}" for status, n in counts.items()),
        f"  head      {head.seq}:{head.hash[:16]}…" if head else "  head      none",
        f"  policy    {policy.path}",
    ]
    if policy.error:
        lines.append(f"  POLICY NOT APPLIED: {policy.error}")
    lines.append("  vault     " + ("on (text sealed at rest)" if result.vault else "off"))
    lines.append(wrap(_semantic(result.semantic), " " * 12, "  semantic  "))
    lines.append(f"  reminders {reminders.scheduled} scheduled, {reminders.overdue} overdue")
    if waiting := result.review.waiting:
        lines.append(f"  review    {awaiting(waiting)}: hikmah review")
    lines.append(f"  events    {result.subscribers} subscribed connections")
    if nxt := reminders.next:
        lines.append(clip(f"            next: {when(nxt.deadline)} {nxt.content}", WIDTH))
    for capsule in result.focus:
        lines.append(
            f"  focus     {capsule.name}: {capsule.size}/{capsule.limit} traces,"
            f" {counted(capsule.notes, 'note')}, idle {capsule.idle_s} s"
        )
    if principal := result.principal:
        lines.append(f"  you are   agent session {principal.host}:{principal.session_id}")
    # In the first moments of a start, presence is still being read: only loading says so.
    if (state := getattr(result, "presence", None)) is not None:
        lines += presence(state)
    elif "presence" in getattr(result, "loading", ()):
        lines.append("  presence  still being read from the ledger (the daemon just started)")
    return "\n".join(lines)


def presence(state: PresenceStatusResult) -> list[str]:
    """Person presence for ``hikmah status``: on or off, what changed it last, and every
    sign that it was taken away behind the daemon's back."""
    changed, indent = state.changed, " " * 12
    since = ""
    if changed:
        since = f" since {when(changed.at)} ({changed.action}, record {changed.seq})"
    notes: list[str] = []
    if not state.on:
        head = f"  presence  off{since}"
        if changed and changed.action == "reset":
            notes.append(
                "RESET: the passphrase was reset with hikmahd --reset-passphrase; if you did"
                " not do it, an agent may have: check what was verified or purged since"
            )
        notes.append(
            "recommended: hikmah passphrase set, so that no agent can pass itself off as"
            " you (docs/security.md, 'Person presence')"
        )
    else:
        ticket = state.ticket
        head = f"  presence  on{since}"
        notes.append(
            f"your ticket: {ticket.terminal} until {when(ticket.expires_at)}"
            if ticket
            else "no ticket here: person-only commands ask for the passphrase"
        )
    if state.damaged:
        notes.append(
            f"PRESENCE LOCKED: {state.damaged}: no passphrase proves presence until a"
            " person runs hikmahd --reset-passphrase; run hikmah verify-ledger"
        )
    if state.missing:
        seqs = ", ".join(str(seq) for seq in state.missing)
        notes.append(
            f"LEDGER RECORDS MISSING (seq {seqs}): whatever they said, a passphrase among it,"
            " was removed behind hikmahd's back; run hikmah verify-ledger"
        )
    failures = state.failures
    if failures.count:
        notes.append(
            f"{failures.count} wrong passphrase(s) in a row, the last at"
            f" {when(failures.last_at)} (each is in hikmahd's log)"
        )
    return [clip(head, WIDTH), *(wrap(note, indent) for note in notes)]


def _semantic(channel: SemanticChannel) -> str:
    """The semantic channel's line of ``hikmah status``: its state, the model serving (and
    why another than the policy's, when it fell back), its vectors and how many writes'
    vectors are still being made."""
    state = channel.state
    if state == "off":
        return "off ([semantic] enabled = false)"
    model = channel.model
    if state == "unavailable":
        return f"unavailable ({model}): {channel.error}; recall is lexical"
    # Once a model is loaded (and only then), the channel names it and counts its vectors.
    serving = getattr(channel, "serving", None) or model
    name = serving
    if channel.fallback:
        name = f"{serving}, instead of {channel.fallback}"
    vectors = getattr(channel, "vectors", None)
    held = f", {counted(vectors, 'vector')}" if vectors is not None else ""
    behind = getattr(channel, "behind", None) or 0
    if state == "loading":
        return f"loading ({name}); recall is lexical until the vectors are read"
    if state == "building":
        to_go = counted(behind, "trace")
        return f"building ({name}{held}, {to_go} to go); recall uses those made so far"
    waiting = f", vectors for {counted(behind, 'trace')} being made" if behind else ""
    return f"{state} ({name}{held}{waiting})"


def compacted(result: CompactResult) -> str:
    if not result.redacted:
        return "nothing to compact: no purged text is left in the ledger"
    old, new = result.old_head, result.head
    assert old is not None and new is not None  # a ledger that held purged text
    return "\n".join(
        [
            f"removed the text of {len(result.redacted)} purged trace(s) from the ledger",
            f"  old head {old.seq}:{old.hash}",
            f"  new head {new.seq}:{new.hash} (the chain was rewritten; its last record"
            " names the old head)",
            "  a head pinned elsewhere must be pinned again: hikmah verify-ledger --json",
        ]
    )


def vault_status(result: VaultStatusResult) -> str:
    if not result.enabled:
        return "vault: off (set [vault] enabled = true in the policy and restart hikmahd)"
    lines = [
        "vault: on",
        f"  keyring backend: {result.backend}",
        f"  vault id:        {result.vault_id}",
        f"  master key id:   {result.master_id}",
        f"  index key id:    {result.index_id}",
    ]
    if result.retiring:
        lines.append(f"  retiring:        {', '.join(result.retiring)} (rotation unfinished)")
    if result.missing:
        lines.append(f"  missing:         {', '.join(result.missing)} (gone from the keyring)")
    return "\n".join(lines)


def rotated(result: RotateResult) -> str:
    return (
        f"rotated the vault's master key: {result.old_master_id} -> {result.master_id}\n"
        f"  {result.rewrapped} data key(s) re-wrapped; the old master was deleted"
    )


def synced(report: ExchangeResult) -> str:
    """What one sync exchange did."""
    lines = []
    for device, count in report.applied.items():
        lines.append(f"applied {count} record(s) from {device}")
    for device in report.paired:
        lines.append(f"paired with {device}")
    if report.taken_back:
        lines.append(
            f"took back {report.taken_back} record(s) this device had published and its"
            " ledger lacked: check them with hikmah verify-ledger, then --accept-tail"
        )
    lines.append("published" if report.published else "the folder already holds this device")
    lines += [_finding(f) for f in report.findings if f.problem != "waiting"]
    waiting = [f for f in report.findings if f.problem == "waiting"]
    if waiting:
        lines.append(f"waiting for {len(waiting)} thing(s) to arrive (hikmah sync status)")
    return "\n".join(lines)


def _finding(finding: Finding) -> str:
    return wrap(f"{finding.problem}: {finding.why}", "  ! ")


def invited(result: InviteResult) -> str:
    return (
        f"{result.code}\n"
        "On the other device, with the same sync folder, run:\n"
        f"  hikmah sync join {result.code}\n"
        f"The code works once, until {when(result.expires_at)}; keep it private."
    )


def joined(result: JoinResult) -> str:
    return (
        f"paired with {result.name} ({result.device}); its memory arrives with the"
        " next exchanges (hikmah sync, or when the folder changes)"
    )


def sync_removed(result: RemoveResult) -> str:
    done = f"removed {result.device}: nothing it writes from now on is applied here"
    return done + ("\n  its directory was deleted from the folder" if result.deleted else "")


def sync_status(result: SyncStatusResult) -> str:
    if not result.enabled:
        return "sync: off (set [sync] folder in the policy to the folder your engine keeps)"
    lines = [f"sync folder: {result.folder}", "devices:"]
    for device in result.devices:
        head = device.head
        at = "-" if head is None else str(head.seq)
        if device.this:
            acknowledged = device.acknowledged_by or {}  # this device's alone
            acks = ", ".join(f"{d[:10]}… {seq}" for d, seq in acknowledged.items())
            vault = "vault on" if device.vault else "vault off"
            lines.append(f"  * {device.name} {device.id} (this device) head {at}, {vault}")
            lines.append(f"      applied elsewhere: {acks or 'not yet'}")
            continue
        state = []
        if device.halted:
            state.append("HALTED")
        if device.removed_at is not None:
            state.append(f"removed at {device.removed_at}")
        lines.append(
            f"    {device.name} {device.id} head {at}, applied {device.applied},"
            f" pending {device.pending}" + (f" ({', '.join(state)})" if state else "")
        )
    if result.removed_by:
        lines.append(f"this device was removed by {result.removed_by}: it no longer syncs")
    if result.ahead:
        lines.append(
            f"this device published up to seq {result.ahead.seq}, beyond its ledger:"
            " writes wait until hikmah sync takes those records back"
        )
    if result.sealed_unreadable:
        lines.append(
            f"{result.sealed_unreadable} sealed trace(s) of other devices cannot be read"
            " here: this device runs without the vault"
        )
    if result.error:
        lines.append(wrap(f"last exchange failed: {result.error}", "  ! "))
    lines += [_finding(f) for f in result.findings]
    return "\n".join(lines)
