"""The promise queue alone: stages, lead time, lateness, cancellation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hikmah.working.promises import LATE_AFTER_MS, PromiseQueue

MIN = 60_000
HOUR = 60 * MIN
NOW = 1_790_000_000_000


def stages(queue: PromiseQueue, now: int) -> list[tuple[str, str, bool]]:
    return [(r.trace_id, r.stage, r.late) for r in queue.pop_due(now)]


def test_lead_then_overdue() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + 2 * HOUR, NOW)
    assert queue.next_due() == NOW + 90 * MIN
    assert stages(queue, NOW + 89 * MIN) == []
    assert stages(queue, NOW + 90 * MIN) == [("a", "lead", False)]
    assert queue.next_due() == NOW + 2 * HOUR
    assert stages(queue, NOW + 2 * HOUR) == [("a", "overdue", False)]
    assert queue.next_due() is None
    assert stages(queue, NOW + 100 * HOUR) == []  # each stage once


def test_zero_lead_means_one_reminder_at_the_deadline() -> None:
    queue = PromiseQueue(0)
    queue.schedule("a", NOW + HOUR, NOW)
    assert stages(queue, NOW + HOUR) == [("a", "overdue", False)]
    assert queue.next_due() is None


def test_written_inside_the_lead_window_is_reminded_at_once_and_not_late() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + 10 * MIN, NOW)
    assert queue.next_due() == NOW
    assert stages(queue, NOW) == [("a", "lead", False)]


def test_written_already_overdue_fires_overdue_only() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW - HOUR, NOW)
    (reminder,) = queue.pop_due(NOW)
    assert (reminder.stage, reminder.late, reminder.settles) == ("overdue", False, ("overdue",))


def test_both_stages_missed_while_down_deliver_one_late_overdue_settling_both() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + HOUR, NOW)
    (reminder,) = queue.pop_due(NOW + 5 * HOUR)
    assert (reminder.stage, reminder.late) == ("overdue", True)
    assert reminder.settles == ("lead", "overdue")


def test_lateness_threshold() -> None:
    queue = PromiseQueue(0)
    queue.schedule("a", NOW, NOW - HOUR)
    queue.schedule("b", NOW, NOW - HOUR)
    assert [r.late for r in queue.pop_due(NOW + LATE_AFTER_MS)] == [False, False]
    queue.schedule("c", NOW, NOW - HOUR)
    assert [r.late for r in queue.pop_due(NOW + LATE_AFTER_MS + 1)] == [True]


def test_delivered_stages_are_not_scheduled_again() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + HOUR, NOW, delivered=("lead",))
    assert queue.next_due() == NOW + HOUR


def test_cancel_takes_a_commitment_off() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + HOUR, NOW)
    queue.schedule("b", NOW + 2 * HOUR, NOW)
    queue.cancel("a")
    assert "a" not in queue and len(queue) == 1
    assert stages(queue, NOW + 2 * HOUR) == [("b", "overdue", False)]


def test_many_at_the_same_instant_all_come_out_in_order_of_scheduling() -> None:
    queue = PromiseQueue(0)
    for i in range(1000):
        queue.schedule(f"c{i:04}", NOW + HOUR, NOW)
    due = queue.pop_due(NOW + HOUR)
    assert [r.trace_id for r in due] == [f"c{i:04}" for i in range(1000)]


def test_deadlines_years_away() -> None:
    queue = PromiseQueue(30 * MIN)
    far = NOW + 5 * 365 * 24 * HOUR
    queue.schedule("far", far, NOW)
    assert stages(queue, NOW + 365 * 24 * HOUR) == []
    assert queue.next_due() == far - 30 * MIN


def test_changing_the_lead_retimes_pending_stages() -> None:
    queue = PromiseQueue(30 * MIN)
    queue.schedule("a", NOW + 2 * HOUR, NOW)
    queue.set_lead(60 * MIN)
    assert queue.next_due() == NOW + HOUR


@given(
    deadlines=st.lists(st.integers(0, 10 * 24 * HOUR), min_size=1, max_size=40),
    lead=st.integers(0, 3 * HOUR),
    steps=st.lists(st.integers(1, 6 * HOUR), max_size=30),
)
def test_every_stage_is_delivered_exactly_once_in_time_order(
    deadlines: list[int], lead: int, steps: list[int]
) -> None:
    queue = PromiseQueue(lead)
    for i, offset in enumerate(deadlines):
        queue.schedule(f"t{i}", NOW + offset, NOW)
    now, seen = NOW, []
    for step in [*steps, 11 * 24 * HOUR]:
        now += step
        for reminder in queue.pop_due(now):
            assert reminder.due_at <= now
            seen.append((reminder.trace_id, reminder.stage))
    assert len(seen) == len(set(seen))
    assert {t for t, stage in seen if stage == "overdue"} == {
        f"t{i}" for i in range(len(deadlines))
    }
