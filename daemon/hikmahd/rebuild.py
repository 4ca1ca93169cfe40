"""``hikmahd --rebuild-index``: recreate the derived indexes from the ledger; the vectors'
file goes with them, and the daemon makes the vectors again in the background."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hikmah.store import indexing, maintenance
from hikmah.store.core import Store
from hikmah.vault.sealing import Keys

log = logging.getLogger(__name__)


def rebuild_index(data_dir: Path, *, vault: Callable[[str], Keys] | None = None) -> int:
    """Replay the ledger into fresh indexes, with progress on stderr; returns the records.

    ``vault`` is the store's key loader when the vault is on (sealed traces are
    opened to index their terms). The vectors' file is removed with the old
    indexes (documents may be numbered anew): the daemon makes the vectors again
    in the background once it serves (a sentence encoder takes about a millisecond
    a trace on one core), recall using those made so far.
    """
    started = time.monotonic()
    with Store(data_dir, vault=vault) as store:
        report = maintenance.verify(store)
        if not report.ok:
            log.warning(
                "the ledger does not verify; rebuilding anyway: %s", "; ".join(report.errors)
            )

        def progress(done: int) -> None:
            print(f"rebuilt {done:,} of {report.records:,} records", file=sys.stderr, flush=True)

        count = indexing.rebuild_index(store, progress)
        log.info("rebuilt the indexes from %d records in %.1f s", count, time.monotonic() - started)
    return count
