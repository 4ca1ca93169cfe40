"""A short run: about 60 hostile connections for a few seconds (half
frames that stall, requests never read, connect/hang-up loops, 1 MiB frames) while
a well-behaved client recalls. Its latency stays within a generous factor of its
idle latency measured in the same test, the daemon's file descriptors return to
their baseline once the abusers leave, and its RSS stays bounded.

``bench/stress/soak.py`` runs 200 connections for minutes and prints RSS over time.
"""

from __future__ import annotations

from tests.harness.daemon import Running

from .crashes import fill
from .harness import Book
from .soak import median, soak

FACTOR = 20  # generous: the abusers share the machine's two cores with the daemon
FLOOR_S = 0.02  # below this, a ratio of tiny numbers says nothing


def test_abusers_do_not_starve_a_well_behaved_client(daemon: Running) -> None:
    fill(daemon, Book(), 2000, "soak")
    report = soak(
        daemon, 4.0, ["--stallers", "40", "--silent", "4", "--churners", "4", "--big", "2"]
    )
    assert not report.abusers["errors"], report.abusers["errors"]
    done = report.abusers["done"]
    assert done["half frames"] == 40 and done["1 MiB frames"] >= 2, done
    assert done["connections opened and closed"] > 50, done
    idle, loaded = median(report.idle), median(report.loaded)
    assert loaded <= max(FACTOR * idle, FLOOR_S), report.summary()
    assert len(report.loaded) >= 50, report.summary()
    assert report.after_fds <= report.base_fds, report.summary()
    peak = max(rss for _t, rss, _fds in report.samples.rows)
    # Each 1 MiB frame is held while it is decoded; 2 of them at a time, plus slack.
    assert peak - report.base_rss < 200 << 10, report.summary()
    assert report.after_rss - report.base_rss < 100 << 10, report.summary()
