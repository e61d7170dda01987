"""Tests of the tiled backward pass and of the log-sum-exp the forward pass saves for it.

References: the log-sum-exp of each row written with ``math.fsum`` in a loop here;
``attention_backward`` (the library's plain backward pass, which keeps the whole
weight matrix); central finite differences of the loop reference of
``tests/reference.py`` (no library code) on tiny problems.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import reference_attention

from attention_lib import (
    attention_backward,
    sliding_window_mask,
    tiled_attention,
    tiled_attention_backward,
)


def visible_pairs(n_q, n_k, causal, window):
    """The (query, key) pairs that may attend, by the rule written out."""
    mask = np.ones((n_q, n_k), dtype=bool)
    for i in range(n_q):
        position = i + n_k - n_q
        for j in range(n_k):
            if causal and j > position:
                mask[i, j] = False
            if window is not None and position - j >= window:
                mask[i, j] = False
    return mask


def loop_lse(q, k, mask):
    """log sum_j exp(q_i . k_j / sqrt(d_k)) over the visible keys, one row at a time."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q = np.broadcast_to(q, (*batch, *q.shape[-2:]))
    k = np.broadcast_to(k, (*batch, *k.shape[-2:]))
    n_q, d_k = q.shape[-2:]
    out = np.zeros((*batch, n_q))
    for b in np.ndindex(*batch):
        for i in range(n_q):
            scores = [math.fsum(q[b][i] * k[b][j]) / math.sqrt(d_k)
                      for j in range(k.shape[-2]) if mask[i, j]]
            top = max(scores)
            out[(*b, i)] = top + math.log(math.fsum(math.exp(s - top) for s in scores))
    return out


def random_problem(seed, lead, n_q, n_k, d_k=6, d_v=4, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(*lead, n_q, d_k)) * scale).astype(dtype)
    k = (rng.normal(size=(*lead, n_k, d_k)) * scale).astype(dtype)
    v = rng.normal(size=(*lead, n_k, d_v)).astype(dtype)
    d_out = rng.normal(size=(*lead, n_q, d_v)).astype(dtype)
    return q, k, v, d_out


def plain_gradients(q, k, v, d_out, causal, window):
    mask = None if window is None else sliding_window_mask(q.shape[-2], k.shape[-2], window)
    return attention_backward(q, k, v, d_out, mask, causal=causal)


CASES = [  # (lead axes, n_q, n_k, causal, window, block_size)
    ((), 37, 37, False, None, 8),
    ((), 37, 37, True, None, (5, 11)),
    ((2,), 50, 50, True, 9, (16, 7)),  # window < b_q
    ((2,), 50, 50, True, 16, (16, 16)),
    ((2, 3), 13, 41, True, None, (6, 9)),  # n_q != n_k
    ((2, 3), 13, 41, False, None, (4, 64)),
    ((2,), 13, 41, True, 5, (3, 4)),  # keys before every query's window
    ((1,), 1, 17, True, None, 4),  # a single query
    ((), 9, 9, True, 3, 100),  # one tile larger than the whole problem
]


# --------------------------------------------------------------------------------------
# the log-sum-exp of the forward pass
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("lead", "n_q", "n_k", "causal", "window", "block_size"), CASES)
def test_lse_is_the_log_sum_exp_of_each_row(lead, n_q, n_k, causal, window, block_size):
    q, k, v, _ = random_problem(n_q + 2 * n_k, lead, n_q, n_k)
    out, lse = tiled_attention(q, k, v, causal=causal, window=window, block_size=block_size,
                               return_lse=True)
    assert lse.shape == (*lead, n_q) and lse.dtype == np.float64
    expected = loop_lse(q, k, visible_pairs(n_q, n_k, causal, window))
    np.testing.assert_allclose(lse, expected, rtol=0, atol=1e-12)
    plain = tiled_attention(q, k, v, causal=causal, window=window, block_size=block_size)
    np.testing.assert_array_equal(out, plain)  # the output does not change with return_lse


