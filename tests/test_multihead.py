"""Tests of multi-head attention, split_heads and merge_heads.

The reference below loops over batch entries, heads, queries and keys in
Python. It slices head ``i``'s columns out of ``W_Q``, ``W_K``, ``W_V`` and the
same rows out of ``W_O`` itself, computes the scores with ``math.fsum`` and the
softmax with ``math.exp``, and adds up each head's share of the output
(``head_i @ W_O[rows of i]``) instead of concatenating. It uses neither
``attention_lib``'s attention nor its split/merge helpers.
"""

from __future__ import annotations

import math
import re

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib import MultiHeadAttention, merge_heads, split_heads

# --------------------------------------------------------------------------------------
# Independent slow reference
# --------------------------------------------------------------------------------------


def reference_multihead(x, context, w_q, w_k, w_v, w_o, num_heads, mask=None, causal=False):
    """Multi-head attention, one batch entry, head, query and key at a time.

    ``x`` (..., n_q, d_model), ``context`` (..., n_k, d_model) or None (= x),
    ``mask`` (bool, broadcastable to (..., n_q, n_k), shared by the heads).
    Returns ``(output (..., n_q, d_model), weights (..., h, n_q, n_k))`` in float64.
    """
    x = np.asarray(x, dtype=np.float64)
    c = x if context is None else np.asarray(context, dtype=np.float64)
    w_q, w_k, w_v, w_o = (np.asarray(w, dtype=np.float64) for w in (w_q, w_k, w_v, w_o))
    n_q, d_model = x.shape[-2:]
    n_k = c.shape[-2]
    d = d_model // num_heads
    lead = [x.shape[:-2], c.shape[:-2]]
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        mask = mask.reshape((1,) * max(0, 2 - mask.ndim) + mask.shape)
        lead.append(mask.shape[:-2])
    batch = np.broadcast_shapes(*lead)
    x = np.broadcast_to(x, (*batch, n_q, d_model))
    c = np.broadcast_to(c, (*batch, n_k, d_model))
    if mask is not None:
        mask = np.broadcast_to(mask, (*batch, n_q, n_k))

    output = np.zeros((*batch, n_q, d_model))
    weights = np.zeros((*batch, num_heads, n_q, n_k))
    for b in np.ndindex(*batch):
        for head in range(num_heads):
            cols = slice(head * d, (head + 1) * d)
            q = (x[b] @ w_q[:, cols]).tolist()  # this head's queries, n_q x d
            k = (c[b] @ w_k[:, cols]).tolist()  # this head's keys, n_k x d
            v = (c[b] @ w_v[:, cols]).tolist()  # this head's values, n_k x d
            head_out = np.zeros((n_q, d))
            for i in range(n_q):
                allowed = [
                    (mask is None or bool(mask[(*b, i, j)]))
                    and not (causal and j > i + n_k - n_q)
                    for j in range(n_k)
                ]
                scores = [math.fsum(q[i][t] * k[j][t] for t in range(d)) / math.sqrt(d)
                          for j in range(n_k)]
                top = max(s for s, ok in zip(scores, allowed, strict=True) if ok)
                exps = [math.exp(s - top) if ok else 0.0
                        for s, ok in zip(scores, allowed, strict=True)]
                total = math.fsum(exps)
                for j in range(n_k):
                    weights[(*b, head, i, j)] = exps[j] / total
                for t in range(d):
                    head_out[i, t] = math.fsum(exps[j] / total * v[j][t] for j in range(n_k))
            # Concat(heads) @ W_O is the sum of each head's block times its rows of W_O.
            output[b] += head_out @ w_o[cols, :]
    return output, weights


def reference_of(mha, x, context=None, mask=None, causal=False):
    return reference_multihead(x, context, mha.W_Q, mha.W_K, mha.W_V, mha.W_O,
                               mha.num_heads, mask=mask, causal=causal)


def check(mha, x, context=None, *, mask=None, causal=False, tol=1e-10):
    out, w = mha(x, context, mask=mask, causal=causal)
    ref_out, ref_w = reference_of(mha, x, context, mask, causal)
    assert out.shape == ref_out.shape
    assert w.shape == ref_w.shape
    np.testing.assert_allclose(w, ref_w, rtol=tol, atol=tol)
    np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol)
    return out, w


