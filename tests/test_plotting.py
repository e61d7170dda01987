"""The pictures of attention weights (``attention_lib.plotting``), on the Agg backend."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attention_lib.plotting import attention_heatmap, weights_bar

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


def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"


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
