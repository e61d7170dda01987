"""Tests of the KV cache.

The reference is full causal attention over the whole sequence, computed by
the shared loop reference of ``tests/reference.py`` (no ``attention_lib``
code). Decoding with the cache, one position or a few at a
time, must give the same rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import reference_attention

from attention_lib import KVCache


def reference_causal_attention(q, k, v):
    """Full causal attention (n_q = n_k) by the shared loop reference: (output, weights)."""
    return reference_attention(q, k, v, causal=True)


def random_sequence(seed, lead=(2, 3), n=23, d_k=8, d_v=5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(*lead, n, d_k)).astype(dtype)
    k = rng.normal(size=(*lead, n, d_k)).astype(dtype)
    v = rng.normal(size=(*lead, n, d_v)).astype(dtype)
    return q, k, v


def decode(q, k, v, chunks, **cache_args):
    """Feed the sequence to a cache in chunks; stack the rows that attend() returns."""
    cache = KVCache(**cache_args)
    outputs, start = [], 0
    for m in chunks:
        cache.append(k[..., start:start + m, :], v[..., start:start + m, :])
        out, w = cache.attend(q[..., start:start + m, :])
        assert w.shape[-2:] == (m, start + m)
        outputs.append(out)
        start += m
    assert start == q.shape[-2]
    return np.concatenate(outputs, axis=-2), cache


def test_decoding_one_token_at_a_time_equals_full_causal_attention():
    q, k, v = random_sequence(0)
    expected, _ = reference_causal_attention(q, k, v)
    got, cache = decode(q, k, v, [1] * q.shape[-2])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert len(cache) == q.shape[-2]


@pytest.mark.parametrize("chunks", [[5, 1, 7, 2, 8], [23], [1, 22], [3, 3, 3, 3, 3, 3, 5]])
def test_decoding_in_uneven_chunks_equals_full_causal_attention(chunks):
    q, k, v = random_sequence(1)
    expected, _ = reference_causal_attention(q, k, v)
    got, _ = decode(q, k, v, chunks, initial_capacity=2)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_the_weights_of_the_last_step_are_the_last_row_of_full_attention():
    q, k, v = random_sequence(2, lead=(), n=9)
    _, expected_w = reference_causal_attention(q, k, v)
    cache = KVCache()
    cache.append(k, v)
    _, w = cache.attend(q[-3:])
    np.testing.assert_allclose(w, expected_w[-3:], rtol=0, atol=1e-12)


def test_keys_and_values_are_read_only_views_of_what_was_appended():
    q, k, v = random_sequence(3, lead=(2,), n=10)
    cache = KVCache(initial_capacity=4)
    cache.append(k[:, :3], v[:, :3])
    cache.append(k[:, 3:], v[:, 3:])
    np.testing.assert_array_equal(cache.keys, k)
    np.testing.assert_array_equal(cache.values, v)
    assert cache.keys.shape == (2, 10, 8) and cache.values.shape == (2, 10, 5)
    with pytest.raises(ValueError, match="read-only"):
        cache.keys[0, 0, 0] = 1.0
    # Appending copies: changing the caller's array later does not change the cache.
    k[:, 0] = 99.0
    assert not np.any(cache.keys == 99.0)


def test_float32_stays_float32():
    q, k, v = random_sequence(4, n=12, dtype=np.float32)
    got, cache = decode(q, k, v, [4, 1, 7])
    assert got.dtype == np.float32 and cache.keys.dtype == np.float32
    expected, _ = reference_causal_attention(*(a.astype(np.float64) for a in (q, k, v)))
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5)


def test_growth_reallocates_only_a_logarithmic_number_of_times():
    rng = np.random.default_rng(5)
    n = 1000
    k = rng.normal(size=(n, 4))
    cache = KVCache(initial_capacity=1)
    buffer, new_buffers = None, 0
    for t in range(n):
        cache.append(k[t:t + 1], k[t:t + 1])
        if cache._k is not buffer:  # a new key buffer: the earlier rows were copied
            buffer, new_buffers = cache._k, new_buffers + 1
    # Doubling from capacity 1 to >= 1000 takes 10 doublings plus the first allocation.
    assert new_buffers == 1 + math.ceil(math.log2(n))
    assert cache.reallocations == new_buffers
    assert cache.capacity == 1024
    np.testing.assert_array_equal(cache.keys, k)


def test_a_large_append_grows_straight_to_the_needed_capacity():
    cache = KVCache(initial_capacity=4)
    cache.append(np.ones((3, 2)), np.ones((3, 2)))
    cache.append(np.ones((50, 2)), np.ones((50, 2)))
    assert cache.capacity == 53 and cache.reallocations == 2


def test_nbytes_counts_both_buffers():
    cache = KVCache(initial_capacity=8)
    assert cache.nbytes == 0 and len(cache) == 0 and cache.capacity == 0
    cache.append(np.ones((2, 3, 4), dtype=np.float32), np.ones((2, 3, 6), dtype=np.float32))
    assert cache.nbytes == 2 * 8 * (4 + 6) * 4


def test_query_heads_broadcast_against_the_cache():
    q, k, v = random_sequence(6, lead=(1,), n=6)
    cache = KVCache()
    cache.append(k, v)
    q3 = np.concatenate([q, 2 * q, 3 * q])  # (3, 6, d_k) against a (1, 6, d) cache
    out, w = cache.attend(q3[:, -2:])
    assert out.shape == (3, 2, 5) and w.shape == (3, 2, 6)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


def test_attend_on_an_empty_cache():
    with pytest.raises(ValueError, match="the cache is empty"):
        KVCache().attend(np.ones((1, 4)))
    with pytest.raises(ValueError, match="the cache is empty"):
        _ = KVCache().keys


def test_more_queries_than_cached_positions():
    cache = KVCache()
    cache.append(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"n_q=4 queries .* holds only 3 position"):
        cache.attend(np.ones((4, 4)))


def test_query_of_the_wrong_size():
    cache = KVCache()
    cache.append(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="q has d_k=5"):
        cache.attend(np.ones((1, 5)))


def test_k_and_v_that_disagree():
    with pytest.raises(ValueError, match=r"k has shape \(3, 4\).*v has shape \(2, 4\)"):
        KVCache().append(np.ones((3, 4)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"k has shape \(2, 3, 4\).*v has shape \(3, 4\)"):
        KVCache().append(np.ones((2, 3, 4)), np.ones((3, 4)))


@pytest.mark.parametrize(
    ("k", "v", "error", "pattern"),
    [
        (np.ones((1, 5)), np.ones((1, 6)), ValueError, "k has d_k=5.*d_k=4"),
        (np.ones((1, 4)), np.ones((1, 7)), ValueError, "v has d_v=7.*d_v=6"),
        (np.ones((2, 1, 4)), np.ones((2, 1, 6)), ValueError, r"k has leading axes \(2,\)"),
        (np.ones((1, 4), np.float32), np.ones((1, 6), np.float32), TypeError,
         "dtype float32 but the cache holds float64"),
    ],
)
def test_appends_that_do_not_match_the_first(k, v, error, pattern):
    cache = KVCache()
    cache.append(np.ones((2, 4)), np.ones((2, 6)))
    with pytest.raises(error, match=pattern):
        cache.append(k, v)
    assert len(cache) == 2  # a refused append changes nothing


@pytest.mark.parametrize(
    ("k", "error", "pattern"),
    [
        (np.ones(4), ValueError, "k has 1 dimension"),
        (np.ones((0, 4)), ValueError, "k has an empty axis"),
        (np.full((1, 4), np.nan), ValueError, "k contains 4 NaN"),
        (np.ones((1, 4), dtype=bool), TypeError, "k has dtype bool"),
        (None, TypeError, "k is None"),
    ],
)
def test_bad_keys(k, error, pattern):
    with pytest.raises(error, match=pattern):
        KVCache().append(k, np.ones((1, 4)))


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True])
def test_bad_initial_capacity(capacity):
    with pytest.raises((TypeError, ValueError), match="initial_capacity"):
        KVCache(initial_capacity=capacity)


def test_keys_and_values_cannot_be_made_writeable():
    cache = KVCache()
    cache.append(np.ones((3, 2)), np.ones((3, 4)))
    for view in (cache.keys, cache.values):
        with pytest.raises(ValueError):
            view.flags.writeable = True
        with pytest.raises(ValueError):
            view[0, 0] = 5.0


def test_keys_and_values_of_different_float_dtypes_are_refused():
    cache = KVCache()
    with pytest.raises(TypeError, match=r"^k has dtype float32 but v has dtype float64"):
        cache.append(np.ones((2, 4), np.float32), np.ones((2, 4), np.float64))
    assert len(cache) == 0 and cache.dtype is None  # nothing was stored
    cache.append(np.ones((2, 4), np.float32), np.ones((2, 4), np.float32))
    assert cache.dtype == np.float32


def test_integer_keys_with_float32_values_are_refused():
    # result_type(int64, float32) is float64: the cache would silently widen float32
    cache = KVCache()
    with pytest.raises(TypeError, match=r"^k has dtype int64 but v has dtype float32.*float64"):
        cache.append(np.ones((2, 4), np.int64), np.ones((2, 4), np.float32))
    with pytest.raises(TypeError, match=r"^k has dtype float16 but v has dtype int8"):
        cache.append(np.ones((2, 4), np.float16), np.ones((2, 4), np.int8))
    cache.append(np.ones((2, 4), np.int64), np.ones((2, 4), np.int32))  # integers: float64
    assert cache.dtype == np.float64