def test_reference_with_one_head_and_identity_weights_is_plain_attention():
    # Checks the reference itself by hand: W = I, one head, two tokens.
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    eye = np.eye(2)
    out, w = reference_multihead(x, None, eye, eye, eye, eye, 1)
    s = 1.0 / math.sqrt(2.0)  # score of a token with itself; 0 with the other
    w_self = math.exp(s) / (math.exp(s) + 1.0)
    np.testing.assert_allclose(w[0], [[w_self, 1 - w_self], [1 - w_self, w_self]], rtol=1e-15)
    np.testing.assert_allclose(out, w[0] @ x, rtol=1e-15)


# --------------------------------------------------------------------------------------
# Agreement with the reference
# --------------------------------------------------------------------------------------


def make(d_model, num_heads, seed=0):
    return MultiHeadAttention(d_model, num_heads, rng=np.random.default_rng(seed))


@pytest.mark.parametrize(("d_model", "num_heads"), [(4, 1), (4, 2), (6, 3), (8, 4), (8, 8)])
def test_self_attention_matches_per_head_loop(d_model, num_heads):
    mha = make(d_model, num_heads)
    x = np.random.default_rng(1).normal(size=(5, d_model))
    out, w = check(mha, x)
    assert out.shape == (5, d_model)
    assert w.shape == (num_heads, 5, 5)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


def test_default_context_is_x():
    mha = make(6, 2)
    x = np.random.default_rng(2).normal(size=(4, 6))
    a, b = mha(x), mha(x, x)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize(("n_q", "n_k"), [(3, 7), (6, 2), (1, 5)])
def test_cross_attention_matches_per_head_loop(n_q, n_k):
    mha = make(8, 2, seed=3)
    rng = np.random.default_rng(4)
    x, memory = rng.normal(size=(n_q, 8)), rng.normal(size=(n_k, 8))
    out, w = check(mha, x, memory)
    assert out.shape == (n_q, 8)
    assert w.shape == (2, n_q, n_k)


def test_cross_attention_keys_and_values_come_from_context():
    # Changing x changes nothing about what the queries can retrieve: with all-equal
    # context rows every query must get uniform weights and the same output row.
    mha = make(4, 2, seed=5)
    x = np.random.default_rng(6).normal(size=(3, 4))
    memory = np.tile(np.random.default_rng(7).normal(size=(1, 4)), (5, 1))
    out, w = mha(x, memory)
    np.testing.assert_allclose(w, 0.2, rtol=1e-12)
    np.testing.assert_allclose(out, np.broadcast_to(out[0], out.shape), rtol=1e-12)


def test_causal_self_attention_matches_per_head_loop():
    mha = make(6, 3, seed=8)
    x = np.random.default_rng(9).normal(size=(5, 6))
    _, w = check(mha, x, causal=True)
    upper = np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.all(w[:, upper] == 0.0)
    np.testing.assert_allclose(w[:, 0, 0], 1.0)


def test_causal_cross_attention_with_fewer_queries_than_keys():
    mha = make(4, 2, seed=10)
    rng = np.random.default_rng(11)
    _, w = check(mha, rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), causal=True)
    assert np.all(w[:, 0, 4] == 0.0)  # query 0 sits at position 3 of 5
    assert np.all(w[:, 1, :] > 0.0)


def test_mask_is_shared_by_all_heads_and_matches_per_head_loop():
    mha = make(8, 4, seed=12)
    x = np.random.default_rng(13).normal(size=(2, 4, 8))
    mask = np.array([[True, True, False, True],
                     [True, False, False, True],
                     [False, True, True, True],
                     [True, True, True, False]])
    _, w = check(mha, x, mask=mask)
    assert w.shape == (2, 4, 4, 4)
    assert np.all(w[..., ~mask] == 0.0)


