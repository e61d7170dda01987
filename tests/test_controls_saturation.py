"""``attention_lib.controls.saturation``: chapter 4's saturation explorer (without a browser)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from controls_helpers import data_json, elements, texts

import attention_lib as al
from attention_lib import _validation, controls
from attention_lib.controls.saturation import MAX_D_K, MAX_KEYS


def test_embeds_the_library_scores_and_starting_values():
    markup = controls.saturation_explorer(d_ks=(4, 64), n_keys=6, seed=3,
                                          scale=38.05)._repr_html_()
    rows = data_json(markup, "rows")
    assert rows[0]["d_k"] is None and rows[0]["scores"] == list(al.examples.SATURATION_SCORES)
    for row, d in zip(rows[1:], (4, 64), strict=True):
        assert row["d_k"] == d
        assert row["scores"] == al.saturation_scores(d, divide_by_sqrt_dk=False, n_keys=6,
                                                     seed=3).tolist()
    st = al.saturation_stats(al.examples.SATURATION_SCORES, 38.05)
    assert texts(markup, "lc-weight") == [f"{p:.3f}" for p in st.weights]
    assert texts(markup, "lc-score") == [f"{38.05 * s:.2f}" for s in al.examples.SATURATION_SCORES]
    assert texts(markup, "lc-entropy") == [f"{float(st.entropy):.3f}"]
    assert texts(markup, "lc-jnorm") == [f"{float(st.jacobian_norm):.4f}"]
    assert texts(markup, "lc-jmax") == [f"{float(st.jacobian_max):.4f}"]
    number = next(a for t, a in elements(markup) if a.get("type") == "number")
    assert float(number["step"]) <= 0.001 and float(number["value"]) == 38.05
    # The step reaches the window where the rounded weights are the tutorial's printed row.
    lo, hi = printed_row_window(float(number["step"]))
    assert 38.0 < lo < hi < 38.2  # chapter 4 sends the reader there
    assert float(number["min"]) <= lo and hi <= float(number["max"])


def printed_row_window(step: float) -> tuple[float, float]:
    """The smallest and largest c on a grid of ``step`` where softmax(c * scores), rounded to
    three decimals, is the row the tutorial prints for ten times its scores."""
    grid = np.round(np.arange(1.0, 60.0, step), 6)
    weights = al.softmax(grid[:, None] * al.examples.SATURATION_SCORES)
    hits = np.flatnonzero(np.all(weights.round(3) == al.examples.SATURATION_PRINTED[10.0], axis=1))
    assert hits.size and np.all(np.diff(hits) == 1)  # one unbroken window
    return float(grid[hits[0]]), float(grid[hits[-1]])


def test_starting_at_a_random_row():
    markup = controls.saturation_explorer(start=16, divide=False, scale=2.0)._repr_html_()
    s = al.saturation_scores(16, divide_by_sqrt_dk=False)
    st = al.saturation_stats(s, 2.0)
    assert texts(markup, "lc-weight") == [f"{p:.3f}" for p in st.weights]
    assert '<option value="16" selected>' in markup


def test_bar_widths_are_the_weights():
    markup = controls.saturation_explorer(scale=1.0)._repr_html_()
    widths = [float(w) for w in re.findall(r'class="lc-bar" style="width: ([\d.]+)%"',
                                           markup.split("<script>")[0])]
    p = al.softmax(np.asarray(al.examples.SATURATION_SCORES))
    np.testing.assert_allclose(widths, 100 * p, atol=0.05 + 1e-9)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"d_ks": [4, 4]}, ValueError, "d_ks"),
        ({"d_ks": [0]}, ValueError, "d_ks"),
        ({"d_ks": [MAX_D_K + 1]}, ValueError, f"from 1 to {MAX_D_K}"),
        ({"d_ks": "64"}, TypeError, "d_ks"),
        ({"d_ks": [True]}, TypeError, "d_ks"),
        ({"n_keys": 1}, ValueError, "n_keys"),
        ({"n_keys": MAX_KEYS + 1}, ValueError, "n_keys"),
        ({"start": 32}, ValueError, "start"),
        ({"start": True}, TypeError, "start=True"),
        ({"start": "64"}, TypeError, "start='64'; expected a positive integer"),
        ({"scale": -1.0}, ValueError, "scale"),
        ({"scale": float("nan")}, ValueError, "scale"),
        ({"step": 0.0}, ValueError, "step"),
        ({"scale": "1"}, TypeError, "scale"),
        ({"scale_max": 1e308}, ValueError, "scale_max=1e\\+308; expected at most"),
        ({"divide": 1}, TypeError, "divide"),
        ({"title": None}, TypeError, "title"),
        ({"tutorial_scores": [[1.0, 2.0]]}, ValueError, "tutorial_scores"),
        ({"tutorial_scores": [1.0, np.inf]}, ValueError, "tutorial_scores"),
        ({"tutorial_scores": [1e300, 0.0]}, ValueError, "scale_max"),
    ],
)
def test_refuses_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        controls.saturation_explorer(**kwargs)


def test_the_largest_accepted_range_keeps_every_score_below_the_limit():
    # At the largest d_k and scale_max accepted, c * s stays within LARGEST_SHOWN
    # (the browser test types that c into the page and finds no NaN or inf).
    dims = (1, MAX_D_K)
    rows = [al.saturation_scores(d, divide_by_sqrt_dk=False) for d in dims]
    largest = max(max(np.abs(r).max() for r in rows), 0.5)
    limit = _validation.LARGEST_SHOWN / largest
    controls.saturation_explorer(d_ks=dims, scale_max=limit, step=limit / 1e6)
    with pytest.raises(ValueError, match="scale_max"):
        controls.saturation_explorer(d_ks=dims, scale_max=limit * 1.01, step=limit / 1e6)
