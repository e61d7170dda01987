"""Tests of ``attention_lib.saturation`` against independent references.

- The Jacobian is compared with central finite differences of
  ``attention_lib.softmax`` (no use of the formula ``diag(p) - p p^T``).
- The entropy is compared with a loop over Python floats and ``math.log``.
- The explorer's non-widget logic (the scores it draws, the static fallback)
  is tested without a kernel.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_lib import entropy, saturation_stats, softmax, softmax_jacobian

# --------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------


def finite_difference_jacobian(scores, h=1e-6):
    """d softmax(s)_i / d s_j by central differences, one column j at a time (1-D s)."""
    s = np.asarray(scores, dtype=np.float64)
    n = s.shape[0]
    jac = np.empty((n, n))
    for j in range(n):
        step = np.zeros(n)
        step[j] = h
        jac[:, j] = (softmax(s + step) - softmax(s - step)) / (2 * h)
    return jac


def reference_entropy(row):
    """-sum p log p over a list of floats, skipping zeros (0 log 0 = 0)."""
    total = 0.0
    for x in row:
        x = float(x)
        if x > 0:
            total -= x * math.log(x)
    return total


def test_finite_difference_reference_on_two_entries():
    # For two scores, p_0 = 1 / (1 + e^{s_1 - s_0}); d p_0 / d s_0 = p_0 (1 - p_0).
    p0 = 1 / (1 + math.exp(-1.0))
    jac = finite_difference_jacobian([1.0, 0.0])
    assert jac[0, 0] == pytest.approx(p0 * (1 - p0), rel=1e-8)
    assert jac[0, 1] == pytest.approx(-p0 * (1 - p0), rel=1e-8)


def test_reference_entropy_on_hand_values():
    assert reference_entropy([0.5, 0.5]) == pytest.approx(math.log(2), rel=1e-15)
    assert reference_entropy([1.0, 0.0]) == 0.0


# --------------------------------------------------------------------------------------
# softmax_jacobian
# --------------------------------------------------------------------------------------

scores_rows = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=1, min_side=1, max_side=7),
    elements=st.floats(-8, 8, allow_nan=False, allow_infinity=False),
)


@given(scores=scores_rows)
def test_jacobian_matches_finite_differences(scores):
    got = softmax_jacobian(softmax(scores))
    np.testing.assert_allclose(got, finite_difference_jacobian(scores), atol=1e-8)


def test_jacobian_batched_matches_row_by_row():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 3, 5)) * 3
    got = softmax_jacobian(softmax(scores))
    assert got.shape == (2, 3, 5, 5)
    for b in range(2):
        for r in range(3):
            np.testing.assert_allclose(got[b, r], finite_difference_jacobian(scores[b, r]),
                                       atol=1e-8)


@given(scores=scores_rows)
def test_jacobian_properties(scores):
    jac = softmax_jacobian(softmax(scores))
    np.testing.assert_allclose(jac, jac.T, atol=0)  # symmetric
    np.testing.assert_allclose(jac.sum(axis=1), 0.0, atol=1e-12)  # rows sum to zero
    assert np.linalg.eigvalsh(jac).min() >= -1e-12  # positive semi-definite
    assert np.abs(jac).max() <= 0.25 + 1e-12


def test_jacobian_vanishes_at_one_hot_and_keeps_float32():
    assert not softmax_jacobian([0.0, 1.0, 0.0]).any()
    p32 = softmax(np.array([0.1, 0.2, 0.3], dtype=np.float32))
    assert softmax_jacobian(p32).dtype == np.float32


# --------------------------------------------------------------------------------------
# entropy
# --------------------------------------------------------------------------------------


@given(scores=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                         elements=st.floats(-40, 40, allow_nan=False, allow_infinity=False)))
def test_entropy_matches_loop(scores):
    p = softmax(scores)
    got = entropy(p)
    assert got.shape == p.shape[:-1]
    rows = p.reshape(-1, p.shape[-1]).tolist()
    expected = np.array([reference_entropy(r) for r in rows]).reshape(p.shape[:-1])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert (got >= 0).all()
    assert (got <= math.log(p.shape[-1]) + 1e-12).all()


def test_entropy_zero_log_zero_and_uniform():
    assert entropy([0.0, 1.0, 0.0]) == 0.0
    assert not np.signbit(entropy([0.0, 1.0, 0.0]))
    assert entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8), rel=1e-14)


@given(scores=hnp.arrays(np.float64, st.integers(2, 6),
                         elements=st.floats(-3, 3, allow_nan=False, allow_infinity=False)),
       c1=st.floats(0, 20), c2=st.floats(0, 20))
def test_entropy_does_not_increase_with_the_scale(scores, c1, c2):
    low, high = sorted((c1, c2))
    h_low = reference_entropy(softmax(low * scores).tolist())
    h_high = reference_entropy(softmax(high * scores).tolist())
    assert h_high <= h_low + 1e-9


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("func", [entropy, softmax_jacobian], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("bad", "error", "words"),
    [
        ([0.5, 0.3, 0.1, 0.2], ValueError, "summing to 1.1"),  # scores, not weights
        ([1.5, -0.5], ValueError, "negative entry at index (1,)"),
        ([[0.5, 0.5], [0.2, 0.2]], ValueError, "index (1,)"),
        ([0.5, np.nan], ValueError, "NaN"),
        ([], ValueError, "empty"),
        ([True, False], TypeError, "bool"),
        (None, TypeError, "None"),
    ],
)
def test_bad_input_names_the_argument(func, bad, error, words):
    with pytest.raises(error) as info:
        func(bad)
    assert "p " in str(info.value) and words in str(info.value)


# --------------------------------------------------------------------------------------
# saturation_stats
# --------------------------------------------------------------------------------------


def test_saturation_stats_against_references():
    scores = np.array([0.5, 0.3, 0.1, 0.2])
    scales = np.array([0.0, 1.0, 10.0, 38.0])
    stats = saturation_stats(scores, scales[:, None])
    assert stats.weights.shape == (4, 4) and stats.entropy.shape == (4,)
    for i, c in enumerate(scales):
        p = softmax(c * scores)
        np.testing.assert_allclose(stats.weights[i], p, rtol=1e-14)
        assert stats.entropy[i] == pytest.approx(reference_entropy(p.tolist()), rel=1e-12)
        jac = finite_difference_jacobian(c * scores)
        assert stats.jacobian_norm[i] == pytest.approx(np.sqrt((jac**2).sum()), abs=1e-8)
        assert stats.jacobian_max[i] == pytest.approx(np.abs(jac).max(), abs=1e-8)
    # scale 0: uniform weights, entropy log 4, |J|_F = sqrt(n - 1) / n.
    assert stats.entropy[0] == pytest.approx(math.log(4), rel=1e-14)
    assert stats.jacobian_norm[0] == pytest.approx(math.sqrt(3) / 4, rel=1e-14)


def test_saturation_stats_bad_input():
    with pytest.raises(ValueError, match="scores"):
        saturation_stats([[np.inf, 0.0]])
    with pytest.raises(ValueError, match="overflows"):
        saturation_stats([1e300, 0.0], scale=1e300)
    with pytest.raises(TypeError, match="scale"):
        saturation_stats([1.0, 0.0], scale=None)


# --------------------------------------------------------------------------------------
# The saturation explorer's non-widget logic
# --------------------------------------------------------------------------------------


def test_explorer_scores_scale_and_division():
    from attention_lib.saturation import saturation_scores

    for d_k in (1, 16, 1024):
        divided = saturation_scores(d_k, seed=3)
        assert divided.shape == (8,)
        np.testing.assert_allclose(saturation_scores(d_k, divide_by_sqrt_dk=False, seed=3),
                                   math.sqrt(d_k) * divided, rtol=1e-12)
        np.testing.assert_allclose(saturation_scores(d_k, scale=2.5, seed=3), 2.5 * divided,
                                   rtol=1e-12)
        np.testing.assert_array_equal(saturation_scores(d_k, seed=3), divided)  # reproducible
    assert not np.allclose(saturation_scores(64, seed=0), saturation_scores(64, seed=1))


def test_explorer_scores_have_the_variance_of_the_argument():
    # Over many seeds, q . k / sqrt(d_k) should have mean ~0 and variance ~1, q . k variance ~d_k.
    from attention_lib.saturation import saturation_scores

    for d_k in (4, 256):
        divided = np.concatenate([saturation_scores(d_k, seed=s) for s in range(300)])
        raw = np.concatenate([saturation_scores(d_k, divide_by_sqrt_dk=False, seed=s)
                              for s in range(300)])
        assert abs(divided.mean()) < 0.15
        assert 0.85 < divided.var() < 1.15
        assert 0.85 * d_k < raw.var() < 1.15 * d_k


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"d_k": 0}, ValueError, "d_k=0"),
        ({"d_k": 2.0}, TypeError, "d_k=2.0"),
        ({"d_k": 4, "n_keys": 1}, ValueError, "n_keys=1"),
        ({"d_k": 4, "divide_by_sqrt_dk": "yes"}, TypeError, "divide_by_sqrt_dk"),
        ({"d_k": 4, "scale": np.nan}, ValueError, "scale"),
    ],
)
def test_explorer_scores_bad_input(kwargs, error, words):
    from attention_lib.saturation import saturation_scores

    with pytest.raises(error, match=words):
        saturation_scores(**kwargs)


def test_grid_panels_report_the_library_numbers():
    import matplotlib.pyplot as plt

    from attention_lib.plotting import saturation_grid
    from attention_lib.saturation import saturation_scores

    fig = saturation_grid(scales=[1, 3, 10], d_ks=[1, 8, 128], d_k=64)
    assert len(fig.axes) == 6
    titles = [ax.get_title() for ax in fig.axes]
    for ax, title in zip(fig.axes[:3], titles[:3], strict=True):
        c = float(title.split(",")[0].split("=")[1])
        st = saturation_stats(saturation_scores(64, scale=c))
        assert f"H = {float(st.entropy):.2f}\n" in title
        heights = [bar.get_height() for bar in ax.patches]
        np.testing.assert_allclose(heights, st.weights)
    # undivided scores at d_k = 128 are sharper than at d_k = 1 (the picture's point)
    h_small = float(titles[3].split("H = ")[1].split()[0])
    h_large = float(titles[5].split("H = ")[1].split()[0])
    assert h_large < h_small
    plt.close(fig)