def test_key_padding_mask_per_batch_entry():
    mha = make(4, 2, seed=14)
    rng = np.random.default_rng(15)
    x, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    mask = np.array([[True] * 5, [True, True, True, False, False]])[:, None, :]  # (2, 1, 5)
    _, w = check(mha, x, memory, mask=mask)
    assert np.all(w[1, ..., 3:] == 0.0)
    assert np.all(w[0] > 0.0)


def test_mask_and_causal_combine():
    mha = make(4, 2, seed=16)
    x = np.random.default_rng(17).normal(size=(4, 4))
    mask = np.array([True, False, True, True])  # key 1 is padding
    _, w = check(mha, x, mask=mask, causal=True)
    assert np.all(w[..., 1] == 0.0)
    assert np.all(w[:, np.triu_indices(4, k=1)[0], np.triu_indices(4, k=1)[1]] == 0.0)


def test_batch_axes_match_one_call_per_entry():
    mha = make(6, 2, seed=18)
    x = np.random.default_rng(19).normal(size=(2, 3, 4, 6))
    out, w = check(mha, x)
    assert out.shape == (2, 3, 4, 6)
    assert w.shape == (2, 3, 2, 4, 4)
    for b in np.ndindex(2, 3):
        out_b, w_b = mha(x[b])
        np.testing.assert_allclose(out[b], out_b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(w[b], w_b, rtol=1e-12, atol=1e-12)


def test_context_batch_axes_broadcast_against_x():
    mha = make(4, 2, seed=20)
    rng = np.random.default_rng(21)
    x, memory = rng.normal(size=(3, 2, 4)), rng.normal(size=(5, 4))  # one shared memory
    out, w = check(mha, x, memory)
    assert out.shape == (3, 2, 4)
    assert w.shape == (3, 2, 2, 5)


def test_one_head_is_single_head_attention_then_output_projection():
    mha = make(5, 1, seed=22)
    x = np.random.default_rng(23).normal(size=(4, 5))
    q, k, v = x @ mha.W_Q, x @ mha.W_K, x @ mha.W_V
    heads, w_single = al.scaled_dot_product_attention(q, k, v)
    out, w = mha(x)
    np.testing.assert_allclose(w[0], w_single, rtol=1e-12)
    np.testing.assert_allclose(out, heads @ mha.W_O, rtol=1e-12)


def test_heads_use_columns_of_w_qkv_and_rows_of_w_o():
    # With head 1's rows of W_O set to zero, the output is head 0's contribution alone,
    # computed here from head 0's columns of W_Q, W_K, W_V and its rows of W_O.
    mha = make(4, 2, seed=24)
    mha.W_O[2:, :] = 0.0
    x = np.random.default_rng(25).normal(size=(3, 4))
    out, _ = mha(x)
    q, k, v = x @ mha.W_Q[:, :2], x @ mha.W_K[:, :2], x @ mha.W_V[:, :2]
    head0, _ = al.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out, head0 @ mha.W_O[:2, :], rtol=1e-12)


@st.composite
def multihead_inputs(draw):
    """A seeded layer, x, optional context and mask with broadcasting batch axes."""
    # (the third of the mutually broadcastable shapes is unused: the mask's axes are drawn below)
    num_heads = draw(st.integers(1, 4))
    d_head = draw(st.integers(1, 3))
    d_model = num_heads * d_head
    cross = draw(st.booleans())
    causal = draw(st.booleans())
    n_q = draw(st.integers(1, 5))
    n_k = draw(st.integers(n_q if causal else 1, 6)) if cross else n_q
    shapes = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=3, min_dims=0, max_dims=2, min_side=1, max_side=3))
    lx, lc, _ = shapes.input_shapes
    elements = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)
    x = draw(hnp.arrays(np.float64, (*lx, n_q, d_model), elements=elements))
    context = (draw(hnp.arrays(np.float64, (*lc, n_k, d_model), elements=elements))
               if cross else None)
    mask = None
    if draw(st.booleans()):
        # The mask's leading axes broadcast to the batch of x and context without adding
        # any: one axis more than that would be a head axis (a mask per head).
        batch = np.broadcast_shapes(lx, lc if cross else ())
        kept = batch[len(batch) - draw(st.integers(0, len(batch))):]
        lm = tuple(draw(st.sampled_from([1, size])) for size in kept)
        mask = draw(hnp.arrays(np.bool_, (*lm, n_q, n_k)))
        mask[..., 0] = True  # key 0 is visible under the causal rule too: no empty row
    mha = make(d_model, num_heads, seed=draw(st.integers(0, 2**32 - 1)))
    return mha, x, context, mask, causal


