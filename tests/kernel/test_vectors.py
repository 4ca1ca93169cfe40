"""The vectors' arithmetic in C (hikmah.semantic._vectors) against NumPy's, bit for bit.

A vector made by an older release, or by the other device of a sync, must be
the one this release makes: the reference here is the NumPy code the C
replaced, kept as the specification.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hikmah.semantic import _vectors
from hikmah.semantic.embedding import MAX_TOKENS, WordLlamaEmbedder, normalize_rows
from hikmah.semantic.quantize import quantize

FINITE = st.floats(-(2.0**40), 2.0**40, width=32, allow_subnormal=False)


def numpy_quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    peak = np.abs(rows).max(axis=1) if rows.shape[1] else np.zeros(len(rows), np.float32)
    scales = (peak / 127).astype(np.float32)
    safe = np.where(scales > 0, scales, 1.0).astype(np.float32)
    return np.rint(rows / safe[:, None]).clip(-127, 127).astype(np.int8), scales


def numpy_unit_sum(table: np.ndarray, ids: list[int]) -> np.ndarray:
    total = table[ids].sum(axis=0) if ids else np.zeros(table.shape[1], np.float32)
    return normalize_rows(total[None, :])[0]


def numpy_similarities(
    codes: np.ndarray, scales: np.ndarray, row_of: np.ndarray, query: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """The cosine of ``query`` with each id's int8 row, NaN for an id without one: the
    query rounded to a grid of 2**-24, so that any order of the sum gives the same."""
    rows = np.full(len(ids), -1, dtype=np.int64)
    inside = ids < len(row_of)
    rows[inside] = row_of[ids[inside].astype(np.intp)]
    held = rows >= 0
    grid = np.rint(query.astype(np.float64) * float(1 << 24)) / float(1 << 24)
    out = np.full(len(ids), np.nan, dtype=np.float32)
    out[held] = (codes[rows[held]].astype(np.float64) @ grid) * scales[rows[held]]
    return out


UNIT = st.floats(-1.0, 1.0, width=32)


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float32, st.tuples(st.integers(1, 20), st.integers(1, 300)), elements=UNIT),
    st.data(),
)
def test_similarities_are_numpys_in_any_row_order(rows: np.ndarray, data: st.DataObject) -> None:
    codes, scales = quantize(rows)
    query = data.draw(arrays(np.float32, rows.shape[1], elements=UNIT))
    # Ids 0, 2, 4... hold the rows; odd ids and ids past the map hold none.
    row_of = np.full(2 * len(rows) + 1, -1, dtype=np.int64)
    row_of[0 : 2 * len(rows) : 2] = np.arange(len(rows))
    ids = np.array(data.draw(st.lists(st.integers(0, 3 * len(rows)), max_size=30)), np.uint64)
    out = np.empty(len(ids), dtype=np.float32)
    _vectors.similarities(codes.reshape(-1), scales, row_of, query, ids, out)
    assert np.array_equal(
        out, numpy_similarities(codes, scales, row_of, query, ids), equal_nan=True
    )
    # The same vectors in the reverse order (another device's document numbers): the same.
    flipped = np.where(row_of >= 0, len(rows) - 1 - row_of, -1)
    again = np.empty(len(ids), dtype=np.float32)
    _vectors.similarities(
        np.ascontiguousarray(codes[::-1]).reshape(-1),
        scales[::-1].copy(),
        flipped,
        query,
        ids,
        again,
    )
    assert np.array_equal(out, again, equal_nan=True)


@settings(max_examples=300, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(0, 5), st.integers(0, 300)), elements=FINITE))
def test_quantize_is_numpys(rows: np.ndarray) -> None:
    codes, scales = quantize(rows)
    want_codes, want_scales = numpy_quantize(rows)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    assert np.array_equal(codes, want_codes)
    assert np.array_equal(scales, want_scales)


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float32, st.tuples(st.integers(1, 40), st.integers(1, 300)), elements=FINITE),
    st.data(),
)
def test_unit_sum_is_numpys(table: np.ndarray, data: st.DataObject) -> None:
    ids = data.draw(st.lists(st.integers(0, len(table) - 1), max_size=30))
    # Where a sum's square is subnormal (below 2**-126) the C code and NumPy can differ
    # in the last place (8 rows of 5.5e-24: 1.1750526 against 1.1750525). No embedding
    # comes near it: the sums compared are those whose squares are normal.
    total = table[ids].sum(axis=0) if ids else np.zeros(table.shape[1], np.float32)
    assume(bool(np.all((total == 0) | (np.abs(total) >= 2.0**-63))))
    out = np.full(table.shape[1], np.nan, dtype=np.float32)
    _vectors.unit_sum(table.reshape(-1), table.shape[1], ids, out)
    want = numpy_unit_sum(table, ids)
    assert np.array_equal(out, want, equal_nan=True)


def test_the_default_models_vectors_are_the_numpy_ones() -> None:
    model = WordLlamaEmbedder()
    table = model._flat.reshape(-1, model.stamp.dimensions)
    tokenizer = model._tokenizer
    rng = np.random.default_rng(5)
    words = tokenizer.decode(rng.integers(0, table.shape[0], 4000).tolist()).split()
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 60)))) for _ in range(300)]
    texts += ["", "   ", "deploy " * 3000]  # blank texts, a text past MAX_TOKENS
    vectors = model.embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        ids = (
            tokenizer.encode(text, add_special_tokens=False).ids[:MAX_TOKENS]
            if text.strip()
            else []
        )
        assert np.array_equal(vector, numpy_unit_sum(table, ids))
    codes, scales = quantize(vectors)
    want_codes, want_scales = numpy_quantize(vectors)
    assert np.array_equal(codes, want_codes) and np.array_equal(scales, want_scales)


def test_bad_input_is_refused_with_a_clear_error() -> None:
    table = np.ones((3, 4), dtype=np.float32).reshape(-1)
    out = np.zeros(4, dtype=np.float32)
    with pytest.raises(IndexError, match="token id 3"):
        _vectors.unit_sum(table, 4, [0, 3], out)
    with pytest.raises(IndexError, match="token id -1"):
        _vectors.unit_sum(table, 4, [-1], out)
    with pytest.raises(ValueError, match="whole rows"):
        _vectors.unit_sum(table, 5, [0], np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="4 elements, not 3"):
        _vectors.unit_sum(table, 3, [0], out)
    with pytest.raises(TypeError, match="out"):
        _vectors.unit_sum(table, 4, [0], np.zeros(4))  # float64
    with pytest.raises(TypeError):
        _vectors.unit_sum(table, 4, [0], np.zeros(4, dtype=np.int32))
    with pytest.raises(ValueError, match="finite"):
        quantize(np.array([[0.5, np.inf]], dtype=np.float32))
    codes, scales, row_of = np.zeros(8, np.int8), np.ones(2, np.float32), np.zeros(2, np.int64)
    query, ids = np.zeros(4, np.float32), np.zeros(3, np.uint64)
    with pytest.raises(ValueError, match="one row of the query's length per scale"):
        _vectors.similarities(codes, scales, row_of, query[:3], ids, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="out: 2 elements, not 3"):
        _vectors.similarities(codes, scales, row_of, query, ids, np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="ids"):
        _vectors.similarities(codes, scales, row_of, query, ids.astype(np.int64), np.zeros(3))
    with pytest.raises(ValueError, match="2-d"):
        quantize(np.zeros(3, dtype=np.float32))