def test_lse_with_large_scores_and_every_path(monkeypatch):
    import attention_lib.tiled as tiled

    q, k, v, _ = random_problem(3, (2,), 40, 40, d_k=4, scale=20.0)  # scores around +-400
    expected = loop_lse(q, k, visible_pairs(40, 40, True, None))
    _, lse = tiled_attention(q, k, v, causal=True, block_size=(8, 8), return_lse=True)
    np.testing.assert_allclose(lse, expected, rtol=1e-14, atol=0)
    monkeypatch.setattr(tiled, "_RESCALE_THRESHOLD", -math.inf)  # every tile raises m
    _, lse = tiled_attention(q, k, v, causal=True, block_size=(8, 8), return_lse=True)
    np.testing.assert_allclose(lse, expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize(("dtype", "lse_dtype"), [(np.float32, np.float32),
                                                  (np.float64, np.float64),
                                                  (np.float16, np.float32)])
def test_lse_dtype_and_workers(dtype, lse_dtype):
    q, k, v, _ = random_problem(4, (3,), 30, 30, dtype=dtype)
    out, lse = tiled_attention(q, k, v, causal=True, block_size=(8, 8), return_lse=True,
                               workers=1)
    assert out.dtype == dtype and lse.dtype == lse_dtype
    _, lse2 = tiled_attention(q, k, v, causal=True, block_size=(8, 8), return_lse=True,
                              workers=2)
    np.testing.assert_array_equal(lse, lse2)
    expected = loop_lse(q, k, visible_pairs(30, 30, True, None))
    np.testing.assert_allclose(lse, expected, rtol=0, atol=1e-2 if dtype == np.float16 else 1e-5)


def test_return_lse_must_be_a_flag():
    q = np.ones((3, 4))
    with pytest.raises(TypeError, match=r"^return_lse=1; expected True or False"):
        tiled_attention(q, q, q, return_lse=1)


# --------------------------------------------------------------------------------------
# the backward pass against attention_backward and finite differences
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("lead", "n_q", "n_k", "causal", "window", "block_size"), CASES)
def test_backward_equals_attention_backward(lead, n_q, n_k, causal, window, block_size):
    q, k, v, d_out = random_problem(n_q * 3 + n_k, lead, n_q, n_k)
    out, lse = tiled_attention(q, k, v, causal=causal, window=window, return_lse=True)
    expected = plain_gradients(q, k, v, d_out, causal, window)
    for workers in (1, 2):
        got = tiled_attention_backward(q, k, v, out, lse, d_out, causal=causal, window=window,
                                       block_size=block_size, workers=workers)
        for name, g, e, a in zip("qkv", got, expected, (q, k, v), strict=True):
            assert g.shape == a.shape and g.dtype == np.float64, name
            np.testing.assert_allclose(g, e, rtol=0, atol=1e-12, err_msg=f"d{name}")


def loop_loss(q, k, v, d_out, causal, window):
    """sum(out * d_out), out from the loop reference: its gradients are the backward pass's."""
    mask = visible_pairs(q.shape[-2], k.shape[-2], causal, window)
    out, _ = reference_attention(q, k, v, mask=mask)
    return math.fsum((out * d_out).ravel())


@pytest.mark.parametrize(("causal", "window", "n_q", "n_k"),
                         [(False, None, 3, 4), (True, None, 4, 4), (True, 2, 3, 5)])
def test_backward_equals_central_finite_differences(causal, window, n_q, n_k):
    q, k, v, d_out = random_problem(11, (), n_q, n_k, d_k=3, d_v=2)
    out, lse = tiled_attention(q, k, v, causal=causal, window=window, return_lse=True)
    grads = tiled_attention_backward(q, k, v, out, lse, d_out, causal=causal, window=window,
                                     block_size=(2, 3))
    h = 1e-6
    arrays = [q, k, v]
    for which, grad in enumerate(grads):
        numeric = np.zeros_like(grad)
        for idx in np.ndindex(arrays[which].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[which][idx] += h
            minus[which][idx] -= h
            numeric[idx] = (loop_loss(*plus, d_out, causal, window)
                            - loop_loss(*minus, d_out, causal, window)) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=0, atol=1e-8)


@given(n_q=st.integers(1, 24), extra=st.integers(0, 12), causal=st.booleans(),
       window=st.one_of(st.none(), st.integers(1, 30)), b_q=st.integers(1, 13),
       b_k=st.integers(1, 13), float32=st.booleans(), seed=st.integers(0, 2**16))
def test_backward_property(n_q, extra, causal, window, b_q, b_k, float32, seed):
    n_k = n_q + extra
    window = window if causal else None
    dtype = np.float32 if float32 else np.float64
    q, k, v, d_out = random_problem(seed, (2,), n_q, n_k, d_k=4, d_v=3, dtype=dtype)
    out, lse = tiled_attention(q, k, v, causal=causal, window=window, return_lse=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, causal=causal, window=window,
                                   block_size=(b_q, b_k))
    expected = plain_gradients(*(a.astype(np.float64) for a in (q, k, v, d_out)), causal, window)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, rtol=0, atol=2e-5 if float32 else 1e-12)


def test_broadcast_inputs_get_summed_gradients():
    rng = np.random.default_rng(12)
    q = rng.normal(size=(2, 3, 11, 4))  # batch 2, heads 3
    k = rng.normal(size=(1, 3, 11, 4))  # shared across the batch
    v = rng.normal(size=(11, 5))  # shared by everything
    d_out = rng.normal(size=(2, 3, 11, 5))
    out, lse = tiled_attention(q, k, v, causal=True, return_lse=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, block_size=4)
    expected = attention_backward(q, k, v, d_out, causal=True)
    for g, e, a in zip(got, expected, (q, k, v), strict=True):
        assert g.shape == a.shape
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-12)


def test_float16_is_computed_in_float32():
    q, k, v, d_out = random_problem(13, (2,), 30, 30, dtype=np.float16)
    out, lse = tiled_attention(q, k, v, causal=True, return_lse=True)
    got = tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, block_size=8)
    expected = attention_backward(*(a.astype(np.float64) for a in (q, k, v, d_out)), causal=True)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g, e, rtol=0, atol=2e-2)