@given(multihead_inputs())
def test_random_shapes_match_per_head_loop(case):
    mha, x, context, mask, causal = case
    out, w = check(mha, x, context, mask=mask, causal=causal)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    assert w.shape[-3] == mha.num_heads
    assert out.shape[-1] == mha.d_model


# --------------------------------------------------------------------------------------
# Dtypes and determinism
# --------------------------------------------------------------------------------------


def test_float32_stays_float32():
    mha = make(8, 2, seed=26)
    x = np.random.default_rng(27).normal(size=(2, 5, 8)).astype(np.float32)
    memory = np.random.default_rng(28).normal(size=(3, 8)).astype(np.float32)
    for out, w in (mha(x), mha(x, memory, causal=False), mha(x, causal=True)):
        assert out.dtype == np.float32
        assert w.dtype == np.float32
    out, w = mha(x)
    ref_out, ref_w = reference_of(mha, x)
    np.testing.assert_allclose(w, ref_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-5)
    assert mha.W_Q.dtype == np.float64  # the stored weights are not changed by a call


def test_float64_stays_float64_and_integers_become_float64():
    mha = make(4, 2, seed=29)
    assert mha(np.ones((3, 4)))[0].dtype == np.float64
    out, w = mha(np.arange(12).reshape(3, 4))
    assert out.dtype == np.float64
    assert w.dtype == np.float64


def test_mixed_float32_x_float64_context_computes_in_float64():
    mha = make(4, 2, seed=30)
    out, _ = mha(np.ones((2, 4), dtype=np.float32), np.ones((3, 4)))
    assert out.dtype == np.float64


def test_same_seed_same_weights_and_documented_scale():
    a, b = make(256, 8, seed=31), make(256, 8, seed=31)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        w = getattr(a, name)
        assert w.shape == (256, 256)
        # 65536 draws: the sample std is within ~0.3 % of 1/16 (seeded, so deterministic).
        assert abs(w.std() - 1 / 16) < 0.02 / 16
        assert abs(w.mean()) < 0.002
    assert not np.array_equal(a.W_Q, a.W_K)


def test_default_rng_is_accepted():
    mha = MultiHeadAttention(4, 2)
    assert mha.W_Q.shape == (4, 4)


# --------------------------------------------------------------------------------------
# split_heads and merge_heads
# --------------------------------------------------------------------------------------


def test_split_heads_layout_against_a_loop():
    x = np.random.default_rng(32).normal(size=(2, 3, 12))
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 3, 3)
    for b in range(2):
        for i in range(4):
            for t in range(3):
                for c in range(3):
                    assert heads[b, i, t, c] == x[b, t, i * 3 + c]


def test_merge_heads_layout_against_a_loop():
    y = np.random.default_rng(33).normal(size=(3, 2, 4))  # 3 heads, 2 positions, d_head 4
    merged = merge_heads(y)
    assert merged.shape == (2, 12)
    for t in range(2):
        row = []
        for i in range(3):
            row.extend(y[i, t].tolist())
        assert merged[t].tolist() == row


@given(data=st.data())
def test_split_merge_round_trip(data):
    h = data.draw(st.integers(1, 4))
    d_head = data.draw(st.integers(1, 4))
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n = data.draw(st.integers(1, 4))
    x = data.draw(hnp.arrays(np.float64, (*lead, n, h * d_head),
                             elements=st.floats(-10, 10)))
    heads = split_heads(x, h)
    assert heads.shape == (*lead, h, n, d_head)
    np.testing.assert_array_equal(merge_heads(heads), x)
    np.testing.assert_array_equal(split_heads(merge_heads(heads), h), heads)


