"""Tests of scaled dot-product attention, the causal mask and the Q, K, V projections.

The reference implementation below is written from the equation with explicit
Python loops over batch entries, queries and keys, ``math.exp`` and Python
floats. It shares no code with ``attention_lib``: numpy is used only to
broadcast the inputs to a common shape and to hold the results.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import reference_attention

import attention_lib as al
from attention_lib import causal_mask, project_qkv, scaled_dot_product_attention

# The independent slow reference, reference_attention, is in tests/reference.py.




def reference_causal(n_q, n_k):
    """Nested lists: True where query i may attend to key j (j <= i + n_k - n_q)."""
    return [[j <= i + n_k - n_q for j in range(n_k)] for i in range(n_q)]


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

FLOAT_DTYPES = [np.float32, np.float64]
DTYPE_IDS = ["float32", "float64"]
# Element bounds keep the float32 rounding error of the scores small against the tolerance.
BOUND = {np.float32: 2.0, np.float64: 5.0}
TOL = {np.float32: {"rtol": 1e-5, "atol": 1e-5}, np.float64: {"rtol": 1e-10, "atol": 1e-10}}


def elements(dtype):
    return st.floats(-BOUND[dtype], BOUND[dtype], allow_nan=False, allow_infinity=False,
                     width=32 if dtype == np.float32 else 64)


@st.composite
def attention_inputs(draw, dtype=np.float64, *, masked=False, causal=False, force_allowed=True,
                     max_batch_dims=3):
    """q, k, v (and a boolean mask or None) with broadcasting leading axes.

    Sizes n_q, n_k, d_k, d_v are in 1..6; with ``causal`` n_q <= n_k. With
    ``force_allowed`` every query row keeps at least one key, so that the
    default ``fully_masked="raise"`` policy does not fire.
    """
    n_k = draw(st.integers(1, 6))
    n_q = draw(st.integers(1, n_k)) if causal else draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 6))
    d_v = draw(st.integers(1, 6))
    lead = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=4, min_dims=0, max_dims=max_batch_dims, min_side=1, max_side=3))
    lq, lk, lv, lm = lead.input_shapes
    q = draw(hnp.arrays(dtype, (*lq, n_q, d_k), elements=elements(dtype)))
    k = draw(hnp.arrays(dtype, (*lk, n_k, d_k), elements=elements(dtype)))
    v = draw(hnp.arrays(dtype, (*lv, n_k, d_v), elements=elements(dtype)))
    mask = None
    if masked:
        tail = draw(st.sampled_from([(n_q, n_k), (1, n_k), (n_q, 1)]))
        mask = draw(hnp.arrays(np.bool_, (*lm, *tail)))
        if force_allowed:
            if causal:
                mask[..., 0] = True  # key 0 is visible to every query under the causal rule
            else:
                cols = draw(hnp.arrays(np.intp, mask.shape[:-1],
                                       elements=st.integers(0, mask.shape[-1] - 1)))
                np.put_along_axis(mask, cols[..., None], True, axis=-1)
    return q, k, v, mask


def full_mask(q, k, v, mask, causal):
    """The mask (True = may attend) the reference uses, broadcast to the weights' shape."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed = np.ones((n_q, n_k), dtype=bool) if mask is None else np.asarray(mask)
    if causal:
        allowed = allowed & np.array(reference_causal(n_q, n_k), dtype=bool)
    _, w = reference_attention(q, k, v, mask, causal)
    return np.broadcast_to(allowed, w.shape)


# --------------------------------------------------------------------------------------
# The reference itself, checked by hand
# --------------------------------------------------------------------------------------


