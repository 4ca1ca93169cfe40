"""The real hikmahd on a wall clock the test sets, for reads as of known times.

    python -m tests.daemon.clocked_hikmahd CLOCK_FILE [hikmahd flags]

``time.time_ns`` (the one clock the daemon reads for the wall time) answers the
epoch milliseconds written in ``CLOCK_FILE``, read at each call, so a test moves
the daemon's time between its writes. trio's timers run on the monotonic clock
and keep going. Everything else is the unchanged daemon.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

clock = Path(sys.argv[1])
time.time_ns = lambda: int(clock.read_text()) * 1_000_000

from hikmahd.__main__ import main  # noqa: E402 -- after the clock is set

sys.exit(main(sys.argv[2:]))
