"""Tests of linear attention: the kernelised form and its recurrence.

The reference is a slow loop written here from the definition (weights
phi(q_i) . phi(k_j) over the visible keys, normalised, times the values, every
sum by ``math.fsum``), sharing no code with ``attention_lib``; the two library
forms are checked against it and against each other.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_lib import linear_attention, linear_attention_recurrent


def phi(x: float) -> float:
    """elu(x) + 1."""
    return x + 1.0 if x > 0 else math.exp(x)


def loop_linear_attention(q, k, v, causal):
    """Query by query: sum_j (phi(q_i) . phi(k_j)) v_j / sum_j phi(q_i) . phi(k_j)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = np.broadcast_to(q, (*batch, *q.shape[-2:]))
    k = np.broadcast_to(k, (*batch, *k.shape[-2:]))
    v = np.broadcast_to(v, (*batch, *v.shape[-2:]))
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    out = np.zeros((*batch, n_q, d_v))
    for b in np.ndindex(*batch):
        for i in range(n_q):
            keys = range(i + n_k - n_q + 1) if causal else range(n_k)
            sims = [math.fsum(phi(a) * phi(c) for a, c in zip(q[b][i], k[b][j], strict=True))
                    for j in keys]
            total = math.fsum(sims)
            for e in range(d_v):
                out[(*b, i, e)] = math.fsum(s * v[b][j][e] for s, j in zip(sims, keys,
                                                                          strict=True)) / total
    return out


def random_qkv(seed, lead, n_q, n_k, d_k=4, d_v=3, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(*lead, n_q, d_k)) * scale).astype(dtype)
    k = (rng.normal(size=(*lead, n_k, d_k)) * scale).astype(dtype)
    v = rng.normal(size=(*lead, n_k, d_v)).astype(dtype)
    return q, k, v


CASES = [  # (lead, n_q, n_k)
    ((), 7, 7),
    ((2,), 5, 9),  # n_q < n_k: the queries are the last positions
    ((2, 3), 1, 4),  # one query
    ((), 150, 150),  # more than two chunks of the prefix sums
    ((2,), 70, 130),  # chunks and a prefix
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("lead", "n_q", "n_k"), CASES)
def test_linear_attention_equals_the_loop(lead, n_q, n_k, causal):
    q, k, v = random_qkv(n_q + n_k, lead, n_q, n_k)
    got = linear_attention(q, k, v, causal=causal)
    assert got.shape == (*lead, n_q, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got, loop_linear_attention(q, k, v, causal), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("lead", "n_q", "n_k"), CASES)
def test_recurrence_equals_the_loop_and_the_parallel_form(lead, n_q, n_k):
    q, k, v = random_qkv(2 * n_q + n_k, lead, n_q, n_k)
    got = linear_attention_recurrent(q, k, v)
    assert got.shape == (*lead, n_q, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got, loop_linear_attention(q, k, v, True), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, linear_attention(q, k, v), rtol=0, atol=1e-12)


@given(n_q=st.integers(1, 20), extra=st.integers(0, 10), causal=st.booleans(),
       float32=st.booleans(), scale=st.sampled_from([0.1, 1.0, 5.0]),
       seed=st.integers(0, 2**16))
def test_linear_attention_property(n_q, extra, causal, float32, scale, seed):
    dtype = np.float32 if float32 else np.float64
    q, k, v = random_qkv(seed, (2,), n_q, n_q + extra, dtype=dtype, scale=scale)
    expected = loop_linear_attention(q, k, v, causal)
    atol = 1e-5 if float32 else 1e-12
    got = linear_attention(q, k, v, causal=causal)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol)
    if causal:
        recurrent = linear_attention_recurrent(q, k, v)
        assert recurrent.dtype == dtype
        np.testing.assert_allclose(recurrent, expected, rtol=0, atol=atol)