def test_reference_on_a_hand_computed_example():
    q = [[1.0, 0.0]]
    k = [[1.0, 0.0], [0.0, 1.0]]
    v = [[10.0], [20.0]]
    s = 1.0 / math.sqrt(2.0)  # the two scores are 1/sqrt(2) and 0
    w0 = math.exp(s) / (math.exp(s) + math.exp(0.0))
    out, w = reference_attention(q, k, v)
    assert w.shape == (1, 2)
    assert out.shape == (1, 1)
    assert w[0].tolist() == pytest.approx([w0, 1.0 - w0], rel=1e-15)
    assert out[0, 0] == pytest.approx(10.0 * w0 + 20.0 * (1.0 - w0), rel=1e-15)


def test_hand_computed_example():
    q = np.array([[1.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([[10.0], [20.0]])
    s = 1.0 / math.sqrt(2.0)
    w0 = math.exp(s) / (math.exp(s) + 1.0)
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[w0, 1.0 - w0]], rtol=1e-14)
    np.testing.assert_allclose(out, [[10.0 * w0 + 20.0 * (1.0 - w0)]], rtol=1e-14)


def test_scaling_uses_sqrt_of_d_k_not_d_v():
    # Identical keys except for one: the weight ratio is exp(score difference).
    q = np.array([[2.0, 0.0, 0.0, 0.0]])  # d_k = 4, so the scale is 1/2
    k = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    v = np.zeros((2, 9))  # d_v = 9 must not enter the scale
    _, w = scaled_dot_product_attention(q, k, v)
    assert w[0, 0] / w[0, 1] == pytest.approx(math.exp(2.0 / 2.0), rel=1e-14)


# --------------------------------------------------------------------------------------
# Agreement with the reference (property-based)
# --------------------------------------------------------------------------------------


def check_against_reference(q, k, v, mask=None, *, causal=False, fully_masked="raise"):
    dtype = np.result_type(q, k, v)
    out, w = scaled_dot_product_attention(q, k, v, mask, causal=causal,
                                          fully_masked=fully_masked)
    ref_out, ref_w = reference_attention(q, k, v, mask, causal)
    assert out.dtype == dtype
    assert w.dtype == dtype
    assert out.shape == ref_out.shape
    # The weights do not depend on v: when only v has extra leading axes the library
    # returns them without those axes (see test_weights_shape_when_only_v_has_batch_axes).
    # Here the values are compared after broadcasting.
    assert w.shape[-2:] == ref_w.shape[-2:]
    w = np.broadcast_to(w, ref_w.shape)
    np.testing.assert_allclose(w, ref_w, **TOL[dtype.type])
    np.testing.assert_allclose(out, ref_out, **TOL[dtype.type])
    return out, w


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_matches_reference(dtype, data):
    q, k, v, _ = data.draw(attention_inputs(dtype))
    check_against_reference(q, k, v)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_masked_matches_reference(dtype, data):
    q, k, v, mask = data.draw(attention_inputs(dtype, masked=True))
    _, w = check_against_reference(q, k, v, mask)
    allowed = np.broadcast_to(mask, w.shape)
    assert np.all(w[~allowed] == 0.0)  # exactly zero, not merely small


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("masked", [False, True], ids=["causal", "causal+mask"])
@given(data=st.data())
def test_causal_matches_reference(dtype, masked, data):
    q, k, v, mask = data.draw(attention_inputs(dtype, masked=masked, causal=True))
    _, w = check_against_reference(q, k, v, mask, causal=True)
    n_q, n_k = w.shape[-2:]
    for i in range(n_q):
        for j in range(n_k):
            if j > i + n_k - n_q:
                assert np.all(w[..., i, j] == 0.0), (i, j)


@pytest.mark.parametrize("causal", [False, True])
@given(data=st.data())
def test_fully_masked_zero_matches_reference(causal, data):
    # Random masks, with no guarantee that a row keeps a key.
    q, k, v, mask = data.draw(attention_inputs(masked=True, causal=causal, force_allowed=False))
    out, w = check_against_reference(q, k, v, mask, causal=causal, fully_masked="zero")
    allowed = full_mask(q, k, v, mask, causal)
    empty = ~allowed.any(axis=-1)  # (..., n_q)
    assert np.all(w[empty] == 0.0)
    assert np.all(out[empty] == 0.0)
    np.testing.assert_allclose(w.sum(axis=-1), np.where(empty, 0.0, 1.0), rtol=1e-12)


@given(data=st.data())
def test_integer_input_matches_reference_in_float64(data):
    shapes = data.draw(st.tuples(*[st.integers(1, 5)] * 4))
    n_q, n_k, d_k, d_v = shapes
    ints = st.integers(-3, 3)
    q = data.draw(hnp.arrays(np.int64, (n_q, d_k), elements=ints))
    k = data.draw(hnp.arrays(np.int32, (n_k, d_k), elements=ints))
    v = data.draw(hnp.arrays(np.int8, (n_k, d_v), elements=ints))
    out, w = scaled_dot_product_attention(q, k, v)
    ref_out, ref_w = reference_attention(q, k, v)
    assert out.dtype == np.float64
    assert w.dtype == np.float64
    np.testing.assert_allclose(w, ref_w, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-10)


def test_example_broadcast_from_the_brief():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 3, 4, 5))
    k = rng.normal(size=(3, 6, 5))
    v = rng.normal(size=(1, 6, 2))
    out, w = check_against_reference(q, k, v)
    assert out.shape == (2, 3, 4, 2)
    assert w.shape == (2, 3, 4, 6)