def test_split_heads_keeps_float32():
    assert split_heads(np.ones((2, 4), dtype=np.float32), 2).dtype == np.float32
    assert merge_heads(np.ones((2, 2, 2), dtype=np.float32)).dtype == np.float32


# --------------------------------------------------------------------------------------
# Parameter count
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [4, 12, 24])
def test_parameter_count_does_not_depend_on_number_of_heads(d_model):
    counts = set()
    for h in [h for h in range(1, d_model + 1) if d_model % h == 0]:
        mha = make(d_model, h)
        by_arrays = sum(w.size for w in (mha.W_Q, mha.W_K, mha.W_V, mha.W_O))
        assert mha.num_parameters == by_arrays
        # Per head: three (d_model, d_head) projections and a (d_head, d_model) block of W_O.
        per_head = 3 * d_model * mha.d_head + mha.d_head * d_model
        assert h * per_head == by_arrays
        counts.add(by_arrays)
    assert counts == {4 * d_model**2}


def test_parameters_are_the_attributes():
    mha = make(4, 2)
    params = mha.parameters()
    assert list(params) == ["W_Q", "W_K", "W_V", "W_O"]
    assert params["W_O"] is mha.W_O


def test_repr_names_the_sizes():
    assert repr(make(8, 2)) == "MultiHeadAttention(d_model=8, num_heads=2, d_head=4)"


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


def test_d_model_not_divisible_names_both():
    with pytest.raises(ValueError, match=r"d_model=10 .*num_heads=4"):
        MultiHeadAttention(10, 4)


@pytest.mark.parametrize(("kwargs", "name", "exc"), [
    ({"d_model": 0, "num_heads": 1}, "d_model", ValueError),
    ({"d_model": -4, "num_heads": 2}, "d_model", ValueError),
    ({"d_model": 4, "num_heads": 0}, "num_heads", ValueError),
    ({"d_model": 4.0, "num_heads": 2}, "d_model", TypeError),
    ({"d_model": 4, "num_heads": "2"}, "num_heads", TypeError),
    ({"d_model": True, "num_heads": 1}, "d_model", TypeError),
    ({"d_model": 4, "num_heads": None}, "num_heads", TypeError),
])
def test_bad_sizes(kwargs, name, exc):
    with pytest.raises(exc, match=rf"^{name}="):
        MultiHeadAttention(**kwargs)


def test_numpy_integer_sizes_are_accepted():
    mha = MultiHeadAttention(np.int64(6), np.int32(3), rng=np.random.default_rng(0))
    assert (mha.d_model, mha.num_heads, mha.d_head) == (6, 3, 2)
    assert type(mha.d_head) is int


@pytest.mark.parametrize("rng", [0, np.random.RandomState(0), "seed"])
def test_bad_rng(rng):
    with pytest.raises(TypeError, match=r"^rng="):
        MultiHeadAttention(4, 2, rng=rng)


def test_x_with_wrong_last_axis_is_named():
    mha = make(8, 2)
    with pytest.raises(ValueError, match=r"^x has last axis 6 .*d_model=8"):
        mha(np.ones((3, 6)))


def test_context_with_wrong_last_axis_is_named():
    mha = make(8, 2)
    with pytest.raises(ValueError, match=r"^context has last axis 4 .*d_model=8"):
        mha(np.ones((3, 8)), np.ones((5, 4)))


@pytest.mark.parametrize(("x", "exc"), [
    (np.ones(8), ValueError),                   # one token without a sequence axis
    (np.ones((0, 8)), ValueError),              # empty sequence
    (np.full((2, 8), np.nan), ValueError),
    (np.ones((2, 8), dtype=bool), TypeError),
    (None, TypeError),
])
def test_bad_x(x, exc):
    with pytest.raises(exc, match=r"^x "):
        make(8, 2)(x)


def test_bad_context_is_named():
    with pytest.raises(ValueError, match=r"^context "):
        make(8, 2)(np.ones((2, 8)), np.ones(8))


def test_batch_axes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"leading \(batch\) axes of x"):
        make(4, 2)(np.ones((2, 3, 4)), np.ones((3, 5, 4)))


