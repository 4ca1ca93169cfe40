"""The real hikmahd with its wall clock stopped, for the browser's snapshot tests.

    python -m tests.clients.frozen_hikmahd EPOCH_MS [hikmahd flags]

The snapshots must be the same on every run: recall's recency, "overdue" and the
ledger's records all depend on the daemon's wall clock, which this stops at
``EPOCH_MS`` (``time.time_ns``, the one clock the daemon reads for the wall time;
trio's timers run on the monotonic clock and keep going). Everything else is the
unchanged daemon: no test reaches into it.
"""

from __future__ import annotations

import sys
import time

frozen_ns = int(sys.argv[1]) * 1_000_000
time.time_ns = lambda: frozen_ns

from hikmahd.__main__ import main  # noqa: E402 -- after the clock is stopped

sys.exit(main(sys.argv[2:]))
