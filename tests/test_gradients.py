"""Tests of the softmax VJP and of the attention backward pass.

The reference is numerical: central finite differences in float64 of a forward
pass written here from the equation (``einsum`` for the products, ``-inf`` for
masked scores, an explicit exp / sum softmax). It shares no code with
``attention_lib``. The loss is ``L = sum(output * G)`` for a fixed random ``G``,
so its gradient with respect to the output is ``G``.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention_lib import attention_backward, softmax_vjp

H = 1e-6  # finite-difference step; the truncation error is O(H**2)


def reference_forward(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d_k)) v in float64; masked rows with no key are 0."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])
    allowed = np.ones(scores.shape, dtype=bool)
    if mask is not None:
        allowed = allowed & np.asarray(mask, dtype=bool)
    if causal:
        i = np.arange(n_q)[:, None] + (n_k - n_q)
        j = np.arange(n_k)[None, :]
        allowed = allowed & (j <= i)
    scores, allowed = np.broadcast_arrays(scores, allowed)
    scores = np.where(allowed, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total > 0, total, 1.0)
    return np.einsum("...ij,...jd->...id", w, v)


def numerical_gradient(f, x):
    """Central differences of the scalar function ``f`` at ``x``, element by element."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + H
        up = f(x)
        x[idx] = old - H
        down = f(x)
        x[idx] = old
        grad[idx] = (up - down) / (2 * H)
    return grad


def check_against_finite_differences(q, k, v, mask=None, causal=False, seed=0):
    out = reference_forward(q, k, v, mask, causal)
    g = np.random.default_rng(seed).normal(size=out.shape)
    dq, dk, dv = attention_backward(q, k, v, g, mask, causal=causal)

    def loss_q(x):
        return float(np.sum(reference_forward(x, k, v, mask, causal) * g))

    def loss_k(x):
        return float(np.sum(reference_forward(q, x, v, mask, causal) * g))

    def loss_v(x):
        return float(np.sum(reference_forward(q, k, x, mask, causal) * g))

    for name, got, loss, x in (("dq", dq, loss_q, q), ("dk", dk, loss_k, k), ("dv", dv, loss_v, v)):
        expected = numerical_gradient(loss, x)
        assert got.shape == np.shape(x), name
        assert got.dtype == np.float64, name
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8, err_msg=name)
    return dq, dk, dv


def random_qkv(rng, lead_q, lead_k, lead_v, n_q, n_k, d_k, d_v):
    q = rng.normal(size=(*lead_q, n_q, d_k))
    k = rng.normal(size=(*lead_k, n_k, d_k))
    v = rng.normal(size=(*lead_v, n_k, d_v))
    return q, k, v


# --------------------------------------------------------------------------------------
# softmax_vjp
# --------------------------------------------------------------------------------------


def reference_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("seed", range(4))
def test_softmax_vjp_equals_the_jacobian_from_finite_differences(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=5) * 2
    p = reference_softmax(x)
    # Column j of the Jacobian: d softmax(x) / d x_j, by central differences.
    jac = np.empty((5, 5))
    for j in range(5):
        e = np.zeros(5)
        e[j] = H
        jac[:, j] = (reference_softmax(x + e) - reference_softmax(x - e)) / (2 * H)
    g = rng.normal(size=5)
    # The vector-Jacobian product: the gradient of g . softmax(x) with respect to x.
    np.testing.assert_allclose(softmax_vjp(p, g), g @ jac, rtol=1e-6, atol=1e-9)
    # The Jacobian is symmetric, so the same function is also the JVP.
    np.testing.assert_allclose(softmax_vjp(p, g), jac @ g, rtol=1e-6, atol=1e-9)


def test_softmax_vjp_along_another_axis_and_in_batches():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4, 2))
    p = reference_softmax(x, axis=1)
    t = rng.normal(size=x.shape)
    got = softmax_vjp(p, t, axis=1)
    for a in range(3):
        for c in range(2):
            pv = p[a, :, c]
            jac = np.diag(pv) - np.outer(pv, pv)
            np.testing.assert_allclose(got[a, :, c], jac @ t[a, :, c], atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 0.0, atol=1e-12)


def test_softmax_vjp_keeps_float32():
    p = np.array([0.25, 0.75], dtype=np.float32)
    assert softmax_vjp(p, np.ones(2, dtype=np.float32)).dtype == np.float32


def test_softmax_vjp_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"grad has shape \(3,\).*p has shape \(2,\)"):
        softmax_vjp([0.5, 0.5], [1.0, 2.0, 3.0])


# --------------------------------------------------------------------------------------
# attention_backward against finite differences
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_backward_single_head(seed):
    rng = np.random.default_rng(seed)
    q, k, v = random_qkv(rng, (), (), (), 3, 4, 5, 2)
    check_against_finite_differences(q, k, v, seed=seed)


@pytest.mark.parametrize(("n_q", "n_k"), [(4, 4), (2, 5)])
def test_backward_causal(n_q, n_k):
    rng = np.random.default_rng(n_q * 10 + n_k)
    q, k, v = random_qkv(rng, (), (), (), n_q, n_k, 3, 2)
    dq, dk, dv = check_against_finite_differences(q, k, v, causal=True)
    if n_q == n_k:
        # The last key is seen only by the last query: its gradient is not zero,
        # but a key seen by nobody would get exactly zero (checked below).
        assert np.abs(dk[-1]).sum() > 0