def test_weights_shape_when_only_v_has_batch_axes():
    # The docstring promises weights of shape (..., n_q, n_k) with the leading axes of
    # q, k and v broadcast together, the same "..." as the output's (..., n_q, d_v).
    q, k, v = np.ones((3, 2)), np.ones((4, 2)), np.ones((5, 4, 1))
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (5, 3, 1)
    assert w.shape == (5, 3, 4)
    assert w.shape[:-2] == out.shape[:-2]


def test_mask_with_more_leading_axes_than_q_k_v():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 4] = True
    out, w = check_against_reference(q, k, v, mask)
    assert out.shape == (2, 3, 2)
    assert w.shape == (2, 3, 5)


def test_key_padding_mask_of_shape_n_k():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    mask = np.array([True, True, True, False, False])  # the last two keys are padding
    _, w = check_against_reference(q, k, v, mask)
    assert np.all(w[..., 3:] == 0.0)


# --------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------


@given(data=st.data())
def test_weights_rows_sum_to_one_and_are_non_negative(data):
    causal = data.draw(st.booleans())
    q, k, v, mask = data.draw(attention_inputs(masked=data.draw(st.booleans()), causal=causal))
    _, w = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    assert np.all(w >= 0.0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@given(data=st.data())
def test_permuting_queries_permutes_output_rows(data):
    q, k, v, _ = data.draw(attention_inputs())
    perm = np.array(data.draw(st.permutations(range(q.shape[-2]))), dtype=np.intp)
    out, w = scaled_dot_product_attention(q, k, v)
    out_p, w_p = scaled_dot_product_attention(q[..., perm, :], k, v)
    np.testing.assert_allclose(out_p, out[..., perm, :], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w_p, w[..., perm, :], rtol=1e-12, atol=1e-12)


@given(data=st.data())
def test_permuting_keys_and_values_together_leaves_output_unchanged(data):
    q, k, v, _ = data.draw(attention_inputs())
    perm = np.array(data.draw(st.permutations(range(k.shape[-2]))), dtype=np.intp)
    out, w = scaled_dot_product_attention(q, k, v)
    out_p, w_p = scaled_dot_product_attention(q, k[..., perm, :], v[..., perm, :])
    np.testing.assert_allclose(out_p, out, rtol=1e-12, atol=1e-12)
    # The weights move with their keys.
    np.testing.assert_allclose(w_p, w[..., perm], rtol=1e-12, atol=1e-12)


def test_permuting_only_the_values_changes_the_output():
    # Guards the previous test: the output does depend on which value goes with which key.
    q = np.array([[1.0, 0.0]])
    k = np.array([[3.0, 0.0], [0.0, 0.0]])
    v = np.array([[1.0], [0.0]])
    out, _ = scaled_dot_product_attention(q, k, v)
    out_p, _ = scaled_dot_product_attention(q, k, v[::-1])
    assert not np.allclose(out, out_p)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
def test_large_scores_do_not_overflow(dtype):
    rng = np.random.default_rng(3)
    q = (rng.normal(size=(4, 8)) * 300).astype(dtype)  # scores of order 1e5
    k = (rng.normal(size=(6, 8)) * 300).astype(dtype)
    v = rng.normal(size=(6, 3)).astype(dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out, w = scaled_dot_product_attention(q, k, v)
    assert np.all(np.isfinite(out))
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-5)
    # Saturated: each query puts (almost) all its weight on its best key.
    np.testing.assert_array_equal(w.argmax(axis=-1), (q.astype(np.float64) @ k.T).argmax(axis=-1))


def test_masked_entries_get_exactly_zero_weight():
    q = np.array([[1.0, 2.0], [0.0, 1.0], [5.0, 5.0]])
    k = np.array([[1.0, 1.0], [9.0, 9.0], [0.0, -1.0]])  # key 1 would dominate every query
    v = np.array([[1.0, 0.0], [1e6, 1e6], [0.0, 1.0]])
    mask = np.array([[True, False, True]] * 3)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(w[:, 1] == 0.0)
    assert np.all(out < 2.0)  # the huge value behind the masked key leaks nowhere
    ref_out, ref_w = reference_attention(q, k, v, mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)


def test_causal_equals_explicit_causal_mask():
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    a = scaled_dot_product_attention(q, k, v, causal=True)
    b = scaled_dot_product_attention(q, k, v, causal_mask(3, 5))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_causal_and_mask_are_combined_by_logical_and():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    mask = np.array([True, False, True, True])  # key 1 is padding
    _, w = scaled_dot_product_attention(q, k, v, mask, causal=True)
    assert np.all(w[:, 1] == 0.0)
    assert np.all(w[np.triu_indices(4, k=1)] == 0.0)
    assert w[0, 0] == 1.0  # query 0 sees only key 0
    np.testing.assert_allclose(w, reference_attention(q, k, v, mask, causal=True)[1], rtol=1e-12)


def test_causal_first_query_of_a_square_attends_only_to_itself():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(5, 3))
    v = rng.normal(size=(5, 2))
    out, w = scaled_dot_product_attention(x, x, v, causal=True)
    np.testing.assert_array_equal(w[0], [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(out[0], v[0], rtol=1e-15)


def test_causal_with_fewer_queries_sees_the_cached_prefix():
    # Two new queries after three cached positions: n_q = 2, n_k = 5.
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 4))
    _, w = scaled_dot_product_attention(q, k, v, causal=True)
    assert np.all(w[0, :4] > 0.0)
    assert w[0, 4] == 0.0
    assert np.all(w[1] > 0.0)