def test_the_callers_error_state_does_not_matter():
    q, k, v, d_out = random_problem(14, (), 30, 30, d_k=4, scale=30.0)  # exp underflows
    out, lse = tiled_attention(q, k, v, causal=True, return_lse=True)
    with np.errstate(all="raise"):
        got = tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, block_size=8)
    expected = attention_backward(q, k, v, d_out, causal=True)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9)


def test_no_score_matrix_is_allocated():
    n = 2048
    q, k, v, d_out = random_problem(15, (), n, n, d_k=8, d_v=8, dtype=np.float32)
    out, lse = tiled_attention(q, k, v, causal=True, return_lse=True)
    tracemalloc.start()
    grads = tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, workers=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    returned = sum(g.nbytes for g in grads)
    assert peak - returned < n * n * 4 // 8  # an (n, n) float32 matrix would be 16 MiB


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


def _forward(causal=True):
    q, k, v, d_out = random_problem(16, (2,), 6, 6)
    out, lse = tiled_attention(q, k, v, causal=causal, return_lse=True)
    return q, k, v, out, lse, d_out


def test_wrong_shapes_are_named():
    q, k, v, out, lse, d_out = _forward()
    with pytest.raises(ValueError, match=r"^lse has shape \(2, 5\), dtype float64; expected "
                                         r"\(\.\.\., n_q\), one per query = \(2, 6\)"):
        tiled_attention_backward(q, k, v, out, lse[:, :5], d_out, causal=True)
    with pytest.raises(ValueError, match=r"^lse has shape \(2, 6, 1\)"):
        tiled_attention_backward(q, k, v, out, lse[..., None], d_out, causal=True)
    with pytest.raises(ValueError, match=r"^out has shape \(2, 6, 3\).* = \(2, 6, 4\)"):
        tiled_attention_backward(q, k, v, out[..., :3], lse, d_out, causal=True)
    with pytest.raises(ValueError, match=r"^grad_out has shape \(6, 4\)"):
        tiled_attention_backward(q, k, v, out, lse, d_out[0], causal=True)
    with pytest.raises(ValueError, match=r"^q has d_k=6"):
        tiled_attention_backward(q, k[..., :5], v, out, lse, d_out, causal=True)


def test_an_lse_of_other_inputs_is_refused():
    q, k, v, out, lse, d_out = _forward(causal=True)
    with pytest.raises(ValueError, match=r"^lse does not belong to these q and k: .* "
                                         r"\(\.\.\., query\) index \(0, 0\)"):
        tiled_attention_backward(q, k, v, out, lse, d_out, causal=False)  # causal lse
    with pytest.raises(ValueError, match=r"^lse does not belong"):
        tiled_attention_backward(q, k, v, out, lse + 0.5, d_out, causal=True)
    with pytest.raises(ValueError, match=r"^lse does not belong"):
        tiled_attention_backward(q, 2 * k, v, out, lse, d_out, causal=True)
    with pytest.raises(ValueError, match=r"^lse does not belong"):  # log2 instead of ln
        tiled_attention_backward(q, k, v, out, lse / math.log(2), d_out, causal=True)


def test_non_finite_and_non_numeric_arrays_are_refused():
    q, k, v, out, lse, d_out = _forward()
    bad = lse.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^lse contains 1 NaN .* at index \(1, 2\)"):
        tiled_attention_backward(q, k, v, out, bad, d_out, causal=True)
    with pytest.raises(TypeError, match=r"^grad_out has dtype bool"):
        tiled_attention_backward(q, k, v, out, lse, d_out > 0, causal=True)
    with pytest.raises(TypeError, match=r"^out is None"):
        tiled_attention_backward(q, k, v, None, lse, d_out, causal=True)


def test_bad_options_are_named():
    q, k, v, out, lse, d_out = _forward()
    with pytest.raises(ValueError, match=r"^window=2 with causal=False"):
        tiled_attention_backward(q, k, v, out, lse, d_out, window=2)
    with pytest.raises(ValueError, match=r"^window=0; expected a positive integer"):
        tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, window=0)
    with pytest.raises(TypeError, match=r"^causal='yes'"):
        tiled_attention_backward(q, k, v, out, lse, d_out, causal="yes")
    with pytest.raises(ValueError, match=r"^block_size\[1\]=0"):
        tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, block_size=(2, 0))
    with pytest.raises(ValueError, match=r"^workers=0; expected a positive integer"):
        tiled_attention_backward(q, k, v, out, lse, d_out, causal=True, workers=0)
    with pytest.raises(ValueError, match=r"n_q=7 queries and n_k=6 keys"):
        tiled_attention_backward(np.ones((7, 6)), k[0], v[0], np.ones((7, 4)), np.ones(7),
                                 np.ones((7, 4)), causal=True)


def test_scores_that_overflow_are_reported():
    q = np.array([[1e200, 1e200]])
    k = np.array([[1e200, 1e200], [1.0, 1.0]])
    with pytest.raises(ValueError, match=r"overflow float64: the score at \(\.\.\., query, key\) "
                                         r"index \(0, 0\)"):
        tiled_attention_backward(q, k, np.ones((2, 1)), np.ones((1, 1)), np.zeros(1),
                                 np.ones((1, 1)))
