"""Heatmaps and bar charts of attention weights (``attention_lib.plotting.matrices``).

On the Agg backend. The three pictures share one axes helper; its conventions
(keys across, queries down, long labels slanted, a figure sized to the matrix)
are checked through each public function.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attention_lib.plotting import attention_heatmap, mask_heatmap, weights_bar

TOKENS = ["The", "cat", "sat", "on"]


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def weights_4x4():
    w = np.array([[4.0, 1.0, 1.0, 2.0], [1.0, 5.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0],
                  [0.0, 1.0, 2.0, 3.0]])
    return w / w.sum(axis=1, keepdims=True)


def tick_texts(labels):
    return [t.get_text() for t in labels]


# --------------------------------------------------------------------------------------
# attention_heatmap
# --------------------------------------------------------------------------------------


def test_heatmap_returns_the_given_ax(ax):
    assert attention_heatmap(weights_4x4(), TOKENS, TOKENS, ax=ax) is ax


def test_heatmap_makes_an_ax_when_none_is_given():
    ax = attention_heatmap(weights_4x4(), TOKENS, TOKENS)
    assert ax is not None
    assert ax in ax.figure.axes


def test_heatmap_tick_labels_are_the_tokens(ax):
    queries = ["it", "was", "tired"]
    attention_heatmap(weights_4x4()[:3], queries, TOKENS, ax=ax)
    assert tick_texts(ax.get_xticklabels()) == TOKENS
    assert tick_texts(ax.get_yticklabels()) == queries
    assert list(ax.get_xticks()) == [0, 1, 2, 3]
    assert list(ax.get_yticks()) == [0, 1, 2]


def test_heatmap_default_labels_are_indices(ax):
    attention_heatmap(np.full((2, 3), 1 / 3), ax=ax)
    assert tick_texts(ax.get_xticklabels()) == ["0", "1", "2"]
    assert tick_texts(ax.get_yticklabels()) == ["0", "1"]


def test_heatmap_axis_labels_and_title(ax):
    attention_heatmap(weights_4x4(), TOKENS, TOKENS, ax=ax, title="Layer 0")
    assert "key" in ax.get_xlabel()
    assert "query" in ax.get_ylabel()
    assert ax.get_title() == "Layer 0"


def test_heatmap_without_title(ax):
    attention_heatmap(weights_4x4(), TOKENS, TOKENS, ax=ax, title=None)
    assert ax.get_title() == ""


def test_heatmap_draws_the_weights(ax):
    w = weights_4x4()
    attention_heatmap(w, TOKENS, TOKENS, ax=ax)
    assert len(ax.images) == 1
    np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), w)


def test_heatmap_annotates_every_cell(ax):
    w = weights_4x4()
    attention_heatmap(w, TOKENS, TOKENS, ax=ax, fmt="{:.2f}")
    texts = tick_texts(ax.texts)
    assert len(texts) == 16
    assert texts == [f"{x:.2f}" for x in w.ravel()]


def test_heatmap_without_annotations_or_colorbar(ax):
    attention_heatmap(weights_4x4(), TOKENS, TOKENS, ax=ax, annotate=False, colorbar=False)
    assert len(ax.texts) == 0
    assert list(ax.figure.axes) == [ax]


def test_heatmap_colorbar_adds_an_axes(ax):
    attention_heatmap(weights_4x4(), TOKENS, TOKENS, ax=ax)
    assert len(ax.figure.axes) == 2


@pytest.mark.parametrize(
    ("query_labels", "key_labels", "name"),
    [
        (TOKENS[:3], TOKENS, "query_labels"),
        (TOKENS, TOKENS + ["mat"], "key_labels"),
        (TOKENS, [], "key_labels"),
    ],
)
def test_heatmap_label_count_mismatch_raises(ax, query_labels, key_labels, name):
    with pytest.raises(ValueError, match=rf"^{name} has \d+ labels; expected 4"):
        attention_heatmap(weights_4x4(), query_labels, key_labels, ax=ax)


@pytest.mark.parametrize("labels", ["abcd", set(TOKENS), dict.fromkeys(TOKENS), 4])
def test_heatmap_labels_must_be_an_ordered_sequence(ax, labels):
    # A 4-letter string would label the rows "a", "b", ... and a set in no fixed order.
    with pytest.raises(TypeError, match=r"^key_labels=.*expected a sequence of 4 strings"):
        attention_heatmap(weights_4x4(), TOKENS, labels, ax=ax)


def test_heatmap_labels_may_be_an_array(ax):
    attention_heatmap(weights_4x4(), np.array(TOKENS), TOKENS, ax=ax)
    assert tick_texts(ax.get_yticklabels()) == TOKENS


@pytest.mark.parametrize("shape", [(4,), (2, 4, 4)])
def test_heatmap_needs_a_matrix(ax, shape):
    with pytest.raises(ValueError, match=r"^weights has shape"):
        attention_heatmap(np.ones(shape) / 4, ax=ax)


# --------------------------------------------------------------------------------------
# weights_bar
# --------------------------------------------------------------------------------------


def test_bar_returns_the_given_ax(ax):
    assert weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, ax=ax) is ax


def test_bar_makes_an_ax_when_none_is_given():
    ax = weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS)
    assert ax in ax.figure.axes


def test_bar_tick_labels_are_the_tokens(ax):
    weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, ax=ax)
    assert tick_texts(ax.get_xticklabels()) == TOKENS
    assert list(ax.get_xticks()) == [0, 1, 2, 3]


def test_bar_axis_labels_and_title(ax):
    weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, ax=ax, title="it", ylabel="weight of it")
    assert "key" in ax.get_xlabel()
    assert ax.get_ylabel() == "weight of it"
    assert ax.get_title() == "it"


def test_bar_heights_are_the_weights(ax):
    w = [0.1, 0.2, 0.3, 0.4]
    weights_bar(w, TOKENS, ax=ax)
    assert len(ax.patches) == 4
    np.testing.assert_allclose([p.get_height() for p in ax.patches], w)


def test_bar_highlight_changes_one_colour(ax):
    weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, ax=ax, highlight=3)
    colours = [p.get_facecolor() for p in ax.patches]
    assert colours[0] == colours[1] == colours[2]
    assert colours[3] != colours[0]


def test_bar_annotations(ax):
    weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, ax=ax, fmt="{:.1f}")
    assert tick_texts(ax.texts) == ["0.1", "0.2", "0.3", "0.4"]


@pytest.mark.parametrize("labels", [TOKENS[:3], TOKENS + ["mat"], []])
def test_bar_label_count_mismatch_raises(ax, labels):
    with pytest.raises(ValueError, match=rf"^labels has {len(labels)} labels; expected 4"):
        weights_bar([0.1, 0.2, 0.3, 0.4], labels, ax=ax)


def test_bar_needs_one_row(ax):
    with pytest.raises(ValueError, match=r"^weights has shape \(2, 2\)"):
        weights_bar(np.full((2, 2), 0.5), ax=ax)


def test_figures_are_closed_between_tests():
    # The autouse fixture closes what earlier tests drew.
    assert plt.get_fignums() == []


# --------------------------------------------------------------------------------------
# attention_heatmap(highlight=...): outlined cells
# --------------------------------------------------------------------------------------


def outlined(ax):
    """(row, column) of every outline, read back from the drawn rectangles."""
    cells = []
    for p in ax.patches:
        assert (p.get_width(), p.get_height()) == (1, 1)
        assert p.get_fill() is False
        row, col = p.get_y() + 0.5, p.get_x() + 0.5  # imshow puts cell (i, j) at (j, i)
        assert p.get_gid() == f"highlight[{row:.0f},{col:.0f}]"
        cells.append((round(row), round(col)))
    return cells


def test_heatmap_outlines_the_given_cells(ax):
    w = weights_4x4()
    attention_heatmap(w, TOKENS, TOKENS, ax=ax, highlight=[(0, 3), (2, 1)])
    assert outlined(ax) == [(0, 3), (2, 1)]
    assert len(ax.texts) == 16  # the numbers are still written
    np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), w)


def test_heatmap_highlight_forms_agree():
    w = weights_4x4()
    best = w == w.max(axis=1, keepdims=True)  # (4, 4) bool, one True per row here
    by_loop = [(i, j) for i in range(4) for j in range(4) if w[i, j] == max(w[i])]
    forms = {"bool matrix": best, "pairs": by_loop, "set": set(by_loop),
             "argwhere": np.argwhere(best), "numpy pairs": [tuple(p) for p in np.argwhere(best)]}
    for form, highlight in forms.items():
        ax = attention_heatmap(w, highlight=highlight, colorbar=False)
        assert sorted(outlined(ax)) == by_loop, form
        plt.close(ax.figure)


@pytest.mark.parametrize("highlight", [None, [], np.zeros((4, 4), dtype=bool)])
def test_heatmap_highlight_nothing(ax, highlight):
    attention_heatmap(weights_4x4(), ax=ax, highlight=highlight)
    assert len(ax.patches) == 0


def test_heatmap_outlines_lie_inside_the_image(ax):
    attention_heatmap(np.full((2, 3), 1 / 3), ax=ax, highlight=[(1, 2), (0, 0)])
    left, right, bottom, top = ax.images[0].get_extent()  # rows downwards: bottom > top
    for p in ax.patches:
        assert left <= p.get_x() and p.get_x() + p.get_width() <= right
        assert top <= p.get_y() and p.get_y() + p.get_height() <= bottom


@pytest.mark.parametrize(
    ("highlight", "error", "pattern"),
    [
        ([(4, 0)], ValueError, r"^highlight\[0\]\[0\]=4; expected a position from 0 to 3"),
        ([(0, 1), (1, -1)], ValueError, r"^highlight\[1\]\[1\]=-1; .*not wrapped"),
        ([(0, 1, 2)], ValueError, r"^highlight\[0\]=\(0, 1, 2\); expected a \(row, column\) pair"),
        ([(0.0, 1)], TypeError, r"^highlight\[0\]\[0\]=0.0; expected an integer"),
        ((0, 1), TypeError, r"^highlight=\(0, 1\); expected \(row, column\) pairs"),
        (np.ones((3, 4), dtype=bool), ValueError,
         r"^highlight is a boolean array of shape \(3, 4\); expected shape \(4, 4\)"),
    ],
)
def test_heatmap_bad_highlight_names_the_argument(ax, highlight, error, pattern):
    with pytest.raises(error, match=pattern):
        attention_heatmap(weights_4x4(), ax=ax, highlight=highlight)


def test_heatmap_axis_labels_can_be_changed_or_left_out(ax):
    attention_heatmap(weights_4x4(), ax=ax, xlabel="stored pair", ylabel=None)
    assert ax.get_xlabel() == "stored pair"
    assert ax.get_ylabel() == ""


# --------------------------------------------------------------------------------------
# The axes every matrix picture shares
# --------------------------------------------------------------------------------------


PICTURES = {  # each draws a (3, n_k) matrix, or one row of n_k, with the given key labels
    "attention_heatmap": lambda keys, ax=None: attention_heatmap(
        np.full((3, len(keys)), 1 / len(keys)), ["a", "b", "c"], keys, ax=ax),
    "mask_heatmap": lambda keys, ax=None: mask_heatmap(
        np.ones((3, len(keys)), dtype=bool), ["a", "b", "c"], keys, ax=ax),
    "weights_bar": lambda keys, ax=None: weights_bar(np.full(len(keys), 1 / len(keys)), keys,
                                                     ax=ax),
}


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_short_key_labels_stand_upright_and_long_ones_slant(name, ax):
    PICTURES[name](["it", "was"], ax)
    assert {(t.get_rotation(), t.get_ha()) for t in ax.get_xticklabels()} == {(0.0, "center")}
    ax.clear()
    PICTURES[name](["it", "tired"], ax)  # one label longer than 3 characters slants them all
    assert {(t.get_rotation(), t.get_ha()) for t in ax.get_xticklabels()} == {(45.0, "right")}
    assert tick_texts(ax.get_xticklabels()) == ["it", "tired"]


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_keys_run_across_and_each_picture_names_its_axes(name, ax):
    PICTURES[name](TOKENS, ax)
    assert list(ax.get_xticks()) == [0, 1, 2, 3]
    assert ax.get_xlabel().startswith("key")
    assert ax.get_ylabel() != ""
    if name != "weights_bar":  # the queries run down
        assert tick_texts(ax.get_yticklabels()) == ["a", "b", "c"]
        assert ax.get_ylabel().startswith("query")


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_a_new_figure_grows_with_the_keys(name):
    narrow = PICTURES[name](TOKENS[:2]).figure
    wide = PICTURES[name](TOKENS * 3).figure
    assert narrow.get_layout_engine().__class__.__name__ == "ConstrainedLayoutEngine"
    (w0, h0), (w1, h1) = narrow.get_size_inches(), wide.get_size_inches()
    assert w1 > w0 and h1 == h0


def test_both_heatmaps_of_one_shape_get_the_same_figure_and_grow_with_the_queries():
    for n_q in (2, 5):
        a = attention_heatmap(np.full((n_q, 3), 1 / 3)).figure.get_size_inches()
        m = mask_heatmap(np.ones((n_q, 3), dtype=bool)).figure.get_size_inches()
        np.testing.assert_array_equal(a, m)
    short, tall = (attention_heatmap(np.ones((n_q, 3))).figure.get_size_inches()
                   for n_q in (2, 5))
    assert tall[1] > short[1] and tall[0] == short[0]


@pytest.mark.parametrize("name", ["attention_heatmap", "mask_heatmap", "weights_bar"])
def test_title_none_draws_no_title(name, ax):
    draw = {"attention_heatmap": lambda: attention_heatmap(weights_4x4(), ax=ax, title=None),
            "mask_heatmap": lambda: mask_heatmap(np.tri(4, dtype=bool), ax=ax, title=None),
            "weights_bar": lambda: weights_bar([0.5, 0.5], ax=ax, title=None)}
    draw[name]()
    assert ax.get_title() == ""
