"""Quiet Replay: proposals of durable beliefs from repeated, independent claims.

Consolidation never writes. It reads the active claims and says which values
enough independent sources agree on (docs/learning.md, "Consolidation"):

- input: active traces with a claim, except predictions and ``model:`` sources;
- groups: by normalised claim key, then normalised value;
- independent sources: distinct trimmed, lowercased source names, where empty,
  ``unknown`` and ``user`` all count as one unattributed source;
- confidence: ``0.7 · mean confidence + 0.3 · share verified``;
- eligible: support ≥ 2, independent sources ≥ 2, confidence ≥ 0.6 (the
  policy's ``consolidation_min_*`` keys), and no other active value for the key;
- order: eligible first, then by confidence.

A group that already holds a belief promoted from evidence restates an active
trace and is not proposed again (admission control, from Instinctual Memory).
Candidates from ingested session transcripts (:mod:`hikmah.learning.ingest`) join as
proposals of origin ``transcript``, unless an active rule already says them.
:func:`proposals` reads both kinds from a store snapshot.

A proposal's id is a digest of what it rests on (origin, key, value and the
evidence ids), so a proposal whose evidence changed since it was shown gets
another id: promoting the old id is refused instead of writing a belief the
person never saw.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import numpy as np

from hikmah.index.layout import KIND_CODE, STATUS_CODE, TAG_PREFIX
from hikmah.index.review import hold
from hikmah.index.snapshot import Snapshot
from hikmah.learning.ingest import Candidate, extract_candidates, restates
from hikmah.learning.transcripts import TRANSCRIPT_TAG, Message, Transcript
from hikmah.model.policy import KernelPolicy
from hikmah.model.proposal import Origin, Proposal
from hikmah.model.tokenizer import terms
from hikmah.model.trace import (
    Draft,
    Trace,
    is_model_source,
    normalize_claim_key,
    normalize_claim_value,
)

# A rule the person typed in a session: above the eligibility bar, below verified.
TRANSCRIPT_CONFIDENCE = 0.7
UNATTRIBUTED = frozenset({"", "unknown", "user"})
# Kinds whose active traces a transcript candidate must not restate.
_RESTATED_KINDS = ("constraint", "preference", "procedure", "belief", "correction")
_RESTATE_READS = 2000  # traces compared per candidate, those sharing its words
_PROPOSAL_ID = re.compile(r"pr_[0-9a-f]{16}")


def proposal_id(origin: Origin, key: str, value: str, evidence: Iterable[str]) -> str:
    digest = hashlib.sha256("\0".join([origin, key, value, *sorted(evidence)]).encode())
    return "pr_" + digest.hexdigest()[:16]


def is_proposal_id(text: str) -> bool:
    """Whether ``text`` has the form :func:`proposal_id` makes: ``pr_`` and 16 hex digits."""
    return _PROPOSAL_ID.fullmatch(text) is not None


def source_name(source: str) -> str:
    """The name sources are counted by: trimmed, lowercased, unattributed ones as one."""
    name = source.strip().lower()
    return "" if name in UNATTRIBUTED else name


def proposals(snapshot: Snapshot, policy: KernelPolicy) -> list[Proposal]:
    """Every proposal of the store as ``snapshot`` sees it, claims' and transcripts',
    eligible first, then by confidence."""
    claimed = (snapshot.trace_at(docno) for _key, docno, _value in snapshot.claim_entries())
    found = claim_proposals(claimed, policy) + _transcript_proposals(snapshot)
    return sorted(found, key=_ordered)


def _ordered(proposal: Proposal) -> tuple[bool, float, str, str]:
    return (not proposal.eligible, -proposal.confidence, proposal.key, proposal.value)


def claim_proposals(traces: Iterable[Trace], policy: KernelPolicy) -> list[Proposal]:
    """Proposals from active claims, eligible first, then by confidence.

    Args:
        traces: the active traces with a claim (others are ignored).
        policy: its ``consolidation_min_*`` thresholds decide eligibility.
    """
    groups: dict[str, dict[str, list[Trace]]] = {}
    for trace in traces:
        if trace.claim_key is None or trace.claim_value is None:
            continue
        if trace.kind == "prediction" or is_model_source(trace.provenance.source):
            continue
        if hold(trace, policy.review) is not None:
            continue  # an agent's claim no person has looked at is no evidence yet
        key = normalize_claim_key(trace.claim_key)
        value = normalize_claim_value(trace.claim_value)
        groups.setdefault(key, {}).setdefault(value, []).append(trace)
    proposals = []
    for key, values in groups.items():
        for value, members in values.items():
            if any(t.kind == "belief" and t.provenance.evidence for t in members):
                continue  # already consolidated: it restates an active trace
            others = sorted(set(values) - {value})
            proposals.append(_proposal(key, value, members, others, policy))
    return sorted(proposals, key=_ordered)


def _proposal(
    key: str, value: str, members: list[Trace], others: list[str], policy: KernelPolicy
) -> Proposal:
    support = len(members)
    sources = len({source_name(t.provenance.source) for t in members})
    mean_confidence = sum(t.confidence for t in members) / support
    verified_share = sum(t.provenance.verified for t in members) / support
    confidence = 0.7 * mean_confidence + 0.3 * verified_share
    evidence = sorted(t.id for t in members)
    return Proposal(
        id=proposal_id("claims", key, value, evidence),
        key=key,
        value=value,
        support=support,
        independent_sources=sources,
        confidence=confidence,
        eligible=(
            support >= policy.consolidation_min_support
            and sources >= policy.consolidation_min_independent_sources
            and confidence >= policy.consolidation_min_confidence
            and not others
        ),
        conflicting_values=others,
        evidence=evidence,
        origin="claims",
        content=f"{key} is {value} (consolidated from {support} traces, {sources} sources)",
    )


def transcript_proposal(candidate: Candidate, episode: Trace) -> Proposal:
    """A candidate the person stated in an ingested session, as a proposal.

    It rests on one message, so the claim rules' support and source counts do
    not apply: a person's explicit rule ("never deploy on Fridays") is worth
    proposing on its own, with :data:`TRANSCRIPT_CONFIDENCE`, and it is a
    proposal all the same, written only when someone promotes it.
    """
    kind = "belief" if candidate.kind == "correction" else candidate.kind
    return Proposal(
        id=proposal_id("transcript", kind, candidate.content, [episode.id]),
        key=kind,
        value=candidate.content,
        support=1,
        independent_sources=1,
        confidence=TRANSCRIPT_CONFIDENCE,
        eligible=True,
        conflicting_values=[],
        evidence=[episode.id],
        origin="transcript",
        kind=kind,
        content=candidate.content,
        quote=candidate.evidence,
        scope=episode.scope,
    )


def promotion_draft(proposal: Proposal, *, source: str | None, verified: bool) -> Draft:
    """The trace promoting ``proposal`` writes; its provenance lists the evidence."""
    claim = proposal.origin == "claims"
    return Draft(
        kind=proposal.kind,  # type: ignore[arg-type]
        content=proposal.content,
        confidence=round(proposal.confidence, 6),
        source=source,
        verified=verified,
        claim_key=proposal.key if claim else None,
        claim_value=proposal.value if claim else None,
        evidence=tuple(proposal.evidence),
        scope=proposal.scope,
    )


def _transcript_proposals(snapshot: Snapshot) -> list[Proposal]:
    """Candidates from the person's words in ingested sessions, not yet in memory."""
    columns = snapshot.features
    docs = snapshot.postings(TAG_PREFIX + TRANSCRIPT_TAG)
    docs = docs[
        (columns["status"][docs] == STATUS_CODE["active"])
        & (columns["kind"][docs] == KIND_CODE["episode"])
    ]
    episodes = {
        trace.id: trace
        for trace in (snapshot.trace_at(int(d)) for d in docs)
        if trace.provenance.source.startswith("human:")
    }
    messages = [
        Message(id=t.id, role="user", text=t.content, timestamp_ms=t.created_at, person=True)
        for t in sorted(episodes.values(), key=lambda t: (t.created_at, t.id))
    ]  # in the order they were said, so the first wording of a repeated rule wins
    stored = Transcript(format="claude-code", session_id="", cwd=None, messages=messages)
    return [
        transcript_proposal(candidate, episodes[candidate.message_id])
        for candidate in extract_candidates(stored)
        if not _restated(snapshot, candidate.content)
    ]


def _restated(snapshot: Snapshot, content: str) -> bool:
    """Whether an active rule, preference, procedure or belief already says ``content``."""
    wanted = terms(content)
    if not wanted:
        return False
    docs = np.unique(np.concatenate([snapshot.postings(t) for t in wanted]))
    columns = snapshot.features
    docs = docs[
        (columns["status"][docs] == STATUS_CODE["active"])
        & np.isin(columns["kind"][docs], [KIND_CODE[k] for k in _RESTATED_KINDS])
    ]
    texts = (snapshot.trace_at(int(d)) for d in docs[:_RESTATE_READS])
    return restates(content, (t.content for t in texts if TRANSCRIPT_TAG not in t.tags))
