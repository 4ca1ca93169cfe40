"""What the recall kernel (``scoring.c``, :mod:`hikmah.recall._scoring`) is given and
gives back: its parameters from the policy and the query, the feature fields it reads
in its order, the terms of ``why`` it writes, and the fixed part of meta as a column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hikmah.index.layout import KIND_CODE, STATUS_CODE
from hikmah.model.policy import Blend, KernelPolicy
from hikmah.recall import _scoring
from hikmah.recall.candidates import Floats

# What the kernel reads of each candidate's features, in its order.
SCORE_FIELDS = (
    "nterms", "created", "deadline", "salience", "confidence", "authority", "verified",
    "feedback", "pinned", "status", "kind",
)  # fmt: skip
FIXED_FIELDS = ("deadline", "kind", "salience", "confidence", "authority", "verified")
# Every term of a score that ``why`` shows, as the kernel writes them.
WHY: tuple[tuple[str, type], ...] = (
    *((name, np.float64) for name in (
        "cue", "meta", "coverage", "jaccard", "overlap", "lexical", "tag_coverage",
        "semantic_part", "recency", "provenance", "urgency", "feedback",
    )),
    ("overdue", np.bool_),
)  # fmt: skip


def kernel_params(
    policy: KernelPolicy,
    *,
    blend: Blend,
    now_ms: int,
    listing: bool = False,
    n_query: int = 0,
    n_tags: int = 0,
    query_idf: float = 0.0,
) -> _scoring.Params:
    """The kernel's parameters for one recall: the policy's weights and the query's shape."""
    p, s = policy.recall, blend
    return _scoring.params(
        idf_cosine=p.weighting == "idf-cosine",
        listing=listing,
        n_query=n_query,
        n_tags=n_tags,
        query_idf=query_idf,
        coverage_w=p.lexical_coverage,
        overlap_w=p.lexical_jaccard,
        match_floor=p.match_floor,
        cue_lexical=p.cue_lexical,
        cue_tag=p.cue_tag,
        recency_w=p.meta_recency,
        salience_w=p.meta_salience,
        confidence_w=p.meta_confidence,
        provenance_w=p.meta_provenance,
        prospective_w=p.meta_prospective,
        feedback_w=p.meta_feedback,
        recency_scale=p.recency_scale_days,
        prospective_scale=p.prospective_scale_days,
        undated_urgency=p.undated_commitment_urgency,
        unverified_factor=p.unverified_provenance_factor,
        relevance_base=p.relevance_base,
        metadata_share=p.metadata_share,
        overdue_floor=p.overdue_floor,
        listing_scale=p.listing_scale,
        gate=policy.minimum_recall_score,
        sem_weight=s.weight,
        sem_floor=s.floor,
        sem_full=s.full,
        sem_alone=s.alone,
        sem_support=s.support,
        now=now_ms,
        active=STATUS_CODE["active"],
        commitment=KIND_CODE["commitment"],
    )


def fixed_meta(policy: KernelPolicy, rows: Mapping[str, npt.NDArray[Any]]) -> Floats:
    """The most meta what is fixed when a trace is written allows: salience, confidence
    and provenance, with urgency in full for a commitment or a dated trace (recency and
    feedback come on top): a derived column, one per policy."""
    fixed = np.empty(len(rows["kind"]))
    params = kernel_params(policy, blend=policy.semantic.blend(policy.semantic.model), now_ms=0)
    _scoring.fixed_meta(params, (*(rows[name] for name in FIXED_FIELDS), fixed))
    return fixed