def test_broadcast_leading_axes():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 3, 6, 4))
    k = rng.normal(size=(1, 3, 6, 4))  # shared by the batch
    v = rng.normal(size=(6, 2))  # shared by everything
    expected = loop_linear_attention(q, k, v, True)
    np.testing.assert_allclose(linear_attention(q, k, v), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(linear_attention_recurrent(q, k, v), expected, rtol=0, atol=1e-12)


def test_float16_is_computed_in_float32():
    q, k, v = random_qkv(2, (2,), 80, 80, dtype=np.float16)
    expected = loop_linear_attention(q, k, v, True)
    for got in (linear_attention(q, k, v), linear_attention_recurrent(q, k, v)):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, expected, rtol=0, atol=5e-3)


def test_large_inputs_do_not_overflow_the_feature_map():
    # Entries up to ~300: exp(x) overflows float32 from x = 89 on; elu + 1 takes the exp of
    # the negative entries only.
    q, k, v = random_qkv(3, (), 10, 10, scale=100.0)
    q[..., 0] = np.abs(q[..., 0]) + 1  # a positive feature in every row: no normaliser is 0
    k[..., 0] = np.abs(k[..., 0]) + 1
    q32, k32, v32 = (a.astype(np.float32) for a in (q, k, v))
    with np.errstate(all="raise"):
        got = linear_attention(q32, k32, v32)
        recurrent = linear_attention_recurrent(q32, k32, v32)
    expected = loop_linear_attention(q32, k32, v32, True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    np.testing.assert_allclose(recurrent, expected, rtol=0, atol=1e-5)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("feature_map", ["relu", "ELU+1", None, 1, "softmax"])
def test_unknown_feature_map(feature_map):
    q = np.ones((3, 2))
    with pytest.raises(ValueError, match=re.escape(f"feature_map={feature_map!r}; expected one "
                                                   "of 'elu+1'")):
        linear_attention(q, q, q, feature_map=feature_map)


def test_bad_inputs_are_named():
    q = np.ones((3, 2))
    for function in (linear_attention, linear_attention_recurrent):
        with pytest.raises(ValueError, match=r"^q has d_k=2"):
            function(q, np.ones((3, 4)), q)
        with pytest.raises(ValueError, match=r"^k has n_k=3 positions"):
            function(q, q, np.ones((2, 2)))
        with pytest.raises(ValueError, match=r"n_q=4 queries and n_k=3 keys"):
            function(np.ones((4, 2)), q, q)
        with pytest.raises(TypeError, match=r"^v has dtype bool"):
            function(q, q, q > 0)
        with pytest.raises(ValueError, match=r"^k contains 1 NaN"):
            function(q, np.array([[1.0, np.nan], [0, 0], [0, 0]]), q)
    with pytest.raises(TypeError, match=r"^causal=None; expected True or False"):
        linear_attention(q, q, q, causal=None)
    # Without the causal rule more queries than keys is fine.
    assert linear_attention(np.ones((4, 2)), q, q, causal=False).shape == (4, 2)


def test_sums_that_overflow_are_reported():
    q = np.full((2, 3), 1e200)  # phi(q) . phi(k) = 3e400: inf in float64
    v = np.ones((2, 1))
    for call in (lambda: linear_attention(q, q, v), lambda: linear_attention_recurrent(q, q, v),
                 lambda: linear_attention(q, q, v, causal=False)):
        with pytest.raises(ValueError, match=r"sums of phi\(q\) . phi\(k\) overflow float64 "
                                             r"for [12] query row\(s\), the first at "
                                             r"\(\.\.\., query\) index \(0,\)"):
            call()


def test_an_underflowing_normaliser_is_reported():
    q = np.full((2, 3), -800.0)  # exp(-800) = 0 in float64: every feature of q vanishes
    k = np.zeros((2, 3))
    v = np.ones((2, 1))
    for call in (lambda: linear_attention(q, k, v), lambda: linear_attention_recurrent(q, k, v),
                 lambda: linear_attention(q, k, v, causal=False)):
        with pytest.raises(ValueError, match=r"normaliser .* underflowed to 0 for [12] query "
                                             r"row\(s\), the first at \(\.\.\., query\) "
                                             r"index \(0,\)"):
            call()
