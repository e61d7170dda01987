"""Static pictures of the explorers (chapters 3 and 4): their key positions as small multiples.

They show at once what the browser-side controls of :mod:`attention_lib.controls`
show one setting at a time.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from .._validation import as_real_array, positive_int, token_position
from ..saturation import projection_scale_weights, saturation_scores, saturation_stats
from .matrices import attention_heatmap, weights_bar

__all__ = ["projection_scale_grid", "saturation_grid"]


_DK_CHOICES = tuple(2**i for i in range(11))  # 1, 2, 4, ..., 1024


def projection_scale_grid(
    example: Any, scales: ArrayLike = (1, 3, 10, 30), *, query: str | int = "sat"
) -> Figure:
    """Small multiples: the attention weights at several projection scales ``c``.

    The static picture of :func:`attention_lib.controls.projection_scale_explorer`: one row of
    panels per factor, the heatmap of all weights on the left and a bar
    chart of the row of ``query`` on the right, on a common 0-1 scale.

    Parameters
    ----------
    example : WalkthroughExample
        Anything with ``tokens``, ``x`` (n, d_model), ``w_q`` and ``w_k``
        (d_model, d_k), e.g. :func:`attention_lib.examples.cat_sat_on`.
    scales : array_like, shape (n_scales,)
        The factors ``c`` multiplying ``W_Q`` and ``W_K``.
    query : str or int
        The token (or its position) whose row is drawn as bars.

    Returns
    -------
    matplotlib.figure.Figure
        n_scales x 2 panels (row by row) plus a colour bar.

    Examples
    --------
    >>> from attention_lib.examples import cat_sat_on
    >>> fig = projection_scale_grid(cat_sat_on(), [1, 10])
    >>> len(fig.axes)                  # 2 x 2 panels and the colour bar
    5
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['c = 1: scores × 1', "attention of 'sat', c = 1"]
    >>> plt.close(fig)
    """
    tokens = tuple(example.tokens)
    i = token_position(tokens, query)
    c = as_real_array(scales, "scales", min_ndim=1)
    weights = projection_scale_weights(example.x, example.w_q, example.w_k, c)  # (S, n, n)
    fig, axes = plt.subplots(len(c), 2, figsize=(7.0, 2.5 * len(c) + 0.5),
                             layout="constrained", squeeze=False)
    for (left, right), factor, w in zip(axes, c, weights, strict=True):
        attention_heatmap(w, tokens, tokens, ax=left, vmin=0.0, vmax=1.0, colorbar=False,
                          title=f"c = {factor:g}: scores × {factor * factor:g}")
        weights_bar(w[i], tokens, ax=right, highlight=int(np.argmax(w[i])), fmt="{:.2f}",
                    title=f"attention of {tokens[i]!r}, c = {factor:g}",
                    ylabel=f"weight of {tokens[i]!r}")
        right.set_ylim(0.0, 1.15)
    fig.colorbar(axes[0, 0].images[0], ax=list(axes[:, 0]), label="weight", shrink=0.6)
    fig.suptitle("Multiplying W_Q and W_K by c multiplies the scores by c²")
    return fig


def _saturation_title(scale: float, d_k: int, divide: bool) -> str:
    how = r"$\div\sqrt{d_k}$" if divide else r"not $\div\sqrt{d_k}$"
    return f"c = {scale:g}, $d_k$ = {d_k}, {how}"


def _saturation_bars(ax: Any, scores: np.ndarray, title: str, *, annotate: bool = True) -> Any:
    """Bar chart of softmax(scores) with entropy and Jacobian size in the title."""
    st = saturation_stats(scores)
    labels = [str(j + 1) for j in range(scores.shape[0])]
    weights_bar(st.weights, labels, ax=ax, highlight=int(np.argmax(st.weights)),
                fmt="{:.2f}", ylabel="weight", annotate=annotate)
    ax.set_ylim(0.0, 1.15)
    ax.set_yticks([0.0, 0.5, 1.0])
    ax.set_xlabel("key")
    ax.set_title(f"{title}\nmax w = {float(st.weights.max()):.2f}\n"
                 f"H = {float(st.entropy):.2f}\n"
                 rf"$\|J\|_F$ = {float(st.jacobian_norm):.3f}", fontsize=10)
    return ax


_GRID_COLUMNS = 4  # panels per row of saturation_grid: 4 x 1.75 inches = 7 inches


def _grid_row(sub: Any, panels: list[tuple[np.ndarray, str]], cols: int) -> None:
    """``panels`` (scores, title) as bar charts in rows of ``cols`` on the subfigure ``sub``."""
    rows = -(-len(panels) // cols)
    axes = sub.subplots(rows, cols, squeeze=False, sharey=True)
    for n, ax in enumerate(axes.ravel()):
        if n < len(panels):
            _saturation_bars(ax, *panels[n], annotate=False)
            if n % cols:
                ax.set_ylabel("")
        else:
            ax.set_axis_off()


def saturation_grid(
    *,
    scales: ArrayLike = (1, 3, 10, 30),
    d_ks: ArrayLike = (1, 8, 128, 1024),
    d_k: int = 64, n_keys: int = 8, seed: int = 0,
) -> Figure:
    r"""Small multiples of :func:`attention_lib.controls.saturation_explorer`'s key positions.

    Every panel comes from one draw: :math:`s`, the scores of one random query over
    ``n_keys`` random keys of size ``d_k``, divided by :math:`\sqrt{d_k}`
    (:func:`attention_lib.saturation_scores`). Top: :math:`c\,s`, one panel per
    scale :math:`c` in ``scales``. Bottom: :math:`\sqrt{d}\,s`, one panel per size
    :math:`d` in ``d_ks``: the scores left undivided at size :math:`d` of a query and keys
    whose divided scores are :math:`s` (divided scores of random vectors have the same
    spread at every size, so only the missing division changes from panel to panel).
    Each panel shows the weights with their largest value, their entropy :math:`H` and
    the Frobenius norm of the softmax Jacobian in the title. Rows hold at most four
    panels, so the figure is at most 7 inches wide.

    Parameters
    ----------
    scales : array_like of float
        Scales for the top row.
    d_ks : array_like of int
        Key sizes for the bottom row.
    d_k : int, default 64
        Key size of the draw.
    n_keys, seed : int
        As in :func:`attention_lib.saturation_scores`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = saturation_grid(scales=[1, 30], d_ks=[1, 1024])
    >>> len(fig.axes)
    4
    >>> [ax.get_title().splitlines()[0] for ax in fig.axes]
    ['c = 1, scores 1·s', 'c = 30, scores 30·s', '$d_k$ = 1 undivided:', '$d_k$ = 1024 undivided:']
    >>> fig.axes[3].get_title().splitlines()[1]
    '$\\sqrt{1024}\\,s$ = 32·s'
    >>> plt.close(fig)
    """
    c = as_real_array(scales, "scales", min_ndim=1)
    dims = [positive_int(int(d) if float(d).is_integer() else d, "d_ks", minimum=1)
            for d in as_real_array(d_ks, "d_ks", min_ndim=1)]
    base = saturation_scores(d_k, n_keys=n_keys, seed=seed)  # (n_keys,): divided, c = 1
    top = [(float(x) * base, f"c = {x:g}, scores {x:g}·s") for x in c]
    bottom = [(np.sqrt(d) * base, f"$d_k$ = {d} undivided:\n"
                                  rf"$\sqrt{{{d}}}\,s$ = {np.sqrt(d):.3g}·s") for d in dims]
    cols = min(_GRID_COLUMNS, max(len(top), len(bottom)))
    rows = [-(-len(top) // cols), -(-len(bottom) // cols)]
    fig = plt.figure(figsize=(1.75 * cols, 3.1 * sum(rows) + 0.9), layout="constrained")
    upper, lower = fig.subfigures(2, 1, height_ratios=rows)
    _grid_row(upper, top, cols)
    _grid_row(lower, bottom, cols)
    upper.suptitle("Top: a larger scale c, scores c·s", fontsize=11)
    lower.suptitle(r"Bottom: the division left out at size $d_k$, scores $\sqrt{d_k}\,s$",
                   fontsize=11)
    fig.suptitle(f"One draw s: the scores of a random query over {n_keys} keys\n"
                 rf"at $d_k$ = {d_k}, divided by $\sqrt{{d_k}}$")
    return fig
