"""The Promise Queue: when each commitment's reminders are due (pure, no clock).

Every active commitment with a deadline has two stages: ``lead`` (the lead
time before the deadline) and ``overdue`` (when the deadline passes). The
queue orders pending stages by due time; the daemon asks it what is due at
``now`` and when to wake next, delivers, and records the delivery durably.
Cancelled commitments stay in the heap until they surface (lazy deletion),
so cancelling is O(1).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Literal

Stage = Literal["lead", "overdue"]
STAGES: tuple[Stage, ...] = ("lead", "overdue")

# A stage delivered more than this after it fell due is "late" (the daemon was down).
LATE_AFTER_MS = 60_000


@dataclass(frozen=True)
class Reminder:
    """One delivery: a stage of a commitment, and every stage it settles."""

    trace_id: str
    stage: Stage
    due_at: int
    deadline: int
    late: bool
    settles: tuple[Stage, ...]


@dataclass(frozen=True)
class _Commitment:
    deadline: int
    created_at: int
    version: int


class PromiseQueue:
    """Pending reminder stages of scheduled commitments, soonest first."""

    def __init__(self, lead_ms: int) -> None:
        self.lead_ms = lead_ms
        self._heap: list[tuple[int, int, str, Stage, int]] = []
        self._commitments: dict[str, _Commitment] = {}
        self._delivered: set[tuple[str, Stage]] = set()
        self._order = itertools.count()
        self._versions = itertools.count()

    def __len__(self) -> int:
        return len(self._commitments)

    def __contains__(self, trace_id: object) -> bool:
        return trace_id in self._commitments

    def schedule(
        self,
        trace_id: str,
        deadline: int,
        created_at: int,
        delivered: tuple[Stage, ...] = (),
    ) -> None:
        """Queue a commitment's stages, except those already ``delivered``."""
        self._delivered.update((trace_id, stage) for stage in delivered)
        commitment = _Commitment(deadline, created_at, next(self._versions))
        self._commitments[trace_id] = commitment
        self._push(trace_id, commitment)

    def cancel(self, trace_id: str) -> None:
        """Take a commitment off the queue (fulfilled, superseded, purged)."""
        self._commitments.pop(trace_id, None)
        self._delivered.discard((trace_id, "lead"))
        self._delivered.discard((trace_id, "overdue"))

    def set_lead(self, lead_ms: int) -> None:
        """Change the lead time (the policy changed); pending stages are re-timed."""
        if lead_ms == self.lead_ms:
            return
        self.lead_ms = lead_ms
        self._heap.clear()
        for trace_id, commitment in list(self._commitments.items()):
            renewed = _Commitment(commitment.deadline, commitment.created_at, next(self._versions))
            self._commitments[trace_id] = renewed
            self._push(trace_id, renewed)

    def next_due(self) -> int | None:
        """When the soonest pending stage falls due (epoch ms), if any."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> list[Reminder]:
        """Every stage due at ``now_ms``, soonest first, marked delivered.

        A ``lead`` stage whose deadline has also passed is not delivered on
        its own: the ``overdue`` delivery settles both.
        """
        due: list[Reminder] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return due
            due_at, _, trace_id, stage, _ = heapq.heappop(self._heap)
            commitment = self._commitments[trace_id]
            deadline = commitment.deadline
            if stage == "lead" and now_ms >= deadline:
                continue  # the overdue delivery, due too, settles it
            settles: tuple[Stage, ...] = (stage,)
            if (
                stage == "overdue"
                and self._has_lead(commitment)
                and (trace_id, "lead") not in self._delivered
            ):
                settles = STAGES
            self._delivered.update((trace_id, s) for s in settles)
            due.append(
                Reminder(
                    trace_id=trace_id,
                    stage=stage,
                    due_at=due_at,
                    deadline=deadline,
                    late=now_ms - due_at > LATE_AFTER_MS,
                    settles=settles,
                )
            )

    def _push(self, trace_id: str, commitment: _Commitment) -> None:
        for stage, due_at in self._stages(commitment):
            if (trace_id, stage) not in self._delivered:
                entry = (due_at, next(self._order), trace_id, stage, commitment.version)
                heapq.heappush(self._heap, entry)

    def _has_lead(self, commitment: _Commitment) -> bool:
        return self.lead_ms > 0 and commitment.deadline > commitment.created_at

    def _stages(self, commitment: _Commitment) -> list[tuple[Stage, int]]:
        # A commitment written already inside its lead window (or already late)
        # is reminded from the moment it exists, never "late".
        stages: list[tuple[Stage, int]] = []
        if self._has_lead(commitment):
            lead_at = max(commitment.deadline - self.lead_ms, commitment.created_at)
            stages.append(("lead", lead_at))
        stages.append(("overdue", max(commitment.deadline, commitment.created_at)))
        return stages

    def _drop_stale(self) -> None:
        while self._heap:
            _, _, trace_id, stage, version = self._heap[0]
            current = self._commitments.get(trace_id)
            live = current is not None and current.version == version
            if live and (trace_id, stage) not in self._delivered:
                return
            heapq.heappop(self._heap)
