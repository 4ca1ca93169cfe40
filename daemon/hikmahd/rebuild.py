"""``hikmahd --rebuild-index``: recreate the derived indexes, vectors included, from the
ledger."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hikmah import maintenance
from hikmah.embedding import load_embedder
from hikmah.policy import SemanticPolicy
from hikmah.sealing import Keys
from hikmah.store import Store

log = logging.getLogger(__name__)


def rebuild_index(
    data_dir: Path,
    *,
    vault: Callable[[str], Keys] | None = None,
    semantic: SemanticPolicy | None = None,
) -> int:
    """Replay the ledger into fresh indexes, with progress on stderr; returns the records.

    ``vault`` is the store's key loader when the vault is on (sealed traces are
    opened to index their terms). With ``semantic`` enabled the vectors are made
    again too (embedding every trace: about 100 s per million, and the HNSW graph
    past ``ann_at``: minutes per million on two cores); otherwise their file is
    only removed, and the daemon makes them when the channel is turned on.

    Raises:
        EmbedderUnavailable: the model ``semantic`` names cannot be loaded.
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

        count = store.rebuild_index(progress)
        log.info("rebuilt the indexes from %d records in %.1f s", count, time.monotonic() - started)
        if semantic is not None and semantic.enabled:
            began = time.monotonic()
            vectors = store.open_vectors(load_embedder(semantic.model), ann_at=semantic.ann_at)
            while vectors.wants_fold():
                vectors.fold(threads=2)
            vectors.save(store.dbs.vault)
            held = vectors.status()
            log.info(
                "made %d vectors (%d in the graph) in %.1f s",
                held.vectors,
                held.graph,
                time.monotonic() - began,
            )
    return count
