"""Tests of sliding-window attention: the mask, and the tiles that skip what it hides.

References: the window rule written as a loop over (query, key) pairs here; attention
through it by the loop reference of ``tests/reference.py`` (no library code) and by
``scaled_dot_product_attention(mask=...)`` (the library's plain formula).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import reference_attention

from attention_lib import (
    causal_mask,
    causal_tile_kinds,
    scaled_dot_product_attention,
    sliding_window_mask,
    tiled_attention,
    tiled_attention_reference,
)


def loop_window(n_q, n_k, window):
    """The window rule pair by pair: query i sits at position i + n_k - n_q."""
    mask = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        position = i + n_k - n_q
        for j in range(n_k):
            mask[i, j] = j <= position and position - j < window
    return mask


def random_qkv(seed, lead, n_q, n_k, d_k=8, d_v=5, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(*lead, n_q, d_k)) * scale).astype(dtype)
    k = (rng.normal(size=(*lead, n_k, d_k)) * scale).astype(dtype)
    v = rng.normal(size=(*lead, n_k, d_v)).astype(dtype)
    return q, k, v


# --------------------------------------------------------------------------------------
# sliding_window_mask
# --------------------------------------------------------------------------------------


@given(n_q=st.integers(1, 12), extra=st.integers(0, 6), window=st.integers(1, 20))
def test_mask_follows_the_rule_pair_by_pair(n_q, extra, window):
    n_k = n_q + extra
    got = sliding_window_mask(n_q, n_k, window)
    assert got.dtype == np.bool_ and got.shape == (n_q, n_k)
    np.testing.assert_array_equal(got, loop_window(n_q, n_k, window))
    assert got.sum(axis=1).min() >= 1  # every query keeps its own key
    assert (got <= causal_mask(n_q, n_k)).all()  # never more than the causal mask


def test_mask_is_aligned_like_the_causal_mask():
    # The causal mask puts the queries last when n_q < n_k: so does the window.
    assert sliding_window_mask(3, 7, 7).tolist() == causal_mask(3, 7).tolist()
    np.testing.assert_array_equal(sliding_window_mask(2, 5, 2).astype(int),
                                  [[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]])
    np.testing.assert_array_equal(sliding_window_mask(4, 4, 1), np.eye(4, dtype=bool))


@pytest.mark.parametrize(("args", "error", "pattern"), [
    ((3, 3, 0), ValueError, r"^window=0; expected a positive integer"),
    ((3, 3, -2), ValueError, r"^window=-2; expected a positive integer"),
    ((3, 3, 2.0), TypeError, r"^window=2.0; expected a positive integer"),
    ((3, 3, None), TypeError, r"^window=None; expected a positive integer"),
    ((0, 3, 2), ValueError, r"^n_q=0; expected a positive integer"),
    ((3, True, 2), TypeError, r"^n_k=True"),
    ((4, 3, 2), ValueError, r"n_q=4 queries and n_k=3 keys"),
])
def test_mask_bad_input(args, error, pattern):
    with pytest.raises(error, match=pattern):
        sliding_window_mask(*args)


def test_tile_kinds_with_a_window_follow_the_mask():
    n_q, n_k, b_q, b_k, window = 23, 30, 4, 6, 7
    visible = loop_window(n_q, n_k, window)
    kinds = causal_tile_kinds(n_q, n_k, block_q=b_q, block_k=b_k, window=window)
    for a, i0 in enumerate(range(0, n_q, b_q)):
        for b, j0 in enumerate(range(0, n_k, b_k)):
            tile = visible[i0:i0 + b_q, j0:j0 + b_k]
            expected = "full" if tile.all() else "diagonal" if tile.any() else "skipped"
            assert kinds[a, b] == expected, (a, b)
    assert (kinds == "skipped").sum() > (causal_tile_kinds(
        n_q, n_k, block_q=b_q, block_k=b_k) == "skipped").sum()


# --------------------------------------------------------------------------------------
# tiled_attention(window=...) and the readable loop
# --------------------------------------------------------------------------------------

CASES = [  # (lead axes, n_q, n_k, window, block_size)
    ((), 37, 37, 5, 8),
    ((), 37, 37, 1, (5, 11)),  # each query sees only itself
    ((2,), 50, 50, 16, (16, 7)),  # window == b_q
    ((2,), 50, 50, 9, (16, 7)),  # window < b_q: the edge and the diagonal overlap
    ((2, 3), 13, 41, 7, (6, 9)),  # n_q != n_k
    ((1,), 1, 17, 4, 4),  # a single query (the decoding step)
    ((), 30, 30, 100, 7),  # a window longer than the sequence: causal attention
    ((), 29, 29, 12, 100),  # one tile larger than the whole problem
]


@pytest.mark.parametrize(("lead", "n_q", "n_k", "window", "block_size"), CASES)
def test_window_equals_masked_attention_in_float64(lead, n_q, n_k, window, block_size):
    q, k, v = random_qkv(n_q * 3 + n_k + window, lead, n_q, n_k)
    mask = loop_window(n_q, n_k, window)
    expected, _ = reference_attention(q, k, v, mask=mask)
    plain, _ = scaled_dot_product_attention(q, k, v, mask=sliding_window_mask(n_q, n_k, window))
    np.testing.assert_allclose(plain, expected, rtol=0, atol=1e-12)
    for workers in (1, 2):
        got = tiled_attention(q, k, v, causal=True, window=window, block_size=block_size,
                              workers=workers)
        assert got.dtype == np.float64 and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    loop = tiled_attention_reference(q, k, v, causal=True, window=window, block_size=block_size)
    np.testing.assert_allclose(loop, expected, rtol=0, atol=1e-12)


@given(n_q=st.integers(1, 40), extra=st.integers(0, 20), window=st.integers(1, 50),
       b_q=st.integers(1, 17), b_k=st.integers(1, 17), float32=st.booleans(),
       seed=st.integers(0, 2**16))
def test_window_property(n_q, extra, window, b_q, b_k, float32, seed):
    n_k = n_q + extra
    dtype = np.float32 if float32 else np.float64
    q, k, v = random_qkv(seed, (2,), n_q, n_k, d_k=4, d_v=3, dtype=dtype)
    expected, _ = scaled_dot_product_attention(q.astype(np.float64), k.astype(np.float64),
                                               v.astype(np.float64),
                                               mask=loop_window(n_q, n_k, window))
    atol = 2e-6 if float32 else 1e-12
    got = tiled_attention(q, k, v, causal=True, window=window, block_size=(b_q, b_k))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol)
    loop = tiled_attention_reference(q, k, v, causal=True, window=window, block_size=(b_q, b_k))
    assert loop.dtype == dtype
    np.testing.assert_allclose(loop, expected, rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_window_with_large_scores_raises_the_reference(monkeypatch, dtype):
    # Scores of size ~100 and more: the tiles whose bound fails take the path that
    # raises m; the keys outside the window must not count in its maximum.
    import attention_lib.tiled as tiled

    calls = []
    original = tiled._raise_reference

    def recording(*args):
        calls.append(args[2])
        return original(*args)

    monkeypatch.setattr(tiled, "_raise_reference", recording)
    q, k, v = random_qkv(5, (2,), 70, 70, d_k=4, dtype=dtype, scale=6.0)
    k[:, :40] *= 5.0  # old keys with huge scores that the window hides from late queries
    got = tiled_attention(q, k, v, causal=True, window=10, block_size=(8, 8), workers=1)
    assert calls
    expected, _ = reference_attention(q, k, v, mask=loop_window(70, 70, 10))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 if dtype == np.float64 else 1e-5)


def test_window_skips_the_tiles_outside_the_band(monkeypatch):
    # The engine's key spans: every visible score once, nothing far outside the band.
    from attention_lib.tiled import _key_spans

    n_q = n_k = 200
    window, b_q, b_k = 24, 16, 8
    visible = loop_window(n_q, n_k, window)
    for i0 in range(0, n_q, b_q):
        rows = min(b_q, n_q - i0)
        computed = np.zeros((rows, n_k), dtype=int)
        for first, start, stop, masked in _key_spans(rows, n_q, n_k, i0, True, b_k, window):
            computed[first:, start:stop] += 1
            if not masked:
                assert visible[i0 + first:i0 + rows, start:stop].all()
        assert computed.max() == 1
        assert (computed[visible[i0:i0 + rows]] == 1).all()
        assert computed.sum() <= rows * (window + rows)  # the band, not the whole past
    # The readable loop computes only the tiles the window's tile kinds keep.
    import attention_lib.tiled as tiled

    tiles = []
    original = tiled.scaled_scores

    def recording(q, k):
        tiles.append(1)
        return original(q, k)

    monkeypatch.setattr(tiled, "scaled_scores", recording)
    q, k, v = random_qkv(6, (), n_q, n_k)
    tiled_attention_reference(q, k, v, causal=True, window=window, block_size=(b_q, b_k))
    kinds = causal_tile_kinds(n_q, n_k, block_q=b_q, block_k=b_k, window=window)
    all_tiles = math.ceil(n_q / b_q) * math.ceil(n_k / b_k)
    assert len(tiles) == (kinds != "skipped").sum() < all_tiles / 3


def test_window_work_grows_linearly(monkeypatch):
    # Scores computed for a fixed window: proportional to n (counted, not timed).
    import attention_lib.tiled as tiled

    computed = []
    original = tiled._key_spans

    def recording(rows, *args):
        spans = original(rows, *args)
        computed.append(sum((rows - first) * (stop - start) for first, start, stop, _ in spans))
        return spans

    monkeypatch.setattr(tiled, "_key_spans", recording)
    counts = []
    for n in (512, 1024, 2048):
        computed.clear()
        q, k, v = random_qkv(7, (), n, n, d_k=4, d_v=2, dtype=np.float32)
        tiled_attention(q, k, v, causal=True, window=64, block_size=(32, 64), workers=1)
        counts.append(sum(computed))
    assert counts[1] / counts[0] == pytest.approx(2, rel=0.05)
    assert counts[2] / counts[1] == pytest.approx(2, rel=0.05)
    assert counts[2] < 2048 * (64 + 32)


def test_float16_window_is_accumulated_in_float32():
    q, k, v = random_qkv(8, (2,), 40, 40, dtype=np.float16)
    got = tiled_attention(q, k, v, causal=True, window=6, block_size=(8, 12))
    assert got.dtype == np.float16
    expected, _ = reference_attention(q, k, v, mask=loop_window(40, 40, 6))
    np.testing.assert_allclose(got, expected, rtol=0, atol=5e-3)


@pytest.mark.parametrize("function", [tiled_attention, tiled_attention_reference])
def test_window_bad_input(function):
    q = np.ones((5, 4))
    with pytest.raises(ValueError, match=r"^window=3 with causal=False; .* expected causal=True"):
        function(q, q, q, window=3)
    with pytest.raises(ValueError, match=r"^window=0; expected a positive integer"):
        function(q, q, q, causal=True, window=0)
    with pytest.raises(TypeError, match=r"^window=2.5; expected a positive integer"):
        function(q, q, q, causal=True, window=2.5)
    with pytest.raises(TypeError, match=r"^window=True; expected a positive integer"):
        function(q, q, q, causal=True, window=True)
    with pytest.raises(ValueError, match=r"n_q=6 queries and n_k=5 keys"):
        function(np.ones((6, 4)), q, q, causal=True, window=2)
