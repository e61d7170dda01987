"""Tests of ``attention_lib.recurrence`` against independent references.

- The forward pass is compared with a pure-Python loop (``math.tanh``, lists).
- The Jacobians are compared with central finite differences of that loop:
  perturb one coordinate of an earlier state, re-run the later steps, and
  divide the change of a later state by the perturbation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al

# --------------------------------------------------------------------------------------
# Independent slow reference
# --------------------------------------------------------------------------------------


def reference_steps(x_rows, w, u, state):
    """Run h_t = tanh(W h_{t-1} + U x_t) over ``x_rows`` from ``state`` with Python floats."""
    w, u = [list(map(float, r)) for r in w], [list(map(float, r)) for r in u]
    state = [float(s) for s in state]
    out = []
    for x in x_rows:
        state = [
            math.tanh(math.fsum(w[a][b] * state[b] for b in range(len(state)))
                      + math.fsum(u[a][c] * float(x[c]) for c in range(len(x))))
            for a in range(len(state))
        ]
        out.append(state)
    return out


def finite_difference_jacobian(x, w, u, h, source, target, eps=1e-6):
    """d h[target] / d h[source] by central differences, re-running steps source+1..target."""
    d_h = len(h[0])
    jac = np.zeros((d_h, d_h))
    for b in range(d_h):
        plus = [float(v) for v in h[source]]
        minus = list(plus)
        plus[b] += eps
        minus[b] -= eps
        rows = x[source + 1: target + 1]
        up = reference_steps(rows, w, u, plus)[-1] if len(rows) else plus
        down = reference_steps(rows, w, u, minus)[-1] if len(rows) else minus
        for a in range(d_h):
            jac[a, b] = (up[a] - down[a]) / (2 * eps)
    return jac


def small_rnn(seed, n=6, d_in=3, d_h=4, radius=0.9):
    rng = np.random.default_rng(seed)
    w = al.recurrent_matrix(d_h, radius, rng)
    u = rng.standard_normal((d_h, d_in)) / math.sqrt(d_in)
    x = rng.standard_normal((n, d_in))
    h0 = 0.5 * rng.standard_normal(d_h)
    return x, w, u, h0


# --------------------------------------------------------------------------------------
# Forward pass, sweeps
# --------------------------------------------------------------------------------------


def test_reference_itself_on_one_hand_computed_step():
    # tanh(0.5 * 1 + 2 * 0.25) = tanh(1)
    assert reference_steps([[0.25]], [[0.5]], [[2.0]], [1.0]) == [[math.tanh(1.0)]]


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7), d_h=st.integers(1, 5))
def test_forward_matches_python_loop(seed, n, d_h):
    x, w, u, h0 = small_rnn(seed, n=n, d_h=d_h)
    got = al.rnn_forward(x, w, u, h0)
    assert got.shape == (n, d_h)
    np.testing.assert_allclose(got, reference_steps(x, w, u, h0), rtol=1e-12, atol=1e-14)


def test_forward_default_h0_is_zero():
    x, w, u, _ = small_rnn(1)
    np.testing.assert_array_equal(al.rnn_forward(x, w, u), al.rnn_forward(x, w, u, np.zeros(4)))


def test_forward_keeps_float32():
    x, w, u, h0 = small_rnn(2)
    f32 = [a.astype(np.float32) for a in (x, w, u, h0)]
    assert al.rnn_forward(*f32).dtype == np.float32


def test_sweep_finishes_one_more_state_per_round():
    x, w, u, h0 = small_rnn(3, n=8, radius=2.0)
    truth = np.array(reference_steps(x, w, u, h0))
    guess = np.full_like(truth, 0.7)  # an arbitrary, wrong guess
    for r in range(1, len(x) + 1):
        guess = al.rnn_sweep(guess, x, w, u, h0)
        close = np.isclose(guess, truth, rtol=0, atol=1e-12).all(axis=1)
        assert close[:r].all(), f"after {r} sweeps the first {r} states should be exact"
        if r < len(x):
            # State r+1 still depends on the wrong guess.
            assert not close[r], f"state {r + 1} should not be right after only {r} sweeps"


def test_one_sweep_from_the_truth_is_a_fixed_point():
    x, w, u, h0 = small_rnn(4)
    h = al.rnn_forward(x, w, u, h0)
    np.testing.assert_allclose(al.rnn_sweep(h, x, w, u, h0), h, rtol=1e-13, atol=1e-15)


# --------------------------------------------------------------------------------------
# Jacobians against finite differences
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("radius", [0.5, 1.5, 3.0])
def test_step_jacobians_match_finite_differences(radius):
    x, w, u, h0 = small_rnn(5, radius=radius)
    h = al.rnn_forward(x, w, u, h0)
    jac = al.rnn_step_jacobians(h, w)
    assert jac.shape == (6, 4, 4)
    for t in range(1, 6):  # entry t is d h[t] / d h[t-1]
        fd = finite_difference_jacobian(x, w, u, h.tolist(), t - 1, t)
        np.testing.assert_allclose(jac[t], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("radius", [0.5, 1.5, 3.0])
@pytest.mark.parametrize("source", [0, 2])
def test_jacobian_products_match_finite_differences(radius, source):
    x, w, u, h0 = small_rnn(6, n=7, radius=radius)
    h = al.rnn_forward(x, w, u, h0)
    products = al.rnn_jacobian_products(h, w, source=source)
    assert products.shape == (7 - source, 4, 4)
    for k in range(products.shape[0]):
        fd = finite_difference_jacobian(x, w, u, h.tolist(), source, source + k)
        np.testing.assert_allclose(products[k], fd, rtol=1e-5, atol=1e-8)


def test_jacobian_of_a_scalar_recurrence_by_hand():
    # h_t = tanh(a h_{t-1}): d h_2 / d h_0 = a (1 - h_1^2) * a (1 - h_2^2)
    a = 1.3
    h = al.rnn_forward(np.zeros((2, 1)), [[a]], [[0.0]], h0=[0.8])
    expected = a * (1 - h[0, 0] ** 2) * a * (1 - h[1, 0] ** 2)
    p = al.rnn_jacobian_products(np.vstack([[0.8], h]), [[a]])
    assert p[2, 0, 0] == pytest.approx(expected, rel=1e-14)


# --------------------------------------------------------------------------------------
# Random matrices
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("radius", [0.1, 1.0, 2.5])
def test_recurrent_matrix_has_the_requested_spectral_radius(radius):
    w = al.recurrent_matrix(10, radius, np.random.default_rng(0))
    assert max(abs(np.linalg.eigvals(w))) == pytest.approx(radius, rel=1e-12)


def test_recurrent_matrix_is_reproducible():
    a = al.recurrent_matrix(5, 1.0, np.random.default_rng(3))
    b = al.recurrent_matrix(5, 1.0, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_spectral_radius_of_a_rotation_is_one():
    c, s = math.cos(0.3), math.sin(0.3)
    assert al.spectral_radius([[c, -s], [s, c]]) == pytest.approx(1.0, rel=1e-14)


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


def test_bad_inputs_name_the_argument():
    x, w, u, h0 = small_rnn(7)
    with pytest.raises(ValueError, match="u has"):
        al.rnn_forward(x, w, u.T)
    with pytest.raises(ValueError, match="w has"):
        al.rnn_forward(x, w[:, :3], u)
    with pytest.raises(ValueError, match="h0 has"):
        al.rnn_forward(x, w, u, h0[:2])
    with pytest.raises(ValueError, match="x has"):
        al.rnn_forward(x[None], w, u)
    with pytest.raises(ValueError, match="h_guess has"):
        al.rnn_sweep(np.zeros((2, 4)), x, w, u)
    with pytest.raises(ValueError, match="h has"):
        al.rnn_step_jacobians(np.zeros((3, 5)), w)
    with pytest.raises(ValueError, match="source"):
        al.rnn_jacobian_products(al.rnn_forward(x, w, u), w, source=6)
    with pytest.raises(TypeError, match="source"):
        al.rnn_jacobian_products(al.rnn_forward(x, w, u), w, source=1.0)
    with pytest.raises(ValueError, match="radius"):
        al.recurrent_matrix(3, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="d_h"):
        al.recurrent_matrix(0, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        al.recurrent_matrix(3, 1.0, 42)
    with pytest.raises(ValueError, match="NaN"):
        al.rnn_forward(np.full_like(x, np.nan), w, u)


@pytest.mark.parametrize(("d_h", "error"), [(2.5, TypeError), (True, TypeError), (0, ValueError)])
def test_recurrent_matrix_size_errors_match_the_other_functions(d_h, error):
    with pytest.raises(error, match=rf"^d_h={d_h!r}; expected a positive integer"):
        al.recurrent_matrix(d_h, 0.9, np.random.default_rng(0))


# --------------------------------------------------------------------------------------
# dtypes: float32 stays float32, float16 and small integers do not crash inside numpy
# --------------------------------------------------------------------------------------

def _rnn_loop(x, w, u, h0):
    """The recurrence with Python floats, one step and one entry at a time."""
    h, out = list(map(float, h0)), []
    for xt in x:
        h = [math.tanh(sum(w[i][j] * h[j] for j in range(len(h)))
                       + sum(u[i][j] * xt[j] for j in range(len(xt)))) for i in range(len(h))]
        out.append(h)
    return np.array(out)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rnn_keeps_the_float_dtype(dtype):
    rng = np.random.default_rng(20)
    x, w, u = (rng.standard_normal(s).astype(dtype) for s in ((6, 3), (4, 4), (4, 3)))
    w = w * dtype(0.4)
    h = al.rnn_forward(x, w, u)
    assert h.dtype == dtype  # no float64 zeros for h0 promoting float32
    tol = {np.float16: 3e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    want = _rnn_loop(x.astype(float).tolist(), w.astype(float).tolist(),
                     u.astype(float).tolist(), [0.0] * 4)
    np.testing.assert_allclose(h.astype(np.float64), want, atol=tol)
    assert al.rnn_sweep(h, x, w, u).dtype == dtype
    assert al.rnn_forward(x, w, u, np.zeros(4)).dtype == np.float64  # a float64 h0 widens


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int16, np.float32])
def test_spectral_radius_of_small_dtypes(dtype):
    w = np.array([[0, 2], [1, 0]], dtype=dtype)  # eigenvalues +-sqrt(2)
    assert abs(al.spectral_radius(w) - math.sqrt(2)) < 1e-6


def test_recurrent_matrix_radius_and_rng_are_checked():
    with pytest.raises(TypeError, match=r"^radius=True; expected a real number"):
        al.recurrent_matrix(3, True, np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"^radius='1'"):
        al.recurrent_matrix(3, "1", np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^radius=0.0; expected a number > 0"):
        al.recurrent_matrix(3, 0.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"^rng=None"):
        al.recurrent_matrix(3, 1.0, None)
    w = al.recurrent_matrix(5, np.float32(0.5), np.random.default_rng(0))
    assert w.dtype == np.float64 and abs(al.spectral_radius(w) - 0.5) < 1e-12


def test_jacobian_products_source_is_an_index():
    h = al.rnn_forward(np.ones((4, 2)), 0.3 * np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"^source=-1; expected a position from 0 to 3"):
        al.rnn_jacobian_products(h, 0.3 * np.eye(3), source=-1)
    with pytest.raises(TypeError, match=r"^source=True"):
        al.rnn_jacobian_products(h, 0.3 * np.eye(3), source=True)
    assert al.rnn_jacobian_products(h, 0.3 * np.eye(3), source=np.int64(3)).shape == (1, 3, 3)