# --------------------------------------------------------------------------------------
# fully_masked policies
# --------------------------------------------------------------------------------------


def test_fully_masked_zero_zeroes_only_the_empty_rows():
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    mask = rng.random((4, 5)) < 0.5
    mask[[0, 2], 0] = True
    mask[[1, 3], :] = False
    out, w = scaled_dot_product_attention(q, k, v, mask, fully_masked="zero")
    assert np.all(w[[1, 3]] == 0.0)
    assert np.all(out[[1, 3]] == 0.0)
    # The other rows are exactly what they are without the empty rows.
    out_kept, w_kept = scaled_dot_product_attention(q[[0, 2]], k, v, mask[[0, 2]])
    np.testing.assert_allclose(out[[0, 2]], out_kept, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(w[[0, 2]], w_kept, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(w[[0, 2]].sum(axis=-1), 1.0, rtol=1e-12)


def test_fully_masked_zero_with_batch_axes():
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    mask = np.ones((2, 3, 3), dtype=bool)
    mask[1, 2] = False
    out, w = scaled_dot_product_attention(q, k, v, mask, fully_masked="zero")
    assert np.all(w[1, 2] == 0.0)
    assert np.all(out[1, 2] == 0.0)
    out_full, w_full = scaled_dot_product_attention(q, k, v)
    keep = np.ones((2, 3), dtype=bool)
    keep[1, 2] = False
    np.testing.assert_allclose(out[keep], out_full[keep], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(w[keep], w_full[keep], rtol=1e-14, atol=1e-15)


def test_fully_masked_raise_is_the_default_and_names_the_rows():
    q, k, v = np.ones((4, 2)), np.ones((3, 2)), np.ones((3, 1))
    mask = np.ones((4, 3), dtype=bool)
    mask[1] = False
    mask[3] = False
    with pytest.raises(ValueError, match=r"2 query row\(s\) .*\(1,\), \(3,\)"):
        scaled_dot_product_attention(q, k, v, mask)
    with pytest.raises(ValueError, match=r"2 query row\(s\) .*\(1,\), \(3,\)"):
        scaled_dot_product_attention(q, k, v, mask, fully_masked="raise")


def test_fully_masked_raise_names_batch_and_query_index():
    q, k, v = np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 1))
    mask = np.ones((2, 3, 3), dtype=bool)
    mask[1, 0] = False
    with pytest.raises(ValueError, match=r"1 query row\(s\) .*index \(1, 0\)"):
        scaled_dot_product_attention(q, k, v, mask)


# --------------------------------------------------------------------------------------
# dtypes and shapes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.int64, np.float64),
        (np.int32, np.float64),
        (np.int8, np.float64),
    ],
)
@pytest.mark.parametrize("causal", [False, True])
def test_dtype_is_preserved_or_promoted(dtype, expected, causal):
    q = np.array([[1, 2], [3, 4], [0, 1]], dtype=dtype)
    k = np.array([[1, 0], [0, 1], [1, 1]], dtype=dtype)
    v = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=dtype)
    out, w = scaled_dot_product_attention(q, k, v, causal=causal)
    assert out.dtype == expected
    assert w.dtype == expected


