"""The static pictures of the explorers (``attention_lib.plotting.fallbacks``).

``projection_scale_grid`` is checked with its explorer in ``test_widgets_projection.py``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attention_lib import plotting

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
