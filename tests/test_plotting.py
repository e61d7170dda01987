"""The pictures of attention weights (``attention_lib.plotting``), on the Agg backend."""

from __future__ import annotations

import base64

import matplotlib
import matplotlib.figure
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pytest

from attention_lib import plotting
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


# --------------------------------------------------------------------------------------
# The book style: no text under 9 pt, figures at most 7 inches wide, sharp inline PNGs
# --------------------------------------------------------------------------------------


def _book_figures():
    """One figure per public drawing function of attention_lib.plotting."""
    from attention_lib import examples, project_qkv

    ex = examples.cat_sat_on()
    q, k, v = project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    return {
        "attention_heatmap": lambda: plotting.attention_heatmap(weights_4x4(), TOKENS, TOKENS),
        "weights_bar": lambda: plotting.weights_bar([0.1, 0.2, 0.3, 0.4], TOKENS, highlight=3),
        "mask_heatmap": lambda: plotting.mask_heatmap(np.tri(4, dtype=bool), TOKENS, TOKENS),
        "attention_shape_flow": lambda: plotting.attention_shape_flow(
            4, 4, 3, 3, query_labels=TOKENS, key_labels=TOKENS),
        "projection_scale_grid": lambda: plotting.projection_scale_grid(ex, [1, 10]),
        "saturation_grid": lambda: plotting.saturation_grid(),
        "query_path": lambda: plotting.query_path(q, k, v, "sat", ex.tokens),
        "head_split_flow": lambda: plotting.head_split_flow(4, 8, 2),
        "kv_cache_step": lambda: plotting.kv_cache_step(5, 4, 3),
        "causal_tiles": lambda: plotting.causal_tiles(np.zeros((11, 11)), 4),
    }


def test_every_public_drawing_function_is_checked_for_font_sizes():
    public = {name for name in plotting.__all__ if callable(getattr(plotting, name))}
    assert public - {"use_book_style"} == set(_book_figures())


@pytest.mark.parametrize("name", sorted(_book_figures()))
def test_no_text_under_9_points_in_the_book_style(name):
    with plt.rc_context():
        plotting.use_book_style()
        made = _book_figures()[name]()
        fig = made if isinstance(made, matplotlib.figure.Figure) else made.figure
        fig.canvas.draw()  # tick labels and legends exist once drawn
        texts = [t for t in fig.findobj(matplotlib.text.Text)
                 if t.get_visible() and t.get_text().strip()]
        assert len(texts) > 3
        small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 9]
        assert small == []


def test_book_style_rc_sets_every_font_size_to_at_least_9_points():
    from matplotlib.font_manager import FontProperties

    with plt.rc_context():
        plotting.use_book_style()
        sizes = {key: plt.rcParams[key] for key in plt.rcParams
                 if key.endswith(("fontsize", "labelsize", "titlesize")) or key == "font.size"}
        assert len(sizes) >= 9
        for key, value in sizes.items():
            if value is None:  # legend.title_fontsize None means legend.fontsize
                continue
            assert FontProperties(size=value).get_size_in_points() >= 9, key
        assert plt.rcParams["figure.figsize"][0] <= 7
        fig, ax = plt.subplots()
        ax.plot([0, 1], label="a line")
        legend = ax.legend(title="legend")
        assert min(t.get_fontsize() for t in [*legend.get_texts(), legend.get_title()]) >= 9
    assert plt.rcParams["font.size"] == matplotlib.rcParamsDefault["font.size"]  # restored


def test_book_style_outside_ipython_only_sets_rc(monkeypatch):
    import IPython
    from matplotlib_inline import backend_inline

    calls = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    monkeypatch.setattr(backend_inline, "set_matplotlib_formats", lambda *f: calls.append(f))
    with plt.rc_context():
        plotting.use_book_style()
        assert plt.rcParams["xtick.labelsize"] == plotting.BOOK_RC["xtick.labelsize"]
    assert calls == []  # no inline format is chosen without a shell


def test_book_style_in_ipython_sends_2x_pngs_with_their_display_width_only():
    from IPython.core.interactiveshell import InteractiveShell

    created = not InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    png = shell.display_formatter.formatters["image/png"]
    before = png.for_type(matplotlib.figure.Figure)  # None, or the registered formatter
    try:
        with plt.rc_context():
            plotting.use_book_style()
            assert png.lookup_by_type(matplotlib.figure.Figure).book_style
            fig, ax = plt.subplots(figsize=(3, 2))
            ax.plot([0, 1])
            data, metadata = shell.display_formatter.format(fig)
        raw = base64.b64decode(data["image/png"])
        pixels_wide = int.from_bytes(raw[16:20], "big")
        assert set(metadata["image/png"]) == {"width"}  # no height: pages may scale it down
        assert abs(pixels_wide - 2 * metadata["image/png"]["width"]) <= 1
        assert 2 * 3 * fig.dpi * 0.9 < pixels_wide <= 2 * 3 * fig.dpi + 2  # about 3 in at 2x
    finally:
        png.pop(matplotlib.figure.Figure, None)
        if before is not None:
            png.for_type(matplotlib.figure.Figure, before)
        if created:
            InteractiveShell.clear_instance()


# --------------------------------------------------------------------------------------
# The saturation explorer's static picture: every panel from one draw
# --------------------------------------------------------------------------------------


def _softmax_reference(z):
    e = np.exp(np.asarray(z, dtype=float) - np.max(z))
    return e / e.sum()


def test_saturation_grid_draws_every_panel_from_one_draw():
    from attention_lib.saturation import saturation_scores

    scales, dims = [1, 3, 8], [1, 16, 64]
    fig = plotting.saturation_grid(scales=scales, d_ks=dims, d_k=64, n_keys=6, seed=2)
    # the one draw, rebuilt here: undivided dot products of the draw at d_k = 64, divided
    s = saturation_scores(64, divide_by_sqrt_dk=False, n_keys=6, seed=2) / 8.0
    expected = [c * s for c in scales] + [np.sqrt(d) * s for d in dims]
    assert len(fig.axes) == len(expected)
    for ax, z in zip(fig.axes, expected, strict=True):
        heights = [bar.get_height() for bar in ax.patches]
        np.testing.assert_allclose(heights, _softmax_reference(z), rtol=1e-12, atol=1e-15)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("c = 1, scores 1·s\n")
    assert titles[5].startswith("$d_k$ = 64 undivided:\n$\\sqrt{64}\\,s$ = 8·s\n")
    # leaving the division out at d_k = 64 is exactly c = sqrt(64) = 8
    assert titles[2].split("\n", 1)[1] == titles[5].split("\n", 2)[2]
    plt.close(fig)


@pytest.mark.parametrize(("n_scales", "n_dims"), [(4, 4), (4, 1), (6, 2)])
def test_saturation_grid_is_at_most_7_inches_wide(n_scales, n_dims):
    fig = plotting.saturation_grid(scales=list(range(1, n_scales + 1)),
                                   d_ks=[2**i for i in range(n_dims)])
    width, _ = fig.get_size_inches()
    assert width <= 7.0
    drawn = [ax for ax in fig.axes if ax.axison]
    assert len(drawn) == n_scales + n_dims  # the spare cells of a row are left empty
    plt.close(fig)