def test_float32_with_mask_stays_float32():
    q = np.ones((2, 3), dtype=np.float32)
    out, w = scaled_dot_product_attention(q, q, q, np.array([[True, False], [True, True]]))
    assert out.dtype == np.float32
    assert w.dtype == np.float32


@pytest.mark.parametrize(
    ("q_dtype", "k_dtype", "v_dtype", "expected"),
    [
        (np.float32, np.float64, np.float32, np.float64),
        (np.float32, np.float32, np.float64, np.float64),  # v alone decides
        (np.float32, np.float32, np.int64, np.float64),
        (np.int64, np.float32, np.float32, np.float64),
        (np.float32, np.float32, np.int8, np.float32),  # numpy: int8 fits in float32
    ],
)
def test_mixed_dtypes_compute_in_the_common_dtype(q_dtype, k_dtype, v_dtype, expected):
    q = np.ones((2, 3), dtype=q_dtype)
    k = np.ones((4, 3), dtype=k_dtype)
    v = np.ones((4, 2), dtype=v_dtype)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.dtype == expected
    assert w.dtype == expected


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "out_shape", "w_shape"),
    [
        ((3, 4), (5, 4), (5, 7), (3, 7), (3, 5)),  # cross-attention, d_v != d_k
        ((1, 2), (6, 2), (6, 1), (1, 1), (1, 6)),  # one query
        ((6, 2), (1, 2), (1, 3), (6, 3), (6, 1)),  # one key
        ((2, 8, 3, 4), (2, 8, 5, 4), (2, 8, 5, 6), (2, 8, 3, 6), (2, 8, 3, 5)),  # batch, heads
        ((8, 3, 4), (1, 5, 4), (5, 2), (8, 3, 2), (8, 3, 5)),  # broadcast heads
    ],
)
def test_shapes(q_shape, k_shape, v_shape, out_shape, w_shape):
    out, w = scaled_dot_product_attention(np.ones(q_shape), np.ones(k_shape), np.ones(v_shape))
    assert out.shape == out_shape
    assert w.shape == w_shape