def test_mask_with_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"^mask has shape \(3, 3\)"):
        make(4, 2)(np.ones((2, 4)), mask=np.ones((3, 3), dtype=bool))


def test_float_mask_is_refused():
    with pytest.raises(TypeError, match=r"^mask has dtype float64"):
        make(4, 2)(np.ones((2, 4)), mask=np.zeros((2, 2)))


def test_causal_with_more_queries_than_keys_raises():
    with pytest.raises(ValueError, match="n_q=3"):
        make(4, 2)(np.ones((3, 4)), np.ones((2, 4)), causal=True)


def test_weight_replaced_with_wrong_shape_is_named():
    mha = make(4, 2)
    mha.W_V = np.ones((4, 3))
    with pytest.raises(ValueError, match=re.escape("W_V has shape (4, 3)")):
        mha(np.ones((2, 4)))


@pytest.mark.parametrize(("x", "h", "exc", "pattern"), [
    (np.ones((2, 6)), 4, ValueError, r"^x has last axis d_model=6 .*num_heads=4"),
    (np.ones((2, 6)), 0, ValueError, r"^num_heads=0"),
    (np.ones((2, 6)), 2.0, TypeError, r"^num_heads=2.0"),
    (np.ones(6), 2, ValueError, r"^x has 1 dimension"),
])
def test_split_heads_bad_input(x, h, exc, pattern):
    with pytest.raises(exc, match=pattern):
        split_heads(x, h)


def test_merge_heads_needs_a_head_axis():
    with pytest.raises(ValueError, match=r"^x has 2 dimension"):
        merge_heads(np.ones((2, 4)))


# --------------------------------------------------------------------------------------
# a mask per head
# --------------------------------------------------------------------------------------


def test_a_mask_per_head_applies_to_its_head():
    rng = np.random.default_rng(61)
    mha = MultiHeadAttention(8, 2, rng=rng)
    x = rng.normal(size=(1, 5, 8))
    causal = np.tri(5, dtype=bool)
    window = causal & ~np.tri(5, k=-2, dtype=bool)  # each query sees itself and one before
    per_head = np.stack([causal, window])[None]  # (1, h, n, n)
    out, w = mha(x, mask=per_head)
    assert out.shape == (1, 5, 8) and w.shape == (1, 2, 5, 5)
    # Head i with mask i equals that head when the whole layer uses mask i.
    _, w_causal = mha(x, mask=causal)
    _, w_window = mha(x, mask=window)
    np.testing.assert_array_equal(w[0, 0], w_causal[0, 0])
    np.testing.assert_array_equal(w[0, 1], w_window[0, 1])
    assert np.all(w[0, 1][~window] == 0)


def test_a_mask_with_batch_axes_the_input_lacks_is_refused():
    mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(0))
    x = np.ones((1, 5, 8))
    with pytest.raises(ValueError, match=r"^mask has shape \(3, 1, 2, 5, 5\).*one mask per head"):
        mha(x, mask=np.ones((3, 1, 2, 5, 5), dtype=bool))
    with pytest.raises(ValueError, match=r"^mask has shape \(1, 3, 5, 5\)"):
        mha(x, mask=np.ones((1, 3, 5, 5), dtype=bool))  # 3 heads' masks for 2 heads


def test_float16_is_computed_in_float32():
    mha = MultiHeadAttention(8, 2, rng=np.random.default_rng(40))
    mha.W_Q = mha.W_K = mha.W_V = np.ones((8, 8)) / 4
    mha.W_O = np.eye(8) / 1000
    x = np.random.default_rng(41).uniform(30000, 40000, size=(6, 8)).astype(np.float16)
    out16, w16 = mha(x)  # a row of x @ W_Q sums to ~70000: beyond float16's 65504
    out64, w64 = mha(x.astype(np.float64))
    assert out16.dtype == w16.dtype == np.float16
    assert np.all(np.isfinite(out16)) and np.all(np.isfinite(w16))
    np.testing.assert_allclose(out16.astype(np.float64), out64, rtol=2e-3)
    np.testing.assert_allclose(w16.astype(np.float64), w64, atol=2e-3)
