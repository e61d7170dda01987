"""The book's figure style (``attention_lib.plotting.style``), on the Agg backend.

No text under 9 pt in any public figure, figures at most 7 inches wide, sharp
inline PNGs that carry their display width only.
"""

from __future__ import annotations

import base64

import matplotlib
import matplotlib.figure
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pytest

from attention_lib import plotting

TOKENS = ["The", "cat", "sat", "on"]


def weights_4x4():
    w = np.array([[4.0, 1.0, 1.0, 2.0], [1.0, 5.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0],
                  [0.0, 1.0, 2.0, 3.0]])
    return w / w.sum(axis=1, keepdims=True)


def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"



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
        "model_map": lambda: plotting.model_map(),
        "block_map": lambda: plotting.block_map("post", cross_attention=True),
        "block_maps": lambda: plotting.block_maps({"norm_position": "pre"},
                                                  {"norm_position": "post"}),
        "encoder_decoder_map": lambda: plotting.encoder_decoder_map(),
    }


def test_every_public_drawing_function_is_checked_for_font_sizes():
    public = {name for name in plotting.__all__ if callable(getattr(plotting, name))}
    assert public - {"use_book_style", "model_map_text"} == set(_book_figures())


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