def test_python_lists_are_accepted():
    out, w = scaled_dot_product_attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
    ref_out, ref_w = reference_attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
    np.testing.assert_allclose(out, ref_out, rtol=1e-14)
    np.testing.assert_allclose(w, ref_w, rtol=1e-14)


def test_inputs_are_not_modified_and_read_only_inputs_work():
    rng = np.random.default_rng(10)
    arrays = [rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))]
    copies = [a.copy() for a in arrays]
    for a in arrays:
        a.setflags(write=False)
    mask = np.ones((3, 5), dtype=bool)
    mask.setflags(write=False)
    scaled_dot_product_attention(*arrays, mask, causal=False)
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)


# --------------------------------------------------------------------------------------
# causal_mask
# --------------------------------------------------------------------------------------


@given(n_k=st.integers(1, 9), data=st.data())
def test_causal_mask_matches_the_rule(n_k, data):
    n_q = data.draw(st.integers(1, n_k))
    m = causal_mask(n_q, n_k)
    assert m.dtype == np.bool_
    assert m.shape == (n_q, n_k)
    assert m.tolist() == reference_causal(n_q, n_k)
    # The queries are the last n_q of the n_k positions.
    np.testing.assert_array_equal(m, causal_mask(n_k)[n_k - n_q:])
    assert m[-1].all()


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_causal_mask_square_is_the_lower_triangle_with_diagonal(n):
    m = causal_mask(n)
    assert m.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert bool(m[i, j]) == (j <= i), (i, j)
    np.testing.assert_array_equal(m, causal_mask(n, n))


def test_causal_mask_small_cases_written_out():
    assert causal_mask(1).tolist() == [[True]]
    assert causal_mask(3).astype(int).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert causal_mask(2, 4).astype(int).tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert causal_mask(1, 3).astype(int).tolist() == [[1, 1, 1]]


def test_causal_mask_accepts_numpy_integers():
    assert causal_mask(np.int64(2), np.int32(3)).tolist() == reference_causal(2, 3)


@pytest.mark.parametrize(("n_q", "n_k"), [(2, 1), (5, 3), (3, 2)])
def test_causal_mask_more_queries_than_keys_raises(n_q, n_k):
    with pytest.raises(ValueError, match=rf"n_q={n_q} queries and n_k={n_k} keys"):
        causal_mask(n_q, n_k)


@pytest.mark.parametrize(
    ("args", "exc", "pattern"),
    [
        ((0,), ValueError, r"^n_q=0; expected a positive integer"),
        ((-2,), ValueError, r"^n_q=-2; expected a positive integer"),
        ((2, 0), ValueError, r"^n_k=0; expected a positive integer"),
        ((2, -1), ValueError, r"^n_k=-1; expected a positive integer"),
        ((2.0,), TypeError, r"^n_q=2\.0; expected a positive integer"),
        (("3",), TypeError, r"^n_q='3'; expected a positive integer"),
        ((True,), TypeError, r"^n_q=True; expected a positive integer"),
        ((None,), TypeError, r"^n_q=None; expected a positive integer"),
        ((2, 3.5), TypeError, r"^n_k=3\.5; expected a positive integer"),
        ((2, False), TypeError, r"^n_k=False; expected a positive integer"),
        ((np.array([2]),), TypeError, r"^n_q=array\(\[2\]\); expected a positive integer"),
    ],
)
def test_causal_mask_bad_arguments_raise(args, exc, pattern):
    with pytest.raises(exc, match=pattern):
        causal_mask(*args)


