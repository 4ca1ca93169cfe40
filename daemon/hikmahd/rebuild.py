"""``hikmahd --rebuild-index``: recreate the derived indexes from the ledger."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from hikmah.store import Store

log = logging.getLogger(__name__)


def rebuild_index(data_dir: Path) -> int:
    """Replay the ledger into fresh indexes, with progress on stderr; returns the records."""
    started = time.monotonic()
    with Store(data_dir) as store:
        report = store.verify()
        if not report.ok:
            log.warning(
                "the ledger does not verify; rebuilding anyway: %s", "; ".join(report.errors)
            )

        def progress(done: int) -> None:
            print(f"rebuilt {done:,} of {report.records:,} records", file=sys.stderr, flush=True)

        count = store.rebuild_index(progress)
    log.info("rebuilt the indexes from %d records in %.1f s", count, time.monotonic() - started)
    return count
