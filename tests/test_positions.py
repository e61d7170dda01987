"""Sinusoidal and rotary positions against formulas written out here, entry by entry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al


def pe_reference(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """PE(p, 2i) = sin(p / base^(2i/d)), PE(p, 2i+1) = cos(p / base^(2i/d)), one entry at a time."""
    pe = np.zeros((n, d))
    for p in range(n):
        for col in range(d):
            i = col // 2
            angle = p / base ** (2 * i / d)
            pe[p, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


def rotary_reference(x: np.ndarray, positions, base: float = 10000.0) -> np.ndarray:
    """Turn pair i of the row at position p by p * base^(-2i/d) with a 2 x 2 rotation matrix."""
    n, d = x.shape
    out = np.zeros_like(x, dtype=float)
    for row in range(n):
        for i in range(d // 2):
            theta = positions[row] * base ** (-2 * i / d)
            rot = np.array([[math.cos(theta), -math.sin(theta)],
                            [math.sin(theta), math.cos(theta)]])
            out[row, 2 * i:2 * i + 2] = rot @ x[row, 2 * i:2 * i + 2]
    return out


@pytest.mark.parametrize(("n", "d", "base"), [(1, 2, 10000.0), (7, 8, 10000.0),
                                              (12, 6, 100.0), (5, 5, 10000.0)])
def test_sinusoidal_matches_the_formula(n, d, base):
    pe = al.sinusoidal_positions(n, d, base=base)
    assert pe.dtype == np.float64 and pe.shape == (n, d)
    np.testing.assert_allclose(pe, pe_reference(n, d, base), rtol=0, atol=1e-12)


def test_sinusoidal_dot_product_depends_on_the_distance_only():
    pe = al.sinusoidal_positions(60, 16)
    omega = 10000.0 ** (-np.arange(8) * 2 / 16)
    for k in (0, 1, 5, 20):
        dots = np.einsum("pd,pd->p", pe[: 60 - k], pe[k:])  # PE(p) . PE(p+k) for every p
        np.testing.assert_allclose(dots, np.cos(k * omega).sum(), atol=1e-12)


@pytest.mark.parametrize("k", [0, 1, 3, -2, 17])
def test_shift_matrix_moves_every_position_by_k(k):
    d, n = 10, 40
    pe = al.sinusoidal_positions(n + 40, d)
    m = al.sinusoidal_shift_matrix(k, d)
    assert np.allclose(m @ m.T, np.eye(d), atol=1e-12)  # a rotation
    for p in range(max(0, -k), n):
        np.testing.assert_allclose(m @ pe[p], pe[p + k], atol=1e-12)
    off_block = m.copy()
    for i in range(0, d, 2):
        off_block[i:i + 2, i:i + 2] = 0
    assert not off_block.any()  # block-diagonal


def test_rotary_matches_rotation_matrices():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 8))
    np.testing.assert_allclose(al.apply_rotary(x), rotary_reference(x, range(7)), atol=1e-12)
    pos = np.array([3.0, 0.0, 10.0, 2.5, 100.0, 1.0, 7.0])
    np.testing.assert_allclose(al.apply_rotary(x, pos, base=50.0),
                               rotary_reference(x, pos, base=50.0), atol=1e-12)


def test_rotary_position_zero_is_the_identity_and_norms_are_kept():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 6))
    np.testing.assert_array_equal(al.apply_rotary(x, np.zeros(5)), x)
    np.testing.assert_allclose(np.linalg.norm(al.apply_rotary(x), axis=-1),
                               np.linalg.norm(x, axis=-1), rtol=1e-12)


@given(m=st.integers(0, 500), n=st.integers(0, 500), shift=st.integers(0, 500),
       seed=st.integers(0, 2**32 - 1))
def test_rotary_score_depends_on_relative_position_only(m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, 8))
    score = (al.apply_rotary(q, [m]) @ al.apply_rotary(k, [n]).T).item()
    moved = (al.apply_rotary(q, [m + shift]) @ al.apply_rotary(k, [n + shift]).T).item()
    assert abs(score - moved) < 1e-11 * max(1.0, abs(score))


def test_rotary_batched_positions_and_default():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 6))
    pos = rng.integers(0, 50, size=(3, 4))
    out = al.apply_rotary(x, pos)
    for b in range(3):
        np.testing.assert_allclose(out[b], rotary_reference(x[b], pos[b]), atol=1e-12)
    np.testing.assert_allclose(al.apply_rotary(x), al.apply_rotary(x, np.arange(4)), atol=0)


def test_rotary_keeps_the_dtype():
    x32 = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    out = al.apply_rotary(x32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, rotary_reference(x32.astype(float), range(4)), atol=1e-5)
    assert al.apply_rotary(x32.astype(np.float64)).dtype == np.float64
    assert al.apply_rotary(np.ones((2, 4), dtype=int)).dtype == np.float64


@pytest.mark.parametrize(("kwargs", "exc", "words"), [
    ({"x": np.ones((3, 5))}, ValueError, ["x", "odd"]),
    ({"x": np.ones((3, 4)), "positions": np.arange(4)}, ValueError, ["positions", "(4,)"]),
    ({"x": np.ones((3, 4)), "positions": [0.0, np.nan, 1.0]}, ValueError, ["positions", "NaN"]),
    ({"x": np.ones((2, 3, 4)), "positions": np.zeros((5, 3))}, ValueError, ["positions"]),
    ({"x": np.ones((3, 4)), "positions": ["a", "b", "c"]}, TypeError, ["positions"]),
    ({"x": np.ones(4)}, ValueError, ["x", "dimension"]),
    ({"x": None}, TypeError, ["x"]),
    ({"x": np.ones((3, 4)), "base": 1.0}, ValueError, ["base"]),
])
def test_rotary_bad_input(kwargs, exc, words):
    with pytest.raises(exc) as info:
        al.apply_rotary(**kwargs)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(("args", "kwargs", "exc", "name"), [
    ((0, 4), {}, ValueError, "n"),
    ((3, 0), {}, ValueError, "d"),
    ((3.0, 4), {}, TypeError, "n"),
    ((True, 4), {}, TypeError, "n"),
    ((3, 4), {"base": -2.0}, ValueError, "base"),
    ((3, 4), {"base": "big"}, TypeError, "base"),
])
def test_sinusoidal_bad_input(args, kwargs, exc, name):
    with pytest.raises(exc, match=rf"^{name}="):
        al.sinusoidal_positions(*args, **kwargs)


def test_shift_matrix_bad_input():
    with pytest.raises(ValueError, match="d=5 is odd"):
        al.sinusoidal_shift_matrix(1, 5)
    with pytest.raises(TypeError, match="k="):
        al.sinusoidal_shift_matrix("1", 4)
    with pytest.raises(ValueError, match="k="):
        al.sinusoidal_shift_matrix(math.inf, 4)


@pytest.mark.parametrize("base", [True, 2 + 0j, np.complex128(100), "10000", None])
def test_base_is_a_real_number(base):
    with pytest.raises(TypeError, match=r"^base=.*expected a real number"):
        al.position_frequencies(4, base=base)


@pytest.mark.parametrize("base", [1.0, 0.5, -3, math.inf, math.nan])
def test_base_is_above_one_and_finite(base):
    with pytest.raises(ValueError, match=r"^base="):
        al.sinusoidal_positions(3, 4, base=base)


def test_shift_k_is_a_real_number():
    for k in (True, 1j, [1]):
        with pytest.raises(TypeError, match=r"^k=.*expected a real number"):
            al.sinusoidal_shift_matrix(k, 4)
    np.testing.assert_array_equal(al.sinusoidal_shift_matrix(np.float32(2), 4),
                                  al.sinusoidal_shift_matrix(2, 4))


def test_rotary_of_float16_is_computed_in_float32():
    x = np.random.default_rng(30).standard_normal((5, 8))
    out16 = al.apply_rotary(x.astype(np.float16))
    assert out16.dtype == np.float16
    want = rotary_reference(x.astype(np.float16).astype(np.float64), np.arange(5))
    np.testing.assert_allclose(out16.astype(np.float64), want, atol=4e-3)
