"""KernelPolicy: defaults, TOML loading, validation with the key's name, rendering."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import msgspec
import pytest

from hikmah.model.errors import PolicyError
from hikmah.model.policy import (
    MODEL_BLENDS,
    Blend,
    KernelPolicy,
    Model,
    load_policy,
    parse_policy,
    reference_policy,
    render_policy,
    semantic_off,
)
from hikmah.semantic.models import EMBEDDERS


def test_defaults_match_the_reference() -> None:
    p = KernelPolicy()
    assert (p.working_set_limit, p.recall_limit, p.minimum_recall_score) == (12, 8, 0.12)
    assert p.allow_sensitive_persistence is False
    assert (p.consolidation_min_support, p.consolidation_min_independent_sources) == (2, 2)
    assert p.consolidation_min_confidence == 0.6
    r = p.recall
    assert (r.lexical_coverage, r.lexical_jaccard, r.match_floor) == (0.7, 0.3, 0.15)
    assert (r.cue_lexical, r.cue_tag) == (0.8, 0.2)
    assert (r.meta_recency, r.meta_salience, r.meta_confidence) == (0.25, 0.20, 0.20)
    assert (r.meta_provenance, r.meta_prospective) == (0.25, 0.10)
    assert (r.relevance_base, r.metadata_share) == (0.55, 0.45)
    assert (r.recency_scale_days, r.unverified_provenance_factor) == (30, 0.65)
    assert (r.prospective_scale_days, r.undated_commitment_urgency) == (7, 0.35)
    assert (r.overdue_floor, r.listing_scale) == (0.15, 0.5)
    assert (r.redundant_at, r.redundancy_penalty) == (0.8, 0.35)
    assert p.reminders.lead_minutes == 30
    assert p.vault.enabled is False


def test_the_new_defaults_and_the_reference_policy() -> None:
    p = KernelPolicy()
    assert p.recall.weighting == "idf-cosine"
    s = p.semantic
    assert (s.enabled, s.model) == (True, "minilm")
    # The blend's numbers are each model's own unless the policy sets them.
    assert (s.weight, s.floor, s.full, s.alone, s.support, s.topic) == (None,) * 6
    assert s.blend("minilm") == Blend(
        weight=0.8, floor=0.1, full=0.7, alone=0.2, support=0.16, topic=0.27
    )
    assert s.blend("wordllama") == Blend(
        weight=0.5, floor=0.15, full=0.5, alone=0.34, support=-1.0, topic=-1.0
    )
    assert set(MODEL_BLENDS) == set(get_args(Model))
    mine = parse_policy("[semantic]\nalone = 0.3").semantic
    assert mine.blend("minilm").alone == 0.3 and mine.blend("minilm").floor == 0.1
    # The fallback serves by its own numbers: the policy's were chosen for its model.
    assert mine.blend("wordllama") == MODEL_BLENDS["wordllama"]
    e5 = parse_policy('[semantic]\nmodel = "multilingual"\nfloor = 0.76').semantic
    assert e5.blend("multilingual").floor == 0.76  # valid with its own full (0.92)
    assert (s.candidates, s.ann_at) == (16, 20_000)
    reference = reference_policy(p)
    assert reference.recall.weighting == "reference" and not reference.semantic.enabled
    assert msgspec.structs.replace(reference, recall=p.recall, semantic=p.semantic) == p
    assert semantic_off(p).semantic.enabled is False and semantic_off(p).recall == p.recall
    # Every model the policy can name is one the kernel can load, and no other.
    assert set(get_args(Model)) == set(EMBEDDERS)
    text = render_policy(p)
    assert "[semantic]" in text and 'model = "minilm"' in text
    assert (
        "# alone =   (unset: the model's own: minilm 0.2, multilingual 0.8, wordllama 0.34" in text
    )
    assert "(one of idf-cosine, reference)" in text


def test_rendered_defaults_round_trip_and_explain_every_key() -> None:
    text = render_policy(KernelPolicy())
    assert parse_policy(text) == KernelPolicy()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if " = " in line and not line.startswith("#"):
            assert lines[i - 1].startswith("# "), line


def test_a_partial_file_keeps_other_defaults(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("recall_limit = 3\n[recall]\nrecency_scale_days = 10\n")
    p = load_policy(path)
    assert p.recall_limit == 3
    assert p.recall.recency_scale_days == 10.0
    assert p.recall.match_floor == 0.15


def test_recall_limit_may_be_written_in_the_recall_table(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[recall]\nrecall_limit = 5\nrecency_scale_days = 10\n")
    p = load_policy(path)
    assert (p.recall_limit, p.recall.recency_scale_days) == (5, 10.0)
    path.write_text("recall_limit = 5\n[recall]\nrecall_limit = 6\n")
    with pytest.raises(PolicyError, match="recall_limit is given twice"):
        load_policy(path)
    path.write_text("[recall]\nrecall_limit = 0\n")
    with pytest.raises(PolicyError, match=r"\$\.recall_limit"):
        load_policy(path)


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load_policy(tmp_path / "absent.toml") == KernelPolicy()
    assert load_policy(None) == KernelPolicy()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("bogus = 1", ["bogus"]),
        ("[recall]\nfoo = 1", ["foo", "$.recall"]),
        ("[recall]\nmatch_floor = 1.5", ["$.recall.match_floor"]),
        ("[recall]\nmeta_recency = -0.1", ["$.recall.meta_recency"]),
        ("recall_limit = 0", ["$.recall_limit"]),
        ("minimum_recall_score = 0", ["$.minimum_recall_score"]),
        ("[recall]\nrecency_scale_days = 0", ["$.recall.recency_scale_days"]),
        ("[recall]\nprospective_scale_days = -1", ["$.recall.prospective_scale_days"]),
        ("consolidation_min_support = 0", ["$.consolidation_min_support"]),
        ("[recall]\nlexical_coverage = 0.9", ["lexical_coverage", "lexical_jaccard"]),
        ("[recall]\ncue_tag = 0.5", ["cue_lexical", "cue_tag"]),
        ("[recall]\nmetadata_share = 0.6", ["relevance_base", "metadata_share"]),
        ("[recall]\nrelevance_base = 0", ["relevance_base"]),
        ("allow_sensitive_persistence = true", ["allow_sensitive_persistence", "vault"]),
        ("[recall]\nrecency_scale_days = inf", ["finite"]),
        ("recall_limit = 'eight'", ["$.recall_limit"]),
        ("[recall", ["TOML"]),
        ("[reminders]\nlead_minutes = -5", ["$.reminders.lead_minutes"]),
        ("[recall]\nweighting = 'bm25'", ["$.recall.weighting", "idf-cosine"]),
        ("[semantic]\nmodel = 'gpt-9'", ["$.semantic.model", "wordllama"]),
        ("[semantic]\nfloor = 0.6\nfull = 0.5", ["full", "floor"]),
        ("[semantic]\nweight = 1.5", ["$.semantic.weight"]),
        ("[semantic]\nalone = -2", ["$.semantic.alone"]),
        ("[semantic]\ncandidates = 0", ["$.semantic.candidates"]),
        ("[semantic]\nann_at = 0", ["$.semantic.ann_at"]),
        ("[semantic]\nenabled = 'yes'", ["$.semantic.enabled"]),
        ("[semantic]\nbogus = 1", ["bogus", "$.semantic"]),
        ("max_trace_bytes = 100", ["$.max_trace_bytes", ">= 1024"]),
        ("max_trace_bytes = 4194304", ["$.max_trace_bytes", "<= 1048576"]),
    ],
)
def test_invalid_policies_name_the_key(text: str, names: list[str]) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, origin="policy.toml")
    message = str(caught.value)
    assert message.startswith("policy.toml: ")
    for name in names:
        assert name in message


def test_sensitive_persistence_with_the_vault_is_accepted() -> None:
    p = parse_policy("allow_sensitive_persistence = true\n[vault]\nenabled = true\n")
    assert p.allow_sensitive_persistence and p.vault.enabled


def test_zero_lead_minutes_is_allowed() -> None:
    assert parse_policy("[reminders]\nlead_minutes = 0").reminders.lead_minutes == 0
