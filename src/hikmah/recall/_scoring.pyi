"""The recall kernel (scoring.c): Resonance Recall's score of each candidate, in one pass.

Every array is one-dimensional and contiguous, all of one length per call; results
are written into the arrays given for them.
"""

from typing import Any, NewType

import numpy.typing as npt

Params = NewType("Params", object)
Array = npt.NDArray[Any]

def params(
    *,
    idf_cosine: bool,
    listing: bool,
    n_query: int,
    n_tags: int,
    query_idf: float,
    coverage_w: float,
    overlap_w: float,
    match_floor: float,
    cue_lexical: float,
    cue_tag: float,
    recency_w: float,
    salience_w: float,
    confidence_w: float,
    provenance_w: float,
    prospective_w: float,
    feedback_w: float,
    recency_scale: float,
    prospective_scale: float,
    undated_urgency: float,
    unverified_factor: float,
    relevance_base: float,
    metadata_share: float,
    overdue_floor: float,
    listing_scale: float,
    gate: float,
    sem_weight: float,
    sem_floor: float,
    sem_full: float,
    sem_alone: float,
    sem_support: float,
    now: int,
    active: int,
    commitment: int,
) -> Params: ...
def merge(
    lists: tuple[Array, ...],
    n_terms: int,
    n_tags: int,
    idf: Array | None,
    out: tuple[Array, Array, Array, Array, Array],
) -> int: ...
def group(arrays: tuple[Array, Array]) -> tuple[int, list[tuple[int, float]]] | None: ...
def first_bound(params: Params, arrays: tuple[Array, ...]) -> None: ...
def feature_bound(params: Params, arrays: tuple[Array, ...]) -> None: ...
def fixed_meta(params: Params, arrays: tuple[Array, ...]) -> None: ...
def score(
    params: Params, arrays: tuple[Array | None, ...], why: tuple[Array, ...] | None
) -> None: ...
