"""WordLlama, the light model and the fallback: its vectors, its tokens a word at a time,
and that loading it never reaches the network.

Two independent proofs that no download is attempted: in this process a
socket guard records every connect and name lookup while the model loads and
embeds (and catches a download where one is attempted: plain
``WordLlama.load()`` is shown to try); and in a child process started with
``unshare -n`` (a network namespace with no interface but a downed loopback),
the model loads and embeds. tests/kernel/test_encoder.py proves the same of the
default sentence encoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from hikmah.semantic.embedding import (
    METASPACE,
    Embedder,
    EmbedderUnavailable,
    WordLlamaEmbedder,
    WordTokens,
    normalize_rows,
)
from hikmah.semantic.models import load_embedder
from tests.harness.network import run_without_network
from tests.kernel.embedding_cases import TEXTS


@pytest.fixture(scope="module")
def model() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def test_wordllama_loads_and_embeds_with_the_network_refused(no_network: list[str]) -> None:
    embedder = load_embedder("wordllama")
    vectors = embedder.embed(TEXTS)
    assert no_network == []
    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_guard_catches_a_download_attempt(
    no_network: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check above could not pass by accident: wordllama's own plain load, with
    # an empty cache, looks for tokenizer/ where the wheel ships tokenizers/ and
    # goes to the network.
    wordllama = pytest.importorskip("wordllama")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(Exception):  # noqa: B017 - whatever requests wraps it in
        wordllama.WordLlama.load(cache_dir=tmp_path / "cache")
    assert no_network, "the plain load made no network attempt"


def test_wordllama_loads_in_a_process_without_a_network(tmp_path: Path) -> None:
    result = run_without_network(
        "import json, sys\n"
        "from hikmah.semantic.models import load_embedder\n"
        "e = load_embedder('wordllama')\n"
        "v = e.embed(sys.argv[1:])\n"
        "print(json.dumps({'stamp': [e.stamp.name, e.stamp.dimensions], 'vectors': v.tolist()}))\n",
        TEXTS,
        tmp_path,
    )
    assert result["stamp"] == ["wordllama-l2-supercat", 256]
    here = WordLlamaEmbedder().embed(TEXTS)
    assert np.allclose(np.array(result["vectors"]), here, atol=1e-6)


def test_vectors_are_wordllamas_own(model: WordLlamaEmbedder) -> None:
    wordllama = pytest.importorskip("wordllama")
    theirs = wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    ).embed(TEXTS, norm=True)
    assert np.allclose(model.embed(TEXTS), theirs, atol=1e-5)


# Texts as people and agents write them, and what could break a word at a time: runs
# of spaces, a leading or trailing one, tabs and newlines (which stay characters),
# the metaspace itself, bytes the vocabulary lacks, the special tokens' names.
_PIECES = st.sampled_from(
    [" ", "  ", "\t", "\n", METASPACE, "<s>", "</s>", "<unk>", "<", "deploy", "Postgres",
     "replica's", "40%", "2026-12-05", "naïve", "日本語", "🙂", "x" * 60, "▁▁on"]
)  # fmt: skip
_TEXTS = st.one_of(
    st.text(st.sampled_from("ab e\t\n" + METASPACE + "é日🙂<>/s"), max_size=40),
    st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=12).map("".join),
)


@pytest.fixture(scope="module")
def words(model: WordLlamaEmbedder) -> WordTokens:
    made = WordTokens.of(model._tokenizer)
    assert made is not None  # WordLlama's tokenizer is of the kind word tokens need
    return made


@settings(max_examples=400, deadline=None)
@given(text=_TEXTS)
def test_word_tokens_are_the_tokenizers_own(
    model: WordLlamaEmbedder, words: WordTokens, text: str
) -> None:
    tokenizer = model._tokenizer
    theirs = tokenizer.encode(text, add_special_tokens=False).ids
    ours = words(text)
    if ours is None:  # the tokenizer matches a special token's name on its own
        assert any(special in text for special in ("<s>", "</s>", "<unk>"))
    else:
        assert ours == theirs
        assert words(text) == theirs  # again, from the words it remembered


def test_word_tokens_of_the_whole_vocabulary(model: WordLlamaEmbedder, words: WordTokens) -> None:
    tokenizer = model._tokenizer
    vocabulary = sorted(tokenizer.get_vocab())
    rng = np.random.default_rng(5)
    for _ in range(300):
        picked = rng.choice(vocabulary, size=int(rng.integers(1, 12)))
        joints = rng.choice([" ", "", "  ", "\n"], size=len(picked))
        text = "".join(
            f"{token.replace(METASPACE, ' ')}{joint}"
            for token, joint in zip(picked, joints, strict=True)
        )
        found = words(text)
        assert found is None or found == tokenizer.encode(text, add_special_tokens=False).ids


def test_word_tokens_refuse_a_tokenizer_whose_merges_can_cross_words() -> None:
    def tokenizer(vocab: dict[str, int], merges: list[tuple[str, str]]) -> Tokenizer:
        made = Tokenizer(models.BPE(vocab, merges))
        made.normalizer = normalizers.Sequence(
            [normalizers.Prepend(METASPACE), normalizers.Replace(" ", METASPACE)]
        )
        return made

    letters = {METASPACE: 0, "a": 1, "b": 2, f"{METASPACE}a": 3}
    plain = tokenizer(letters, [(METASPACE, "a")])
    words = WordTokens.of(plain)
    assert words is not None and words("a a b") == [3, 3, 0, 2]
    # "a▁" would join the end of one word to the start of the next.
    crossing = tokenizer({**letters, f"a{METASPACE}": 4}, [(METASPACE, "a"), ("a", METASPACE)])
    assert WordTokens.of(crossing) is None
    split = tokenizer(letters, [(METASPACE, "a")])
    split.pre_tokenizer = pre_tokenizers.Whitespace()
    assert WordTokens.of(split) is None


def test_paraphrases_are_closer_than_unrelated_texts(model: WordLlamaEmbedder) -> None:
    v = model.embed(TEXTS)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]


def test_nothing_to_embed_is_the_zero_row(model: WordLlamaEmbedder) -> None:
    v = model.embed(["", "   ", TEXTS[0]])
    assert not v[0].any() and not v[1].any()
    assert np.isclose(np.linalg.norm(v[2]), 1.0)
    assert model.embed([]).shape == (0, 256)


def test_a_long_text_is_capped_and_still_a_unit_vector(model: WordLlamaEmbedder) -> None:
    long = " ".join(["the replica took over"] * 3000)
    v = model.embed([long, TEXTS[0]])
    assert np.isclose(np.linalg.norm(v[0]), 1.0)
    assert np.isfinite(v).all()


def test_a_matryoshka_prefix_is_its_own_model() -> None:
    small = load_embedder("wordllama-128")
    assert small.stamp.dimensions == 128
    assert small.stamp != WordLlamaEmbedder().stamp
    assert small.embed(TEXTS).shape == (4, 128)
    with pytest.raises(ValueError, match="dimensions"):
        WordLlamaEmbedder(100)


def test_embedders_satisfy_the_protocol(model: WordLlamaEmbedder) -> None:
    assert isinstance(model, Embedder)


def test_an_unknown_model_says_which_there_are() -> None:
    with pytest.raises(EmbedderUnavailable, match=r"unknown embedding model 'nope'.*minilm"):
        load_embedder("nope")


def test_wordllama_embeds_a_document_whole(model: WordLlamaEmbedder) -> None:
    long = " ".join(["the replica took over"] * 300)
    assert model.passages(long) == [long]
    assert model.passages("  ") == []
    assert np.array_equal(model.embed_query(TEXTS[0]), model.embed([TEXTS[0]])[0])


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(2, 6), st.just(16)),
        elements=st.floats(-4, 4, width=32, allow_subnormal=False),
    )
)
def test_one_row_is_made_a_unit_vector_as_it_would_be_among_many(rows: np.ndarray) -> None:
    """A query (one row) takes a shorter path to length 1: the very bits a batch gives."""
    rows[0] = 0.0  # a zero row stays zero either way
    batch = normalize_rows(rows)
    for i in range(len(rows)):
        assert np.array_equal(normalize_rows(rows[i : i + 1])[0], batch[i])