def test_backward_with_a_mask():
    rng = np.random.default_rng(11)
    q, k, v = random_qkv(rng, (2,), (2,), (2,), 3, 5, 4, 3)
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 0] = True  # every query keeps at least one key
    mask[..., 4] = False  # no query sees key 4
    dq, dk, dv = check_against_finite_differences(q, k, v, mask=mask)
    assert np.all(dk[:, 4] == 0) and np.all(dv[:, 4] == 0)


def test_backward_with_mask_and_causal_together():
    rng = np.random.default_rng(12)
    q, k, v = random_qkv(rng, (), (), (), 4, 4, 3, 3)
    mask = np.array([True, False, True, True])  # key 1 hidden from everyone
    dq, dk, dv = check_against_finite_differences(q, k, v, mask=mask, causal=True)
    assert np.all(dk[1] == 0) and np.all(dv[1] == 0)


def test_backward_with_batch_and_head_axes():
    rng = np.random.default_rng(13)
    q, k, v = random_qkv(rng, (2, 3), (2, 3), (2, 3), 3, 3, 2, 2)
    check_against_finite_differences(q, k, v, causal=True)


def test_backward_sums_gradients_over_broadcast_axes():
    rng = np.random.default_rng(14)
    # q has batch and heads; k is shared by everything; v has only a head axis
    # of size 1 that is stretched to 3.
    q, k, v = random_qkv(rng, (2, 3), (), (1, 1), 3, 4, 2, 2)
    dq, dk, dv = check_against_finite_differences(q, k, v)
    assert dq.shape == (2, 3, 3, 2) and dk.shape == (4, 2) and dv.shape == (1, 1, 4, 2)


def test_backward_when_the_mask_adds_leading_axes():
    rng = np.random.default_rng(15)
    q, k, v = random_qkv(rng, (), (), (), 2, 3, 2, 2)
    mask = np.ones((2, 2, 3), dtype=bool)
    mask[1, :, 2] = False  # the second "batch" entry exists only through the mask
    dq, dk, dv = check_against_finite_differences(q, k, v, mask=mask)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape


def test_fully_masked_rows_pass_no_gradient_under_zero_policy():
    rng = np.random.default_rng(16)
    q, k, v = random_qkv(rng, (), (), (), 3, 3, 2, 2)
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    g = rng.normal(size=(3, 2))
    dq, dk, dv = attention_backward(q, k, v, g, mask, fully_masked="zero")
    assert np.all(dq[1] == 0)
    # The remaining rows agree with finite differences of the reference (which
    # also gives a fully masked row a zero output).
    expected = numerical_gradient(
        lambda x: float(np.sum(reference_forward(q, x, v, mask) * g)), k
    )
    np.testing.assert_allclose(dk, expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="no key to attend to"):
        attention_backward(q, k, v, g, mask)


def test_backward_keeps_float32():
    rng = np.random.default_rng(17)
    q, k, v = (a.astype(np.float32) for a in random_qkv(rng, (2,), (2,), (2,), 3, 3, 4, 4))
    g = np.ones((2, 3, 4), dtype=np.float32)
    grads = attention_backward(q, k, v, g, causal=True)
    assert all(x.dtype == np.float32 for x in grads)
    grads64 = attention_backward(*(a.astype(np.float64) for a in (q, k, v)), g, causal=True)
    for a, b in zip(grads, grads64, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_backward_refuses_a_grad_output_of_the_wrong_shape():
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"grad_output has shape \(3, 4\).*\(2, 3, 4\)"):
        attention_backward(q, q, q, np.ones((3, 4)))


def test_backward_validates_like_the_forward_pass():
    q = np.ones((3, 4))
    with pytest.raises(ValueError, match="q has d_k=4"):
        attention_backward(q, np.ones((3, 5)), q, np.ones((3, 4)))
    with pytest.raises(TypeError, match="mask has dtype float64"):
        attention_backward(q, q, q, np.ones((3, 4)), mask=np.ones((3, 3)))
    bad = np.ones((3, 4))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"grad_output contains 1 NaN .* at index \(1, 2\)"):
        attention_backward(q, q, q, bad)


def test_float16_gradients_are_computed_in_float32():
    rng = np.random.default_rng(50)
    q, k, v = (rng.standard_normal((5, 8)) for _ in range(3))
    v *= 100.0
    d_out = rng.standard_normal((5, 8)) * 100.0  # dZ V^T reaches 8e4 > 65504; dq 2e4
    grads16 = attention_backward(*(a.astype(np.float16) for a in (q, k, v, d_out)),
                                    causal=True)
    grads64 = attention_backward(*(a.astype(np.float16).astype(np.float64)
                                      for a in (q, k, v, d_out)), causal=True)
    for g16, g64 in zip(grads16, grads64, strict=True):
        assert g16.dtype == np.float16 and np.all(np.isfinite(g16))
        np.testing.assert_allclose(g16.astype(np.float64), g64, rtol=1e-2,
                                   atol=1e-3 * np.abs(g64).max())
    p = np.full((3, 6), 1 / 6, dtype=np.float16)
    g = rng.standard_normal((3, 6)).astype(np.float16)
    assert softmax_vjp(p, g).dtype == np.float16
