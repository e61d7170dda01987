"""``attention_lib.controls.projection``: the projection-scale explorer of chapter 3."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from controls_helpers import data_json, texts, walkthrough_qkv

import attention_lib as al
from attention_lib import _validation, controls
from attention_lib.controls import element


def test_shows_the_library_weights_shaded_by_size():
    ex, q, k, _ = walkthrough_qkv()
    markup = controls.projection_scale_explorer(ex, scale=3.0)._repr_html_()
    assert data_json(markup, "q") == q.tolist() and data_json(markup, "k") == k.tolist()
    w = al.projection_scale_weights(ex.x, ex.w_q, ex.w_k, [3.0])[0]
    static = markup.split("<script>")[0]
    cells = re.findall(r'<td class="lc-heat-cell[^"]*" style="--w: ([\d.]+)"[^>]*>([^<]*)</td>',
                       static)
    assert [t for _, t in cells] == [f"{x:.3f}" for x in w.ravel()]
    np.testing.assert_allclose([float(s) for s, _ in cells], w.ravel(), atol=5e-5)
    dark = re.findall(r'<td class="lc-heat-cell( lc-dark)?"', static)
    assert [bool(d) for d in dark] == [x >= element.HEAT_DARK_FROM for x in w.ravel()]
    assert texts(markup, "lc-c2") == ["9.00"]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [({"scale": 31.0}, ValueError, "scale=31.0"), ({"scale": -0.5}, ValueError, "scale"),
     ({"step": 0.0}, ValueError, "step"), ({"scale_max": 1e308}, ValueError, "scale_max"),
     ({"title": b"x"}, TypeError, "title")],
)
def test_refuses_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        controls.projection_scale_explorer(al.examples.cat_sat_on(), **kwargs)


def test_the_largest_accepted_factor_keeps_c_squared_times_the_scores_in_range():
    ex, q, k, _ = walkthrough_qkv()
    largest = np.abs(q @ k.T / np.sqrt(q.shape[1])).max()
    limit = np.sqrt(_validation.LARGEST_SHOWN / max(largest, 1.0))
    controls.projection_scale_explorer(ex, scale_max=limit, step=limit / 100)
    with pytest.raises(ValueError, match="expected at most"):
        controls.projection_scale_explorer(ex, scale_max=limit * 1.01, step=limit / 100)


def test_a_walkthrough_with_other_tokens():
    ex = al.examples.cat_sat_on()
    other = SimpleNamespace(tokens=("w", "x", "y", "z"), x=ex.x, w_q=ex.w_q, w_k=ex.w_k,
                            w_v=ex.w_v)
    markup = controls.projection_scale_explorer(other)._repr_html_()
    assert data_json(markup, "tokens") == ["w", "x", "y", "z"]
