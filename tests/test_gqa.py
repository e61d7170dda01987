"""Tests of grouped-query attention: the function, and MultiHeadAttention(num_kv_heads=...).

References: a loop over the query heads, each attending with the loop reference of
``tests/reference.py`` (no library code) to key/value head ``i // g``; and plain
attention on keys and values repeated ``g`` times (what PyTorch's ``enable_gqa``
is documented to be equal to).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import reference_attention

from attention_lib import (
    MultiHeadAttention,
    grouped_query_attention,
    scaled_dot_product_attention,
)


def per_head_loop(q, k, v, mask=None, causal=False):
    """Head by head: query head i attends to key/value head i // (h / h_kv)."""
    h, h_kv = q.shape[-3], k.shape[-3]
    group = h // h_kv
    if mask is not None:
        mask = np.asarray(mask)
        mask = mask.reshape((1,) * max(0, 3 - mask.ndim) + mask.shape)
    outs, weights = [], []
    for i in range(h):
        head_mask = None if mask is None else mask[..., i if mask.shape[-3] > 1 else 0, :, :]
        out, w = reference_attention(q[..., i, :, :], k[..., i // group, :, :],
                                     v[..., i // group, :, :], mask=head_mask, causal=causal)
        outs.append(out)
        weights.append(w)
    return np.stack(outs, axis=-3), np.stack(weights, axis=-3)


def random_heads(seed, lead, h, h_kv, n_q, n_k, d_k=4, d_v=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(*lead, h, n_q, d_k)).astype(dtype)
    k = rng.normal(size=(*lead, h_kv, n_k, d_k)).astype(dtype)
    v = rng.normal(size=(*lead, h_kv, n_k, d_v)).astype(dtype)
    return q, k, v


CASES = [  # (lead, h, h_kv, n_q, n_k)
    ((), 4, 2, 5, 5),
    ((), 4, 1, 5, 5),  # multi-query attention
    ((), 3, 3, 4, 6),  # as many key/value heads as query heads
    ((2,), 6, 2, 3, 7),  # n_q < n_k
    ((2, 2), 8, 4, 6, 6),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("lead", "h", "h_kv", "n_q", "n_k"), CASES)
def test_grouped_query_attention_equals_a_loop_over_heads(lead, h, h_kv, n_q, n_k, causal):
    q, k, v = random_heads(h * 10 + h_kv + n_k, lead, h, h_kv, n_q, n_k)
    out, w = grouped_query_attention(q, k, v, causal=causal)
    expected_out, expected_w = per_head_loop(q, k, v, causal=causal)
    assert out.shape == (*lead, h, n_q, 3) and w.shape == (*lead, h, n_q, n_k)
    np.testing.assert_allclose(out, expected_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, expected_w, rtol=0, atol=1e-12)
    # The same as plain attention on keys and values repeated g times (torch's enable_gqa).
    group = h // h_kv
    rep_out, rep_w = scaled_dot_product_attention(q, np.repeat(k, group, axis=-3),
                                                  np.repeat(v, group, axis=-3), causal=causal)
    np.testing.assert_allclose(out, rep_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, rep_w, rtol=0, atol=1e-12)


def test_query_head_i_uses_key_value_head_i_over_g():
    # Each key/value head holds one constant value: head i's output says which it used.
    h, h_kv, n = 6, 3, 4
    q, k, _ = random_heads(1, (), h, h_kv, n, n)
    v = np.broadcast_to(np.arange(h_kv, dtype=float)[:, None, None], (h_kv, n, 1))
    out, _ = grouped_query_attention(q, k, v)
    np.testing.assert_allclose(out[..., 0].mean(axis=-1), [0, 0, 1, 1, 2, 2], atol=1e-12)


@pytest.mark.parametrize("mask_shape", ["shared", "per_head", "per_batch"])
def test_masks_apply_per_query_head(mask_shape):
    lead, h, h_kv, n_q, n_k = (2,), 4, 2, 5, 6
    q, k, v = random_heads(2, lead, h, h_kv, n_q, n_k)
    rng = np.random.default_rng(3)
    shape = {"shared": (n_q, n_k), "per_head": (h, n_q, n_k),
             "per_batch": (2, 1, n_q, n_k)}[mask_shape]
    mask = rng.random(shape) < 0.7
    mask[..., -1] = True  # every query keeps a key
    out, w = grouped_query_attention(q, k, v, mask=mask, causal=True)
    expected_out, expected_w = per_head_loop(q, k, v, mask=np.broadcast_to(
        mask, (*lead, *shape[-3:])) if mask_shape == "per_batch" else mask, causal=True)
    np.testing.assert_allclose(out, expected_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, expected_w, rtol=0, atol=1e-12)


@given(h_kv=st.integers(1, 3), group=st.integers(1, 4), n_q=st.integers(1, 6),
       extra=st.integers(0, 4), causal=st.booleans(), float32=st.booleans(),
       seed=st.integers(0, 2**16))
def test_grouped_query_attention_property(h_kv, group, n_q, extra, causal, float32, seed):
    dtype = np.float32 if float32 else np.float64
    q, k, v = random_heads(seed, (2,), h_kv * group, h_kv, n_q, n_q + extra, dtype=dtype)
    out, w = grouped_query_attention(q, k, v, causal=causal)
    assert out.dtype == w.dtype == dtype
    expected_out, expected_w = per_head_loop(q, k, v, causal=causal)
    atol = 1e-6 if float32 else 1e-12
    np.testing.assert_allclose(out, expected_out, rtol=0, atol=atol)
    np.testing.assert_allclose(w, expected_w, rtol=0, atol=atol)


def test_float16_is_computed_in_float32_and_batch_axes_broadcast():
    q, k, v = random_heads(4, (2,), 4, 2, 3, 3, dtype=np.float16)
    out, w = grouped_query_attention(q, k[:1], v[:1], causal=True)  # keys shared by the batch
    assert out.dtype == w.dtype == np.float16 and out.shape == (2, 4, 3, 3)
    expected, _ = per_head_loop(q, np.broadcast_to(k[:1], k.shape), np.broadcast_to(v[:1], v.shape),
                                causal=True)
    np.testing.assert_allclose(out, expected, rtol=0, atol=5e-3)


@pytest.mark.parametrize(("shapes", "error", "pattern"), [
    (((4, 3, 2), (3, 5, 2), (3, 5, 1)), ValueError,
     r"^q has h=4 heads \(shape \(4, 3, 2\).*k has h_kv=3 .*multiple of h_kv"),
    (((4, 3, 2), (2, 5, 2), (1, 5, 1)), ValueError, r"^k has h_kv=2 heads .* but v has 1"),
    (((4, 3, 2), (2, 5, 3), (2, 5, 1)), ValueError, r"^q has d_k=2 .* k has d_k=3"),
    (((4, 3, 2), (2, 5, 2), (2, 4, 1)), ValueError, r"^k has n_k=5 positions .* v has 4"),
    (((3, 2), (5, 2), (5, 1)), ValueError, r"^q has 2 dimension\(s\) .*expected at least 3"),
    (((2, 4, 3, 2), (3, 2, 5, 2), (3, 2, 5, 1)), ValueError,
     r"^the leading \(batch\) axes before the heads do not broadcast"),
])
def test_bad_shapes_are_named(shapes, error, pattern):
    q, k, v = (np.ones(s) for s in shapes)
    with pytest.raises(error, match=pattern):
        grouped_query_attention(q, k, v)


def test_bad_mask_and_flags():
    q, k, v = random_heads(5, (), 4, 2, 3, 3)
    with pytest.raises(ValueError, match=re.escape(
            "mask has shape (2, 3, 3), dtype bool; expected a shape broadcastable to the "
            "weights (..., h, n_q, n_k) = (4, 3, 3)")):
        grouped_query_attention(q, k, v, mask=np.ones((2, 3, 3), dtype=bool))
    with pytest.raises(TypeError, match=r"^mask has dtype float64"):
        grouped_query_attention(q, k, v, mask=np.ones((3, 3)))
    with pytest.raises(TypeError, match=r"^causal='yes'"):
        grouped_query_attention(q, k, v, causal="yes")
    with pytest.raises(ValueError, match=r"n_q=3 queries and n_k=2 keys"):
        grouped_query_attention(q, k[..., :2, :], v[..., :2, :], causal=True)


# --------------------------------------------------------------------------------------
# MultiHeadAttention(num_kv_heads=...)
# --------------------------------------------------------------------------------------


def mha_loop(mha, x, causal=False):
    """The layer head by head from its matrices: head i uses key/value columns of i // g."""
    d_head, group = mha.d_head, mha.num_heads // mha.num_kv_heads
    heads = []
    for i in range(mha.num_heads):
        a = (i // group) * d_head
        q = x @ mha.W_Q[:, i * d_head:(i + 1) * d_head]
        k = x @ mha.W_K[:, a:a + d_head]
        v = x @ mha.W_V[:, a:a + d_head]
        heads.append(reference_attention(q, k, v, causal=causal)[0])
    return np.concatenate(heads, axis=-1) @ mha.W_O


@pytest.mark.parametrize(("d_model", "h", "h_kv"), [(8, 4, 2), (12, 6, 1), (12, 6, 3), (8, 2, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_layer_with_fewer_key_value_heads_matches_a_loop(d_model, h, h_kv, causal):
    mha = MultiHeadAttention(d_model, h, num_kv_heads=h_kv, rng=np.random.default_rng(7))
    assert mha.W_K.shape == mha.W_V.shape == (d_model, h_kv * d_model // h)
    assert mha.W_Q.shape == mha.W_O.shape == (d_model, d_model)
    x = np.random.default_rng(8).normal(size=(5, d_model))
    out, w = mha(x, causal=causal)
    assert w.shape == (h, 5, 5)
    np.testing.assert_allclose(out, mha_loop(mha, x, causal), rtol=0, atol=1e-12)


def test_parameter_count_and_repr():
    d_model, h, h_kv = 16, 8, 2
    mha = MultiHeadAttention(d_model, h, num_kv_heads=h_kv, rng=np.random.default_rng(0))
    d_head = d_model // h
    assert mha.num_parameters == 2 * d_model**2 + 2 * d_model * h_kv * d_head == 640
    assert repr(mha) == "MultiHeadAttention(d_model=16, num_heads=8, num_kv_heads=2, d_head=2)"
    same = MultiHeadAttention(d_model, h, num_kv_heads=h, rng=np.random.default_rng(0))
    default = MultiHeadAttention(d_model, h, rng=np.random.default_rng(0))
    assert same.num_kv_heads == default.num_kv_heads == h
    assert repr(same) == repr(default) == "MultiHeadAttention(d_model=16, num_heads=8, d_head=2)"
    for name, w in default.parameters().items():  # the same draws as before num_kv_heads
        np.testing.assert_array_equal(w, same.parameters()[name])


def test_grouped_layer_keeps_float32_and_takes_masks_and_context():
    mha = MultiHeadAttention(8, 4, num_kv_heads=2, rng=np.random.default_rng(9))
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    memory = rng.normal(size=(2, 5, 8)).astype(np.float32)
    mask = np.ones((1, 4, 3, 5), dtype=bool)  # (batch, h, n_q, n_k): a mask per head
    mask[:, 1, :, 0] = False  # head 1 may not see key 0
    out, w = mha(x, memory, mask=mask)
    assert out.dtype == w.dtype == np.float32 and w.shape == (2, 4, 3, 5)
    assert np.all(w[:, 1, :, 0] == 0) and np.all(w[:, 0, :, 0] > 0)


@pytest.mark.parametrize(("kv", "error", "pattern"), [
    (3, ValueError, r"^num_heads=4 is not a multiple of num_kv_heads=3"),
    (8, ValueError, r"^num_heads=4 is not a multiple of num_kv_heads=8"),
    (0, ValueError, r"^num_kv_heads=0; expected a positive integer"),
    (2.0, TypeError, r"^num_kv_heads=2.0; expected a positive integer"),
    (True, TypeError, r"^num_kv_heads=True"),
])
def test_bad_num_kv_heads(kv, error, pattern):
    with pytest.raises(error, match=pattern):
        MultiHeadAttention(8, 4, num_kv_heads=kv)


def test_a_replaced_key_matrix_of_the_wrong_shape_is_named():
    mha = MultiHeadAttention(8, 4, num_kv_heads=2, rng=np.random.default_rng(0))
    mha.W_K = np.ones((8, 8))
    with pytest.raises(ValueError, match=re.escape(
            "W_K has shape (8, 8), dtype float64; expected shape (d_model, num_kv_heads * "
            "d_head) = (8, 4)")):
        mha(np.ones((2, 8)))


def test_a_query_head_left_without_keys_is_named_by_head_and_query():
    q, k, v = random_heads(6, (), 4, 2, 3, 3)
    mask = np.ones((4, 3, 3), dtype=bool)
    mask[2, 1] = False  # query head 2, query 1: no key
    with pytest.raises(ValueError, match=re.escape(
            "mask leaves 1 query row(s) with no key to attend to, at (..., head, query) index "
            "(2, 1); their softmax is undefined. Expected a mask that leaves every query at "
            "least one key")):
        grouped_query_attention(q, k, v, mask=mask)
    mask = np.ones((4, 3, 3), dtype=bool)
    mask[3, 0, 0] = False  # with the causal rule query 0 sees key 0 only
    with pytest.raises(ValueError, match=r"at \(\.\.\., head, query\) index \(3, 0\)"):
        grouped_query_attention(q, k, v, mask=mask, causal=True)
    grouped_query_attention(q, k, v, mask=mask)  # without it query 0 keeps keys 1 and 2
