"""``attention_lib.controls.causal``: the causal stepper of chapter 5 (without a browser)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from controls_helpers import causal_example, data_json, texts

import attention_lib as al
from attention_lib import controls


def test_embeds_the_numbers_and_shows_row_t():
    q, k, v = causal_example()
    markup = controls.causal_stepper(q, k, v, ["The", "cat", "sat", "on"],
                                     start=3)._repr_html_()
    for name, m in (("q", q), ("k", k), ("v", v)):
        assert data_json(markup, name) == m.tolist()
    out, w = al.scaled_dot_product_attention(q, k, v, causal=True)
    assert texts(markup, "lc-weight") == [f"{x:.3f}" for x in w[2]]
    # the scores of the keys it may use, from a loop; the later ones are masked
    loop = [sum(a * b for a, b in zip(q[2], k[j], strict=True)) / np.sqrt(8) for j in range(3)]
    assert texts(markup, "lc-score") == [f"{s:.3f}" for s in loop] + ["masked"]
    assert texts(markup, "lc-output") == ["[" + ", ".join(f"{x:.3f}" for x in out[2]) + "]"]
    assert markup.count("masked") >= 2  # position 4: a chip and a table row
    assert len(re.findall(r"<li><span>\d ", markup)) == 3  # the cache holds positions 1..3
    assert "step t = 3 of 4: the new token is <strong>sat</strong>" in markup


def test_default_labels_are_the_positions():
    q, k, v = causal_example()
    markup = controls.causal_stepper(q, k, v)._repr_html_()
    assert data_json(markup, "tokens") == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((np.ones((3, 2)), np.ones((3, 2)), np.ones((2, 2))), {}, ValueError, "v"),
        ((np.ones(3), np.ones(3), np.ones(3)), {}, ValueError, "q"),
        ((None, np.ones((3, 2)), np.ones((3, 2))), {}, TypeError, "q"),
        ((*causal_example(), ["a", "b"]), {}, ValueError, "tokens"),
        ((*causal_example(), "abcd"), {}, TypeError, "tokens"),
        (causal_example(), {"start": 5}, ValueError, "start=5; expected a step from 1 to 4"),
        (causal_example(), {"start": 0}, ValueError, "start"),
        (causal_example(), {"start": 1.0}, TypeError, "start"),
        (causal_example(), {"start": True}, TypeError, "start"),
        ((np.ones((3, 2)) * 1e16, np.ones((3, 2)), np.ones((3, 2))), {}, ValueError,
         "q: up to"),
        ((np.ones((3, 2)) * 1e10, np.ones((3, 2)) * 1e10, np.ones((3, 2))), {}, ValueError,
         "scores"),
    ],
)
def test_refuses_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        controls.causal_stepper(*args, **kwargs)
