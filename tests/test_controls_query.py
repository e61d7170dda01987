"""``attention_lib.controls.query``: "pick a query" of chapter 3 (without a browser)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from controls_helpers import data_json, texts, walkthrough_qkv

import attention_lib as al
from attention_lib import controls


def test_embeds_the_projections_and_shows_the_library_row():
    ex, q, k, v = walkthrough_qkv()
    markup = controls.query_picker(ex, query="cat")._repr_html_()
    assert data_json(markup, "tokens") == list(ex.tokens)
    for name, m in (("q", q), ("k", k), ("v", v)):
        assert data_json(markup, name) == m.tolist()
    out, w = al.scaled_dot_product_attention(q, k, v)
    i = ex.tokens.index("cat")
    # the scores from a loop: q_i . k_j / sqrt(d_k)
    loop = [sum(a * b for a, b in zip(q[i], kj, strict=True)) / np.sqrt(q.shape[1]) for kj in k]
    assert texts(markup, "lc-score") == [f"{s:.4f}" for s in loop]
    assert texts(markup, "lc-weight") == [f"{x:.4f}" for x in w[i]]
    partial = np.cumsum(w[i][:, None] * v, axis=0)
    assert texts(markup, "lc-partial") == [
        "[" + ", ".join(f"{x:.4f}" for x in row) + "]" for row in partial]
    assert texts(markup, "lc-output") == ["[" + ", ".join(f"{x:.4f}" for x in out[i]) + "]"]
    assert '<option value="1" selected>cat</option>' in markup


def test_query_by_position_equals_query_by_token():
    ex = al.examples.cat_sat_on()
    assert (controls.query_picker(ex, query=2)._repr_html_()
            == controls.query_picker(ex, query="sat")._repr_html_())


@pytest.mark.parametrize(
    "query, error, match",
    [("dog", ValueError, "query='dog'"), (7, ValueError, "query=7"),
     (-1, ValueError, "query=-1"), (True, ValueError, "query=True")],
)
def test_refuses_an_unknown_query(query, error, match):
    with pytest.raises(error, match=match):
        controls.query_picker(al.examples.cat_sat_on(), query=query)


def test_refuses_what_is_not_a_walkthrough_and_numbers_the_page_cannot_show():
    with pytest.raises(TypeError, match="example"):
        controls.query_picker(object())
    ex = al.examples.cat_sat_on()
    with pytest.raises(ValueError, match="example's V: up to"):
        controls.query_picker(dataclasses.replace(ex, w_v=np.asarray(ex.w_v) * 1e20))
    with pytest.raises(TypeError, match="title"):
        controls.query_picker(ex, title=3)
