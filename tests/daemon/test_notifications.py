"""End to end: a real dbus-daemon, a notification service on it, the real hikmahd."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.daemon import Running
from tests.harness.environment import clean_env

SERVICE = Path(__file__).with_name("notification_service.py")

pytestmark = pytest.mark.skipif(
    shutil.which("dbus-daemon") is None, reason="dbus-daemon is not installed (.ci/run installs it)"
)


@pytest.fixture
def session_bus(short_tmp: Path) -> Iterator[str]:
    """A private session bus; its address."""
    bus = subprocess.Popen(
        [
            "dbus-daemon",
            "--session",
            "--nofork",
            "--print-address",
            f"--address=unix:path={short_tmp}/bus",
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert bus.stdout is not None
    address = bus.stdout.readline().strip()
    try:
        yield address
    finally:
        bus.terminate()
        bus.wait(timeout=10)
        bus.stdout.close()


def test_a_due_commitment_becomes_a_desktop_notification_and_an_event(
    short_tmp: Path, session_bus: str
) -> None:
    env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": session_bus}
    service = subprocess.Popen(
        [sys.executable, str(SERVICE)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert service.stdout is not None
    try:
        assert service.stdout.readline().strip() == "ready"
        daemon = Running(short_tmp, env=env)
        daemon.policy.write_text("[reminders]\nlead_minutes = 0\n")
        daemon.start()
        try:
            with daemon.connect() as subscriber:
                assert subscriber.call("events.subscribe")["subscribed"] is True
                deadline = int(time.time() * 1000) + 2_000
                written = daemon.call(
                    "memory.remember",
                    content="send the quarterly report",
                    kind="commitment",
                    deadline=deadline,
                )
                trace_id = written["trace"]["id"]
                events = [subscriber.read() for _ in range(2)]
                assert events[0]["method"] == "memory.changed"
                due = events[1]
                assert due["method"] == "reminder.due"
                assert due["params"]["trace"]["id"] == trace_id
                assert due["params"]["stage"] == "overdue"
                notified = json.loads(service.stdout.readline())
                assert "send the quarterly report" in notified["summary"]
                assert trace_id in notified["body"]
                assert notified["urgency"] == 2  # critical: overdue
        finally:
            daemon.stop()
    finally:
        service.terminate()
        service.wait(timeout=10)
        service.stdout.close()


def test_without_a_bus_reminders_still_reach_subscribers(short_tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={short_tmp}/no-bus-here"
    daemon = Running(short_tmp, env=env)
    daemon.policy.write_text("[reminders]\nlead_minutes = 0\n")
    daemon.start()
    try:
        with daemon.connect() as subscriber:
            subscriber.call("events.subscribe")
            daemon.call(
                "memory.remember",
                content="water the plants",
                kind="commitment",
                deadline=int(time.time() * 1000) + 1_000,
            )
            assert subscriber.read()["method"] == "memory.changed"
            assert subscriber.read()["method"] == "reminder.due"
        assert daemon.call("daemon.status")["pid"] > 0
        assert "desktop notifications are unavailable" in daemon.log.read_text()
    finally:
        daemon.stop()


def test_the_first_note_held_for_review_is_announced_once(
    short_tmp: Path, session_bus: str
) -> None:
    env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": session_bus}
    service = subprocess.Popen(
        [sys.executable, str(SERVICE)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert service.stdout is not None
    agent = clean_env(CLAUDECODE="1", DBUS_SESSION_BUS_ADDRESS=session_bus)
    try:
        assert service.stdout.readline().strip() == "ready"
        daemon = Running(short_tmp, env=env).start()
        try:
            with daemon.connect() as subscriber:
                subscriber.call("events.subscribe")
                for count, rule in enumerate(("Always rebase before merging", "Use tabs"), 1):
                    done = daemon.cli("remember", rule, "--kind", "preference", env=agent)
                    assert done.returncode == 0, done.stderr
                    event = subscriber.read()
                    while event["method"] != "review.waiting":
                        event = subscriber.read()
                    assert event["params"] == {"waiting": count}
                notified = json.loads(service.stdout.readline())
                assert notified["summary"] == "A memory from an agent awaits your review"
                assert "hikmah review" in notified["body"] and notified["urgency"] == 1
                (first, _second) = daemon.call("review.list")["items"]
                daemon.call("review.reject", ids=[first["trace"]["id"]], reason="not ours")
                event = subscriber.read()
                while event["method"] != "review.waiting":
                    event = subscriber.read()
                assert event["params"] == {"waiting": 1}
        finally:
            daemon.stop()
        # One notification only, for the first: the service got nothing more.
        service.terminate()
        assert service.stdout.read() == ""
    finally:
        service.kill()
        service.wait(timeout=10)
        service.stdout.close()
