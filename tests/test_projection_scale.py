"""The numbers and the figure of chapter 3's projection scale.

The numbers (``projection_scale_weights``) are checked against a pure-Python
reference that multiplies W_Q and W_K by c *before* projecting, so the
identity "scores scale by c squared" that the library uses is tested, not
copied. The figure is checked on the Agg backend, without a display.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attention_lib.examples import cat_sat_on
from attention_lib.plotting import projection_scale_grid
from attention_lib.saturation import projection_scale_weights


def reference_weights(x, w_q, w_k, c):
    """Loops: q_i = x_i (c W_Q), k_j = x_j (c W_K), w_ij = exp(s_ij) / sum_r exp(s_ir)."""
    x, w_q, w_k = (np.asarray(a, dtype=float).tolist() for a in (x, w_q, w_k))
    d_model, d_k = len(w_q), len(w_q[0])

    def project(row, w):
        return [sum(row[m] * c * w[m][t] for m in range(d_model)) for t in range(d_k)]

    qs = [project(row, w_q) for row in x]
    ks = [project(row, w_k) for row in x]
    out = []
    for q in qs:
        scores = [sum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(d_k) for k in ks]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        out.append([v / sum(e) for v in e])
    return np.array(out)


EX = cat_sat_on()
SCALES = [0.0, 0.5, 1.0, 3.0, 10.0, 30.0]


# --------------------------------------------------------------------------------------
# projection_scale_weights: numbers
# --------------------------------------------------------------------------------------


def test_matches_the_loop_reference_on_the_example():
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, SCALES)
    assert got.shape == (len(SCALES), 4, 4)
    for c, w in zip(SCALES, got, strict=True):
        np.testing.assert_allclose(w, reference_weights(EX.x, EX.w_q, EX.w_k, c), rtol=1e-12)


def test_c_equal_one_gives_the_plain_attention_weights():
    # The chapter's claim: c = 1 is the walkthrough itself (softmax(Q K^T / sqrt 3)).
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, [1.0])[0]
    np.testing.assert_allclose(got, reference_weights(EX.x, EX.w_q, EX.w_k, 1.0), rtol=1e-12)
    # Known values of the walkthrough (row of "sat"), computed independently by hand.
    q_sat = np.array([0.13, 0.35, 0.31])
    k = np.array([[0.13, 0.08, 0.19], [0.20, 0.15, 0.29], [0.28, 0.19, 0.25],
                  [0.17, 0.15, 0.20]])
    e = np.exp(k @ q_sat / math.sqrt(3))
    np.testing.assert_allclose(got[2], e / e.sum(), rtol=1e-12)


def test_c_equal_zero_gives_uniform_weights():
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, [0.0])[0]
    np.testing.assert_array_equal(got, np.full((4, 4), 0.25))


def test_max_weight_increases_with_c_on_the_example():
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, SCALES)
    top = got.max(axis=-1)  # (S, n): largest weight of each row
    assert np.all(np.diff(top, axis=0) > 0), top


def test_large_c_puts_everything_on_the_largest_score():
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, [100.0])[0]
    scores = reference_weights(EX.x, EX.w_q, EX.w_k, 1.0)  # same order as the scores
    winners = scores.argmax(axis=-1)
    np.testing.assert_allclose(got[np.arange(4), winners], 1.0, atol=1e-12)


def test_sign_of_c_does_not_matter():
    got = projection_scale_weights(EX.x, EX.w_q, EX.w_k, [-3.0, 3.0])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-14)


def test_leading_batch_axes_and_float32():
    x = np.stack([EX.x, 2 * EX.x]).astype(np.float32)  # (2, 4, 4)
    got = projection_scale_weights(x, EX.w_q.astype(np.float32), EX.w_k.astype(np.float32),
                                   [1.0, 3.0])
    assert got.shape == (2, 2, 4, 4)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[1, 1], reference_weights(2 * EX.x, EX.w_q, EX.w_k, 3.0),
                               rtol=1e-5)


small = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


@given(
    x=arrays(np.float64, (3, 4), elements=small),
    w_q=arrays(np.float64, (4, 2), elements=small),
    w_k=arrays(np.float64, (4, 2), elements=small),
    c=st.floats(0.0, 5.0),
)
def test_property_matches_reference(x, w_q, w_k, c):
    got = projection_scale_weights(x, w_q, w_k, [c])[0]
    np.testing.assert_allclose(got, reference_weights(x, w_q, w_k, c), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0)


@given(
    x=arrays(np.float64, (3, 4), elements=small),
    w_q=arrays(np.float64, (4, 2), elements=small),
    w_k=arrays(np.float64, (4, 2), elements=small),
)
def test_property_max_weight_never_decreases_and_entropy_never_increases(x, w_q, w_k):
    got = projection_scale_weights(x, w_q, w_k, [0.0, 0.5, 1.0, 2.0, 4.0])
    top = got.max(axis=-1)  # (S, n)
    assert np.all(np.diff(top, axis=0) >= -1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(got > 0, got * np.log(got), 0.0).sum(axis=-1)  # (S, n)
    assert np.all(np.diff(entropy, axis=0) <= 1e-12)


# --------------------------------------------------------------------------------------
# projection_scale_weights: bad input
# --------------------------------------------------------------------------------------


def test_scales_must_be_one_dimensional():
    with pytest.raises(ValueError, match=r"^scales has shape \(2, 1\); expected a 1-D"):
        projection_scale_weights(EX.x, EX.w_q, EX.w_k, [[1.0], [2.0]])


def test_scalar_scale_is_refused():
    with pytest.raises(ValueError, match=r"^scales has 0 dimension"):
        projection_scale_weights(EX.x, EX.w_q, EX.w_k, 1.0)


def test_nan_scale_is_refused():
    with pytest.raises(ValueError, match=r"^scales contains 1 NaN"):
        projection_scale_weights(EX.x, EX.w_q, EX.w_k, [1.0, float("nan")])


def test_boolean_scales_are_refused():
    with pytest.raises(TypeError, match=r"^scales has dtype bool"):
        projection_scale_weights(EX.x, EX.w_q, EX.w_k, [True])


def test_mismatched_projection_names_the_argument():
    with pytest.raises(ValueError, match=r"^w_k has 3 rows"):
        projection_scale_weights(EX.x, EX.w_q, EX.w_k[:3], [1.0])


# --------------------------------------------------------------------------------------
# projection_scale_grid
# --------------------------------------------------------------------------------------


def test_grid_draws_one_column_per_scale():
    scales = [1, 3, 10, 30]
    fig = projection_scale_grid(EX, scales, query="sat")
    panels = fig.axes[:-1]  # the last axes is the colour bar
    assert len(panels) == 2 * len(scales)
    weights = projection_scale_weights(EX.x, EX.w_q, EX.w_k, scales)
    heatmaps, bars = panels[0::2], panels[1::2]  # one row (heatmap, bars) per c
    for c, w, top, bottom in zip(scales, weights, heatmaps, bars, strict=True):
        assert top.get_title().startswith(f"c = {c}:")
        np.testing.assert_allclose(np.asarray(top.images[0].get_array()), w)
        assert [t.get_text() for t in top.get_xticklabels()] == list(EX.tokens)
        assert [t.get_text() for t in top.get_yticklabels()] == list(EX.tokens)
        np.testing.assert_allclose([p.get_height() for p in bottom.patches], w[2])
        assert "'sat'" in bottom.get_title()
        assert bottom.get_xlabel() and bottom.get_ylim() == (0.0, 1.15)


def test_grid_query_by_index_equals_query_by_token():
    a = projection_scale_grid(EX, [1, 10], query=1)
    b = projection_scale_grid(EX, [1, 10], query="cat")
    for ax_a, ax_b in zip(a.axes[1:4:2], b.axes[1:4:2], strict=True):
        assert [p.get_height() for p in ax_a.patches] == [p.get_height() for p in ax_b.patches]


@pytest.mark.parametrize(("query", "message"), [
    ("dog", r"^query='dog'; expected one of the tokens"),
    (4, r"^query=4; expected .* a position from 0 to 3"),
    (-1, r"^query=-1; expected .* a position from 0 to 3"),  # not wrapped to the last token
])
def test_unknown_query_is_refused(query, message):
    with pytest.raises(ValueError, match=message):
        projection_scale_grid(EX, [1.0], query=query)
