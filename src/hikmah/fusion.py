"""The semantic channel's place in the cue, and the policy section that sets it.

The cosine similarity ``s`` of a trace's vector with the query's becomes a
semantic part in [0, 1] that rises linearly from ``floor`` to ``full``::

    semantic = clip((s - floor) / (full - floor), 0, 1)

and is blended into the cue that lexical and tag matches give (the cue of
REFERENCE, computed as today)::

    cue = (1 - weight) · cue_lexical + weight · semantic

Relevance still gates (``cue >= minimum_recall_score``) and metadata only
scales the cue, as before. A trace that matches no query term and no tag is a
candidate on semantics alone only when ``s >= alone``: below it its cue is 0,
so no unrelated trace passes the gate on a loose similarity (with the
defaults the gate by itself would let ``s >= 0.234`` through). Of 20
off-topic questions ("rules of cricket", "how do I repot an orchid") asked of
both evaluation sets, the highest similarity to a trace sharing no term with
the question was 0.318 ("rules of cricket" and the branch-naming
convention); ``alone = 0.34`` keeps every one of them out, and 0.32 and 0.34
score the same on the set the defaults were chosen on (docs/semantic.md).

A query with no semantic vector (blank, or only stopwords, which recall
answers with nothing before any channel runs) leaves the cue exactly as the
lexical channel gives it; so does ``enabled = false``. Reciprocal rank fusion
was measured and rejected: it throws the scores away, with them meta and the
gate, and lost 58 of 106 cases against the plain lexical ranking.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hikmah.policy import SemanticPolicy

Floats = npt.NDArray[np.float64]


def semantic_part(similarity: Floats, policy: SemanticPolicy) -> Floats:
    """The semantic part of the cue of each candidate, in [0, 1]."""
    span = policy.full - policy.floor
    return np.clip((similarity - policy.floor) / span, 0.0, 1.0)


def fuse(
    cue: Floats, similarity: Floats, lexical_hit: npt.NDArray[np.bool_], policy: SemanticPolicy
) -> Floats:
    """The cue with the semantic part blended in.

    Args:
        cue: the cue from lexical and tag matches (REFERENCE's), per candidate.
        similarity: cosine of each candidate's vector with the query's (0 for a
            candidate without a vector).
        lexical_hit: which candidates match a query term or tag.
        policy: the ``[semantic]`` section.
    """
    if not policy.enabled:
        return cue
    fused = (1.0 - policy.weight) * cue + policy.weight * semantic_part(similarity, policy)
    return np.where(lexical_hit | (similarity >= policy.alone), fused, 0.0)


def fused_bound(cue_bound: Floats, policy: SemanticPolicy) -> Floats:
    """The highest fused cue a candidate with this lexical bound can reach (a
    semantic part of 1): what recall's tiers prune by when similarities are
    known only for the candidates the vector index returned."""
    if not policy.enabled:
        return cue_bound
    return (1.0 - policy.weight) * cue_bound + policy.weight