# --------------------------------------------------------------------------------------
# project_qkv
# --------------------------------------------------------------------------------------


def reference_matmul(x, w):
    """x (..., n, d_model) @ w (d_model, d), with loops over rows and columns."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64).tolist()
    d_model, d = len(w), len(w[0])
    out = np.zeros((*x.shape[:-1], d))
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx].tolist()
        for c in range(d):
            out[(*idx, c)] = math.fsum(row[m] * w[m][c] for m in range(d_model))
    return out


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@given(data=st.data())
def test_project_qkv_matches_loops(dtype, data):
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n, d_model, d_k, d_v = (data.draw(st.integers(1, 6)) for _ in range(4))
    x = data.draw(hnp.arrays(dtype, (*lead, n, d_model), elements=elements(dtype)))
    w_q = data.draw(hnp.arrays(dtype, (d_model, d_k), elements=elements(dtype)))
    w_k = data.draw(hnp.arrays(dtype, (d_model, d_k), elements=elements(dtype)))
    w_v = data.draw(hnp.arrays(dtype, (d_model, d_v), elements=elements(dtype)))
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    for got, w, d in ((q, w_q, d_k), (k, w_k, d_k), (v, w_v, d_v)):
        assert got.dtype == dtype
        assert got.shape == (*lead, n, d)
        np.testing.assert_allclose(got, reference_matmul(x, w), **TOL[dtype])


def test_project_qkv_keeps_q_k_v_apart():
    x = np.array([[1.0, 2.0]])
    q, k, v = project_qkv(x, [[1.0], [0.0]], [[0.0], [1.0]], [[1.0, 1.0], [1.0, -1.0]])
    assert q.tolist() == [[1.0]]
    assert k.tolist() == [[2.0]]
    assert v.tolist() == [[3.0, -1.0]]


def test_project_qkv_integer_input_is_float64():
    q, k, v = project_qkv(np.ones((2, 2), dtype=int), np.eye(2, dtype=int),
                          np.eye(2, dtype=int), np.eye(2, dtype=int))
    assert q.dtype == k.dtype == v.dtype == np.float64


@pytest.mark.parametrize("causal", [False, True])
def test_inputs_are_not_modified(causal):
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(2, 300, 4)).astype(np.float32) for _ in range(3))
    before = [a.copy() for a in (q, k, v)]
    scaled_dot_product_attention(q, k, v, causal=causal)
    for a, b in zip((q, k, v), before, strict=True):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------------------
# unusual but legitimate input
# --------------------------------------------------------------------------------------


def test_float16_is_accumulated_in_float32():
    # 70000 equal scores: each weight is 1/70000 and the output is the mean of v = 1
    # (a float16 row sum would overflow 65504 and give 0).
    q = np.zeros((1, 4), np.float16)
    k = np.zeros((70000, 4), np.float16)
    v = np.ones((70000, 1), np.float16)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.dtype == w.dtype == np.float16
    assert out[0, 0] == 1.0


def test_float16_agrees_with_the_float64_reference():
    rng = np.random.default_rng(1616)
    q, k, v = (rng.normal(size=(2, 40, 8)).astype(np.float16) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, causal=True)
    expected, _ = reference_attention(*(a.astype(np.float64) for a in (q, k, v)), causal=True)
    np.testing.assert_allclose(out, expected, rtol=0, atol=5e-3)


def test_masked_arrays_are_refused():
    q = np.ma.masked_array(np.ones((2, 3)), mask=False)
    with pytest.raises(TypeError, match=r"^q is a numpy masked array"):
        scaled_dot_product_attention(q, np.ones((2, 3)), np.ones((2, 3)))


def test_the_callers_error_state_does_not_matter():
    q = np.array([[1.0, 0.0]])
    k = np.array([[0.0, 0.0], [-1400.0, 0.0]])  # scores 0 and -1000: exp underflows to 0
    v = np.array([[1.0], [2.0]])
    with np.errstate(all="raise"):
        out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_array_equal(w, [[1.0, 0.0]])
    np.testing.assert_array_equal(out, [[1.0]])


def test_time_spans_are_refused():
    t = np.ones((2, 3), dtype="timedelta64[ms]")
    with pytest.raises(TypeError, match=r"^k has dtype timedelta64\[ms\]"):
        scaled_dot_product_attention(np.ones((2, 3)), t, np.ones((2, 3)))


def test_ragged_mask_is_a_value_error_naming_the_mask():
    with pytest.raises(ValueError, match=r"^mask could not be turned into an array"):
        scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)),
                                     mask=[[True, True], [True]])


def test_fully_masked_zero_holds_for_causal_with_more_queries_than_keys():
    rng = np.random.default_rng(51)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    with pytest.raises(ValueError, match=r"n_q=5 queries and n_k=3 keys"):
        scaled_dot_product_attention(q, k, v, causal=True)
    out, w = scaled_dot_product_attention(q, k, v, causal=True, fully_masked="zero")
    # Query i sits at position i - 2: the first two see no key.
    explicit = np.arange(3)[None, :] <= np.arange(5)[:, None] - 2
    out_m, w_m = scaled_dot_product_attention(q, k, v, mask=explicit, fully_masked="zero")
    np.testing.assert_array_equal(out[:2], 0.0)
    np.testing.assert_array_equal(w[:2], 0.0)
    np.testing.assert_array_equal(out, out_m)
    np.testing.assert_array_equal(w, w_m)
    np.testing.assert_allclose(out[2:], reference_attention(q[2:], k, v, causal=True)[0],
                               rtol=0, atol=1e-12)


def test_fully_masked_message_counts_query_rows_not_mask_rows():
    mask = np.array([[False, False], [True, True]])  # (n_q, n_k), shared by a batch of 3
    with pytest.raises(ValueError, match=r"^mask leaves 3 query row\(s\) .* index \(0, 0\), "
                                         r"\(1, 0\), \(2, 0\);"):
        scaled_dot_product_attention(np.ones((3, 2, 4)), np.ones((2, 4)), np.ones((2, 4)), mask)


def test_overflow_message_names_the_batch_index():
    q = np.ones((2, 3, 2))
    q[1, 2] = 1e200
    k = np.full((4, 2), 1e200)
    with pytest.raises(ValueError, match=r"overflow float64: 4 score\(s\) are not finite, the "
                                         r"first at \(\.\.\., query, key\) index \(1, 2, 0\)"):
        scaled_dot_product_attention(q, k, np.ones((4, 1)))


def test_overflow_to_minus_infinity_is_reported_like_tiled_attention():
    # One score is -inf, the other finite: a softmax would still give a number, but the
    # input does not fit the dtype, and both implementations say so.
    from attention_lib import tiled_attention

    q = np.array([[1e200, 1e200]])
    k = np.array([[-1e200, -1e200], [1.0, 1.0]])
    v = np.ones((2, 1))
    with pytest.raises(ValueError, match="overflow float64"):
        scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match="overflow float64"):
        tiled_attention(q, k, v)


def test_nan_error_uses_little_memory():
    import tracemalloc

    x = np.full((1000, 1000), np.nan)  # 8 MB, every entry bad
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"q contains 1000000 NaN .* first at index \(0, 0\)"):
        scaled_dot_product_attention(x, np.ones((2, 1000)), np.ones((2, 1)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < x.nbytes / 2  # boolean flags only, no list of every bad index


def test_scaled_scores_against_a_loop():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 3, 5, 4))
    got = al.scaled_scores(q, k)
    want = np.array([[[sum(q[b, i, c] * k[b, j, c] for c in range(4)) / 2.0 for j in range(5)]
                      for i in range(5)] for b in range(3)])
    assert got.shape == (3, 5, 5)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert al.scaled_scores(q.astype(np.float32), k.astype(np.float32)).dtype == np.float32
