"""The semantic channel's vectors attached to a store (``StoreHandle.semantic``): opened
in-process for a tool, told of every batch the store commits, built again when the
store numbers its documents anew.

The daemon attaches them itself, in the background, serving meanwhile
(``hikmahd/semantics.py``); the vectors are :mod:`hikmah.semantic.store_vectors`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hikmah.index.snapshot import Added
from hikmah.semantic.models import Loaded
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.semantic.vector_file import remove_vectors, vectors_path
from hikmah.store.handle import StoreHandle
from hikmah.vault.sealing import Keys

log = logging.getLogger(__name__)


def open_vectors(store: StoreHandle, model: Loaded, *, ann_at: int) -> SemanticIndex:
    """Attach the semantic channel's vectors (of ``model``, as
    :func:`~hikmah.semantic.models.load_model` gives it) to ``store``, from their file
    or built from the store, and embed whatever they lack: for tools running the store
    in-process."""
    semantic = SemanticIndex(
        vectors_path(store.data_dir), model.embedder, model=model.name, ann_at=ann_at
    )
    store.semantic = semantic
    with store.snapshot() as snapshot:
        semantic.open(snapshot, store.dbs.vault)
    while semantic.follow(store.snapshot):
        pass
    return semantic


def committed(semantic: SemanticIndex | None, written: Sequence[Added], keys: Keys | None) -> None:
    """Tell the vectors (if any are attached) of a batch just committed (the documents
    it gave a text); under the vault a batch that removed a vector (a purge, here or on
    another device) saves them at once, so the vector leaves the disk with its text."""
    if semantic is None:
        return
    try:
        removed = semantic.committed(written)
        if removed and keys is not None and semantic.serving:
            semantic.save(keys)
    except Exception:
        # Derived data: the commits stand, and the vectors are built again.
        log.exception("the vectors could not follow a commit; rebuilding them")
        semantic.rebuild()


def renumbered(data_dir: Path, semantic: SemanticIndex | None) -> None:
    """The store in ``data_dir`` numbers its documents anew (a rebuild of its indexes):
    its vector file goes, and the vectors attached are built again from it."""
    remove_vectors(data_dir)
    if semantic is not None:
        semantic.rebuild()
