"""The shape-flow diagram of attention (``attention_lib.plotting.attention_shape_flow``).

The expected size of every drawn matrix is taken from real numpy arrays of the
given sizes (``q @ k.T`` and ``a @ v``), not from the drawing code, so the
picture is checked against what numpy says the shapes are.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_lib.plotting import attention_shape_flow

QUERIES = ["der", "Hund", "jagte"]
KEYS = ["the", "dog", "chased", "the", "ball"]


def patches_by_gid(ax):
    found = {}
    for p in ax.patches:
        gid = p.get_gid()
        assert gid not in found, f"two patches have gid {gid!r}"
        found[gid] = p
    return found


def size(patch):
    """(rows, columns) of a drawn matrix: height, width in entry units."""
    return (patch.get_height(), patch.get_width())


def texts(ax):
    return [t.get_text() for t in ax.texts]


def expected_shapes(n_q, n_k, d_k, d_v):
    q = np.zeros((n_q, d_k))
    k = np.zeros((n_k, d_k))
    v = np.zeros((n_k, d_v))
    scores = q @ k.T
    return {"Q": q.shape, "K^T": k.T.shape, "QK^T": scores.shape, "A": scores.shape,
            "V": v.shape, "Z": (scores @ v).shape}


dims = st.integers(min_value=1, max_value=9)


@settings(max_examples=15, deadline=None)
@given(n_q=dims, n_k=dims, d_k=dims, d_v=dims, data=st.data())
def test_every_matrix_is_drawn_with_its_numpy_shape(n_q, n_k, d_k, d_v, data):
    i = data.draw(st.integers(0, n_q - 1))
    j = data.draw(st.integers(0, n_k - 1))
    fig, ax = plt.subplots()
    try:
        attention_shape_flow(n_q, n_k, d_k, d_v, highlight=(i, j), ax=ax)
    finally:
        plt.close(fig)  # the drawn artists stay readable after closing
    drawn = patches_by_gid(ax)
    for gid, shape in expected_shapes(n_q, n_k, d_k, d_v).items():
        assert size(drawn[gid]) == shape, gid
    # The highlighted parts are one row / one column / one entry of their matrix ...
    assert size(drawn["Q:row"]) == (1, d_k)
    assert size(drawn["K^T:col"]) == (d_k, 1)
    assert size(drawn["QK^T:cell"]) == (1, 1)
    assert size(drawn["A:row"]) == (1, n_k)
    assert size(drawn["Z:row"]) == (1, d_v)

    # ... at query i and key j, counted from the top-left corner of each matrix.
    def offset(part, whole):
        px, py = drawn[part].get_xy()
        wx, wy = drawn[whole].get_xy()
        return (py - wy, px - wx)  # (row, column)

    assert offset("Q:row", "Q") == pytest.approx((i, 0))
    assert offset("K^T:col", "K^T") == pytest.approx((0, j))
    assert offset("QK^T:cell", "QK^T") == pytest.approx((i, j))
    assert offset("A:row", "A") == pytest.approx((i, 0))
    assert offset("Z:row", "Z") == pytest.approx((i, 0))


def test_rows_line_up_across_each_product():
    ax = attention_shape_flow(3, 5, 4, 6)
    drawn = patches_by_gid(ax)
    top = {gid: p.get_xy()[1] for gid, p in drawn.items()}
    assert top["Q"] == top["K^T"] == top["QK^T"]
    assert top["A"] == top["V"] == top["Z"]
    assert top["A"] != top["Q"]
    # Row 0 is drawn on top: the y axis points down.
    bottom, upper = ax.get_ylim()
    assert bottom > upper
    # Left to right: Q, K^T, QK^T and A, V, Z.
    left = {gid: p.get_xy()[0] for gid, p in drawn.items()}
    assert left["Q"] < left["K^T"] < left["QK^T"]
    assert left["A"] < left["V"] < left["Z"]


def test_matrices_do_not_overlap():
    ax = attention_shape_flow(5, 5, 4, 6, query_labels=KEYS, key_labels=KEYS)
    boxes = [p.get_bbox() for gid, p in patches_by_gid(ax).items() if ":" not in gid]
    assert len(boxes) == 6
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            ba, bb = boxes[a], boxes[b]
            apart = (ba.x1 <= bb.x0 or bb.x1 <= ba.x0 or ba.y1 <= bb.y0 or bb.y1 <= ba.y0)
            assert apart, (a, b)


def test_dimension_texts_name_the_sizes():
    ax = attention_shape_flow(3, 5, 4, 6)
    shown = texts(ax)
    for sizes in ("3 × 4", "4 × 5", "3 × 5", "5 × 6", "3 × 6"):
        assert any(t.endswith(f"= {sizes}") for t in shown), sizes
    assert any("4 products" in t for t in shown)
    assert any("softmax" in t and "row" in t for t in shown)


def test_token_labels_are_written():
    ax = attention_shape_flow(3, 5, 4, 6, query_labels=QUERIES, key_labels=KEYS)
    shown = texts(ax)
    for token in QUERIES:  # rows of Q, A and Z
        assert shown.count(token) == 3, token
    assert shown.count("dog") == 2  # columns of K^T, rows of V
    assert shown.count("the") == 4  # "the" is two of the keys


def test_without_labels_no_tokens_are_written():
    ax = attention_shape_flow(3, 5, 4, 6)
    assert not set(QUERIES + KEYS) & set(texts(ax))


def test_highlight_none_draws_only_the_matrices():
    ax = attention_shape_flow(2, 3, 4, 5, highlight=None)
    assert sorted(patches_by_gid(ax)) == sorted(["Q", "K^T", "QK^T", "A", "V", "Z"])
    assert not any("products" in t for t in texts(ax))


def test_returns_the_given_ax_with_a_title():
    fig, ax = plt.subplots()
    assert attention_shape_flow(2, 2, 2, 2, ax=ax, title="Flow") is ax
    assert ax.get_title() == "Flow"
    attention_shape_flow(2, 2, 2, 2, ax=ax, title=None)
    assert ax.get_title() == "Flow"  # None leaves the title alone
    assert attention_shape_flow(2, 2, 2, 2).get_title() != ""


def test_accepts_numpy_integers():
    ax = attention_shape_flow(np.int64(2), np.int32(3), 4, 5)
    assert size(patches_by_gid(ax)["QK^T"]) == (2, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"n_q": 0}, ValueError, r"^n_q=0; expected a positive integer"),
        ({"n_k": 33}, ValueError, r"^n_k=33; expected"),
        ({"d_k": -1}, ValueError, r"^d_k=-1; expected"),
        ({"d_v": 2.0}, TypeError, r"^d_v=2.0; expected a positive integer"),
        ({"d_v": True}, TypeError, r"^d_v=True; expected a positive integer"),
        ({"highlight": (3, 0)}, ValueError, r"^highlight=\(3, 0\); expected 0 <= query < 3"),
        ({"highlight": (0, -1)}, ValueError, r"^highlight=\(0, -1\)"),
        ({"highlight": (1,)}, TypeError, r"^highlight=\(1,\); expected a pair"),
        ({"highlight": 1}, TypeError, r"^highlight=1; expected a pair"),
        ({"query_labels": ["a", "b"]}, ValueError, r"^query_labels has 2 labels; expected 3"),
        ({"key_labels": KEYS[:4]}, ValueError, r"^key_labels has 4 labels; expected 5"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, pattern):
    args = {"n_q": 3, "n_k": 5, "d_k": 4, "d_v": 6} | kwargs
    n_q, n_k, d_k, d_v = (args.pop(name) for name in ("n_q", "n_k", "d_k", "d_v"))
    with pytest.raises(error, match=pattern):
        attention_shape_flow(n_q, n_k, d_k, d_v, **args)
