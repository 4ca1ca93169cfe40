"""The semantic channel's part of a recall (docs/semantic.md): the query's vector, the
pool of both channels' candidates whose cue fuses words and meaning, and whether the
question is about anything the memory holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from hikmah.model.policy import Blend
from hikmah.recall import folding
from hikmah.recall.candidates import Candidates, Floats, Rows, matches_of
from hikmah.semantic.embedding import Vectors
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.semantic.vector_index import Allowed

# Starts embedding a query with the vectors' model and gives what waits for its vector
# (None: the model finds nothing in it), so that the caller may embed it beside the
# lexical work (the daemon, on a thread of its own: the model runs without the GIL).
QueryEmbedding = Callable[[SemanticIndex, str], Callable[[], Vectors | None]]


def embed_now(index: SemanticIndex, text: str) -> Callable[[], Vectors | None]:
    """The query's vector, made here and now: :data:`QueryEmbedding` in one thread."""
    vector = index.embed_query(text)
    return lambda: vector


class Semantic(NamedTuple):
    """The vectors a recall searches, and the query's own."""

    vectors: SemanticIndex
    query: Vectors


def pool(
    lexical: Rows | None,
    found: Candidates,
    semantic: Semantic,
    *,
    depth: int,
    nearest: int,
    allowed: Allowed,
    need: int,
) -> tuple[Candidates, Floats]:
    """The candidates of both channels and their similarities (NaN: no vector yet): the
    best by lexical score (as many as the walk may read) and the ``nearest`` vectors
    ``allowed`` keeps (no fewer), those matching fewer than ``need`` query terms left out.
    """
    docs = np.zeros(0, dtype=np.uint32)
    if lexical is not None:
        best = folding.top(
            lexical["score"], lexical["created"], lexical["doc"], folding.margin(depth)
        )
        docs = lexical["doc"][best]
    # As many as the walk may read at least: a nearer vector's trace can lose only by
    # its meta (at most 0.55 against 1), and the evaluation sets scored the same with
    # 1, 16, 24 and 50 of them (docs/semantic.md), each costing the search and scoring.
    wanted = max(nearest, folding.margin(depth))
    near, _ = semantic.vectors.search(semantic.query, wanted, allowed)
    union = matches_of(found, np.union1d(docs, near.astype(np.uint32)))
    if need:
        union = union.take(np.flatnonzero(union.matched >= need))
    sims = semantic.vectors.similarities(semantic.query, union.docs).astype(np.float64)
    return union, sims


def on_topic(union: Candidates, sims: Floats, blend: Blend) -> bool:
    """Whether the memory holds anything about the question: a trace some of whose
    words the question names and whose meaning backs them (``support``), or a trace
    at least ``topic`` similar. A question about nothing here gets nothing on meaning
    alone, however near its nearest traces happen to be."""
    with np.errstate(invalid="ignore"):  # NaN: no vector yet, judged by its words
        backed = (union.tagged > 0) | ((union.matched > 0) & ~(sims < blend.support))
        return bool(backed.any() or (sims >= blend.topic).any())
