"""Interactive explorers (ipywidgets), each with a static fallback for the website.

A live explorer needs a running kernel: its callbacks are Python. The website is
static, so every explorer is displayed through :class:`Explorer`, one output
that carries two representations:

- ``application/vnd.jupyter.widget-view+json``: the live widget, which
  JupyterLab, Binder and Colab render (it ranks above images there);
- ``image/png``: a static figure of the explorer's key positions (for example a
  small-multiples grid of slider values), which the website shows instead
  (``nb_mime_priority_overrides`` in ``_config.yml`` drops the widget view for
  the HTML builder).

Cells that display an explorer carry the tag ``nbval-ignore-output``: a widget
output cannot be compared between runs.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ._validation import as_real_array, check_flag, positive_int
from .attention import project_qkv
from .plotting import attention_heatmap, weights_bar
from .saturation import saturation_stats
from .softmax import softmax

__all__ = [
    "Explorer",
    "figure_png",
    "live_plot",
    "projection_scale_explorer",
    "projection_scale_grid",
    "projection_scale_weights",
    "saturation_explorer",
    "saturation_grid",
    "saturation_scores",
]


def figure_png(fig: Figure, *, dpi: int = 100) -> bytes:
    """Render a matplotlib figure to PNG bytes and close it.

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> figure_png(fig)[:4]
    b'\\x89PNG'
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


class Explorer:
    """A live widget plus a static PNG fallback, displayed as one output.

    Parameters
    ----------
    widget : ipywidgets.Widget
        The live explorer.
    fallback : matplotlib Figure
        A static picture of the explorer's key positions (closed after rendering).
    alt : str
        Alternative text describing the fallback figure.
    html : object with ``_repr_html_``, optional
        A version that runs in the browser without a kernel (for example
        :func:`attention_lib.static_sliders.softmax_slider`); the website shows it
        instead of the PNG.

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> ex = Explorer(widgets.IntSlider(), fig, alt="an empty plot")
    >>> sorted(ex._repr_mimebundle_())[:2]
    ['application/vnd.jupyter.widget-view+json', 'image/png']
    """

    def __init__(
        self, widget: widgets.Widget, fallback: Figure, alt: str, *, html: Any = None
    ) -> None:
        if not alt:
            raise ValueError(
                "alt is empty; describe the fallback figure for readers who cannot see it"
            )
        self.widget = widget
        self.alt = alt
        self.png = figure_png(fallback)
        # Optional browser-side version (e.g. attention_lib.static_sliders): the website
        # prefers text/html over the PNG; JupyterLab prefers the live widget over both.
        self.html = html

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        if self.html is not None:
            bundle["text/html"] = self.html._repr_html_()
        bundle["text/plain"] = f"<{type(self).__name__}: {self.alt}>"
        return bundle


def live_plot(
    controls: dict[str, widgets.ValueWidget],
    draw: Callable[..., None],
    *,
    layout: str = "vertical",
) -> widgets.Box:
    """Wire sliders to a drawing function: ``draw(**values)`` reruns on every change.

    ``draw`` receives the current value of every control by name and draws into a
    fresh figure (it should call ``plt.show()``); its output replaces the
    previous one.

    Examples
    --------
    >>> seen = []
    >>> slider = widgets.IntSlider(value=1)
    >>> box = live_plot({"x": slider}, lambda x: seen.append(x))
    >>> slider.value = 5
    >>> seen
    [1, 5]
    """
    out = widgets.Output()

    def redraw(*_: Any) -> None:
        out.outputs = ()  # clear (clear_output() also prints escape codes outside a kernel)
        with out:
            draw(**{name: c.value for name, c in controls.items()})

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    box = widgets.VBox if layout == "vertical" else widgets.HBox
    return widgets.VBox([box(list(controls.values())), out])


# --------------------------------------------------------------------------------------
# Scaling the query and key projections by a factor c (chapter 03)
# --------------------------------------------------------------------------------------


def projection_scale_weights(
    x: ArrayLike, w_q: ArrayLike, w_k: ArrayLike, scales: ArrayLike
) -> np.ndarray:
    r"""Attention weights after multiplying ``W_Q`` and ``W_K`` by each factor in ``scales``.

    The pure-numpy part of :func:`projection_scale_explorer` (no widgets, no plots).

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        One row per token.
    w_q, w_k : array_like, shape (d_model, d_k)
        The query and key projections (the values play no part in the weights).
    scales : array_like, shape (n_scales,)
        The factors :math:`c`, finite real numbers; :math:`c` and :math:`-c`
        give the same weights.

    Returns
    -------
    numpy.ndarray, shape (n_scales, ..., n, n)
        ``weights[s]`` holds the attention weights (queries as rows, keys as
        columns) for :math:`c` = ``scales[s]``; every row sums to one.

    Notes
    -----
    Multiplying both projections by :math:`c` multiplies every query and
    every key by :math:`c`, hence every score by :math:`c^2`:

    .. math::

        \operatorname{softmax}\!\left(\frac{(cQ)(cK)^{\mathsf T}}{\sqrt{d_k}}\right)
        = \operatorname{softmax}\!\left(c^2\,\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right),
        \qquad Q = X W_Q,\; K = X W_K .

    :math:`c = 1` gives the plain attention weights and :math:`c = 0` the
    uniform weights :math:`1/n`. Softmax depends only on differences of
    scores, and those differences grow like :math:`c^2`, so as :math:`c`
    grows each row tends to a one-hot vector on its largest score (when that
    score is unique in the row).

    Examples
    --------
    >>> x = np.eye(2)                  # two tokens, d_model = 2
    >>> w = np.array([[1.0], [0.0]])   # d_k = 1: q = k = (1, 0) for the tokens
    >>> projection_scale_weights(x, w, w, [0.0, 1.0, 3.0])[:, 0].round(3)
    array([[0.5  , 0.5  ],
           [0.731, 0.269],
           [1.   , 0.   ]])
    """
    q, k, _ = project_qkv(x, w_q, w_k, w_k)  # w_k stands in for w_v, which is not used
    c = as_real_array(scales, "scales", min_ndim=1)
    if c.ndim != 1:
        raise ValueError(
            f"scales has shape {c.shape}; expected a 1-D sequence of factors, shape (n_scales,)"
        )
    d_k = q.shape[-1]
    scores = (q @ np.swapaxes(k, -1, -2)) / math.sqrt(d_k)  # (..., n, n)
    factor = (c.astype(scores.dtype) ** 2).reshape((-1,) + (1,) * scores.ndim)  # (S, 1, ..., 1)
    return softmax(factor * scores, axis=-1)  # (S, ..., n, n)


def _token_index(tokens: tuple[str, ...] | list[str], query: str | int) -> int:
    """Position of ``query`` (a token or an index) in ``tokens``, or a ValueError."""
    if isinstance(query, int | np.integer) and not isinstance(query, bool):
        if not -len(tokens) <= query < len(tokens):
            raise ValueError(f"query={query} is out of range for {len(tokens)} tokens")
        return int(query) % len(tokens)
    if query not in tokens:
        raise ValueError(f"query={query!r} is not one of the tokens {tuple(tokens)}")
    return list(tokens).index(query)


def projection_scale_grid(
    example: Any, scales: ArrayLike = (1, 3, 10, 30), *, query: str | int = "sat"
) -> Figure:
    """Small multiples: the attention weights at several projection scales ``c``.

    The static picture of :func:`projection_scale_explorer`: one row of
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
    i = _token_index(tokens, query)
    c = as_real_array(scales, "scales", min_ndim=1)
    weights = projection_scale_weights(example.x, example.w_q, example.w_k, c)  # (S, n, n)
    fig, axes = plt.subplots(len(c), 2, figsize=(7.5, 2.5 * len(c) + 0.5),
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


def projection_scale_explorer(
    example: Any,
    *,
    query: str | int = "sat",
    scales: ArrayLike = (1, 3, 10, 30),
) -> Explorer:
    """A slider for the factor ``c`` that multiplies ``W_Q`` and ``W_K``.

    Live: a logarithmic slider for ``c`` (0.1 to 100) redraws the heatmap of
    the weights and the bar chart of the row of ``query``. Static fallback:
    :func:`projection_scale_grid` at ``scales``.

    Parameters
    ----------
    example : WalkthroughExample
        Anything with ``tokens``, ``x``, ``w_q`` and ``w_k``.
    query : str or int
        The token (or its position) whose weights are drawn as bars.
    scales : array_like, shape (n_scales,)
        The factors shown in the static fallback.

    Returns
    -------
    Explorer
        The live widget with the fallback figure; its ``alt`` names the
        largest weight of ``query`` at every factor in ``scales``.

    Notes
    -----
    The weights come from :func:`projection_scale_weights`.

    Examples
    --------
    >>> from attention_lib.examples import cat_sat_on
    >>> ex = projection_scale_explorer(cat_sat_on(), scales=[1, 30])
    >>> ex.alt.split(":")[0]
    "Attention of 'sat' as W_Q and W_K are multiplied by c = 1, 30"
    >>> plt.close("all")
    """
    tokens = tuple(example.tokens)
    i = _token_index(tokens, query)
    c = as_real_array(scales, "scales", min_ndim=1)
    weights = projection_scale_weights(example.x, example.w_q, example.w_k, c)  # (S, n, n)
    row = weights[:, i, :]  # (S, n): the row of the query at every factor
    summary = "; ".join(
        f"c = {factor:g}: {float(r.max()):.3f} on {tokens[int(np.argmax(r))]!r}"
        for factor, r in zip(c, row, strict=True)
    )
    alt = (f"Attention of {tokens[i]!r} as W_Q and W_K are multiplied by c = "
           f"{', '.join(f'{factor:g}' for factor in c)}: heatmaps of all "
           f"{len(tokens)} x {len(tokens)} weights (left) and bar charts of the row of "
           f"{tokens[i]!r} (right), one row of panels per c. "
           f"Largest weight of {tokens[i]!r}: {summary}.")

    slider = widgets.FloatLogSlider(value=1.0, base=10.0, min=-1.0, max=2.0, step=0.01,
                                    description="c", readout_format=".2f")

    def draw(c: float) -> None:
        w = projection_scale_weights(example.x, example.w_q, example.w_k, [c])[0]  # (n, n)
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.4), layout="constrained")
        attention_heatmap(w, tokens, tokens, ax=left, vmin=0.0, vmax=1.0,
                          title=f"c = {c:.2f}: scores × {c * c:.2f}")
        weights_bar(w[i], tokens, ax=right, highlight=int(np.argmax(w[i])),
                    title=f"attention of {tokens[i]!r}", ylabel=f"weight of {tokens[i]!r}")
        right.set_ylim(0.0, 1.15)
        plt.show()
        plt.close(fig)

    widget = live_plot({"c": slider}, draw)
    return Explorer(widget, projection_scale_grid(example, c, query=i), alt=alt)


# --------------------------------------------------------------------------------------
# Softmax saturation: weights, entropy and gradient size (chapter 04)
# --------------------------------------------------------------------------------------

_DK_CHOICES = tuple(2**i for i in range(11))  # 1, 2, 4, ..., 1024


def saturation_scores(
    d_k: int,
    *,
    scale: float = 1.0,
    divide_by_sqrt_dk: bool = True,
    n_keys: int = 8,
    seed: int = 0,
) -> np.ndarray:
    r"""Scores of one random query against ``n_keys`` random keys (the saturation explorer's).

    The pure-numpy part of :func:`saturation_explorer` (no widgets, no plots).

    Parameters
    ----------
    d_k : int
        Size of the query and key vectors, at least 1.
    scale : float, default 1.0
        Extra multiplier :math:`c` of the scores (an inverse temperature).
    divide_by_sqrt_dk : bool, default True
        Divide the dot products by :math:`\sqrt{d_k}` (scaled dot-product
        attention) or not.
    n_keys : int, default 8
        Number of keys, at least 2.
    seed : int, default 0
        The draw for each ``d_k`` comes from ``np.random.default_rng([seed, d_k])``,
        so it does not change when ``scale`` or ``divide_by_sqrt_dk`` change.

    Returns
    -------
    numpy.ndarray, shape (n_keys,)

    Notes
    -----
    The query :math:`q` and the keys :math:`k_j` have independent standard
    normal coordinates, and

    .. math::

        s_j = c\,\frac{q \cdot k_j}{\sqrt{d_k}}
        \quad\text{or, undivided,}\quad s_j = c\; q \cdot k_j .

    Examples
    --------
    >>> s = saturation_scores(64)
    >>> s.shape
    (8,)
    >>> bool(np.allclose(saturation_scores(64, divide_by_sqrt_dk=False), 8 * s))
    True
    >>> bool(np.allclose(saturation_scores(64, scale=3.0), 3 * s))
    True
    """
    d_k = positive_int(d_k, "d_k", minimum=1)
    n_keys = positive_int(n_keys, "n_keys", minimum=2)
    c = float(as_real_array(scale, "scale", min_ndim=0))
    divide_by_sqrt_dk = check_flag(divide_by_sqrt_dk, "divide_by_sqrt_dk")
    rng = np.random.default_rng([positive_int(seed, "seed", minimum=0), d_k])
    q = rng.standard_normal(d_k)  # (d_k,)
    k = rng.standard_normal((n_keys, d_k))  # (n_keys, d_k)
    scores = k @ q  # (n_keys,)
    if divide_by_sqrt_dk:
        scores = scores / math.sqrt(d_k)
    return c * scores


def _saturation_title(scale: float, d_k: int, divide: bool) -> str:
    how = r"$\div\sqrt{d_k}$" if divide else r"not $\div\sqrt{d_k}$"
    return f"c = {scale:g}, $d_k$ = {d_k}, {how}"


def _saturation_bars(ax: Any, scores: np.ndarray, title: str, *, annotate: bool = True) -> Any:
    """Bar chart of softmax(scores) with entropy and Jacobian size in the title."""
    st = saturation_stats(scores)
    labels = [f"k{j + 1}" for j in range(scores.shape[0])]
    weights_bar(st.weights, labels, ax=ax, highlight=int(np.argmax(st.weights)),
                fmt="{:.2f}", ylabel="weight", annotate=annotate)
    ax.set_ylim(0.0, 1.15)
    ax.set_xlabel("key")
    ax.set_title(f"{title}\nmax w = {float(st.weights.max()):.2f}, "
                 f"H = {float(st.entropy):.2f}\n"
                 rf"$\|J\|_F$ = {float(st.jacobian_norm):.3f}", fontsize=10)
    return ax


def saturation_grid(
    *,
    scales: ArrayLike = (1, 3, 10, 30),
    d_ks: ArrayLike = (1, 8, 128, 1024),
    d_k: int = 64,
    n_keys: int = 8,
    seed: int = 0,
) -> Figure:
    r"""Small multiples of :func:`saturation_explorer`'s key slider positions.

    Top row: ``d_k`` fixed, scores divided by :math:`\sqrt{d_k}`, one panel per
    scale :math:`c` in ``scales``. Bottom row: :math:`c = 1`, scores *not*
    divided, one panel per size in ``d_ks``. Each panel shows the weights of
    one random query over ``n_keys`` keys, with their entropy :math:`H` and
    the Frobenius norm of the softmax Jacobian in the title.

    Parameters
    ----------
    scales : array_like of float
        Scales for the top row.
    d_ks : array_like of int
        Key sizes for the bottom row.
    d_k : int, default 64
        Key size of the top row.
    n_keys, seed : int
        As in :func:`saturation_scores`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = saturation_grid(scales=[1, 30], d_ks=[1, 1024])
    >>> len(fig.axes)
    4
    >>> fig.axes[0].get_title().splitlines()[0]
    'c = 1, $d_k$ = 64, $\\div\\sqrt{d_k}$'
    >>> plt.close(fig)
    """
    c = as_real_array(scales, "scales", min_ndim=1)
    dims = [positive_int(int(d) if float(d).is_integer() else d, "d_ks", minimum=1)
            for d in as_real_array(d_ks, "d_ks", min_ndim=1)]
    cols = max(len(c), len(dims))
    fig, axes = plt.subplots(2, cols, figsize=(2.2 * cols, 6.6), layout="constrained",
                             squeeze=False, sharey=True)
    for col in range(cols):
        if col < len(c):
            s = saturation_scores(d_k, scale=float(c[col]), n_keys=n_keys, seed=seed)
            _saturation_bars(axes[0, col], s, _saturation_title(float(c[col]), d_k, True),
                             annotate=False)
        else:
            axes[0, col].set_axis_off()
        if col < len(dims):
            s = saturation_scores(dims[col], divide_by_sqrt_dk=False, n_keys=n_keys, seed=seed)
            _saturation_bars(axes[1, col], s, _saturation_title(1, dims[col], False),
                             annotate=False)
        else:
            axes[1, col].set_axis_off()
    for ax in axes[:, 1:].ravel():
        ax.set_ylabel("")
    fig.suptitle(f"One random query, {n_keys} keys. Top: larger scale c. "
                 r"Bottom: larger $d_k$, not divided")
    return fig


def saturation_explorer(
    *,
    d_k: int = 64,
    n_keys: int = 8,
    seed: int = 0,
    scales: ArrayLike = (1, 3, 10, 30),
    d_ks: ArrayLike = (1, 8, 128, 1024),
) -> Explorer:
    r"""Sliders for the scale, :math:`d_k` and the :math:`\sqrt{d_k}` division.

    Live: a logarithmic slider for the scale :math:`c` (0.1 to 100), a slider
    for :math:`d_k` (powers of two, 1 to 1024) and a check box "divide by
    :math:`\sqrt{d_k}`" redraw the weights of one random query
    (:func:`saturation_scores`) and, beside them, the entropy and the size of
    the softmax Jacobian as functions of :math:`c` with the current
    :math:`c` marked. Static fallback: :func:`saturation_grid`.

    Parameters
    ----------
    d_k : int, default 64
        Initial key size (a power of two up to 1024) and the key size of the
        fallback's top row.
    n_keys, seed : int
        As in :func:`saturation_scores`.
    scales, d_ks : array_like
        The positions shown in the static fallback (see :func:`saturation_grid`).

    Returns
    -------
    Explorer
        The live widget with the fallback figure; its ``alt`` gives the
        largest weight and the entropy in every panel of the fallback.

    Examples
    --------
    >>> ex = saturation_explorer(scales=[1, 30], d_ks=[1, 1024])
    >>> ex.alt.split(":")[0]
    'Weights of one random query over 8 keys'
    >>> plt.close("all")
    """
    if d_k not in _DK_CHOICES:
        raise ValueError(f"d_k={d_k!r}; expected a power of two from 1 to 1024")
    c = as_real_array(scales, "scales", min_ndim=1)
    dims = [int(d) for d in as_real_array(d_ks, "d_ks", min_ndim=1)]

    def describe_panel(s: np.ndarray) -> str:
        st = saturation_stats(s)
        return f"largest weight {float(st.weights.max()):.2f}, entropy {float(st.entropy):.2f}"

    top = "; ".join(f"c = {x:g}: " + describe_panel(
        saturation_scores(d_k, scale=float(x), n_keys=n_keys, seed=seed)) for x in c)
    bottom = "; ".join(f"d_k = {d}: " + describe_panel(
        saturation_scores(d, divide_by_sqrt_dk=False, n_keys=n_keys, seed=seed)) for d in dims)
    alt = (f"Weights of one random query over {n_keys} keys: bar charts in two rows. Top row, "
           f"d_k = {d_k} with scores divided by the square root of d_k, scale {top}. Bottom "
           f"row, scale 1 with undivided scores, {bottom}. The larger the effective scale, the "
           "closer the weights are to one-hot and the smaller the entropy and the gradient.")

    grid = np.geomspace(0.1, 100.0, 200)  # scales for the curves
    scale_slider = widgets.FloatLogSlider(value=1.0, base=10.0, min=-1.0, max=2.0, step=0.01,
                                          description="scale c", readout_format=".2f")
    dk_slider = widgets.SelectionSlider(options=list(_DK_CHOICES), value=d_k,
                                        description="d_k")
    divide_box = widgets.Checkbox(value=True, description="divide by sqrt(d_k)")

    def draw(scale: float, d_k: int, divide: bool) -> None:
        base = saturation_scores(d_k, divide_by_sqrt_dk=divide, n_keys=n_keys, seed=seed)
        fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.6), layout="constrained")
        _saturation_bars(left, scale * base, _saturation_title(round(scale, 2), d_k, divide))
        curves = saturation_stats(base, grid[:, None])
        now = saturation_stats(scale * base)
        right.semilogx(grid, curves.entropy, color="tab:blue", label="entropy H (nats)")
        right.set_xlabel("scale c")
        right.set_ylabel("entropy H (nats)", color="tab:blue")
        right.set_ylim(0.0, math.log(n_keys) * 1.05)
        twin = right.twinx()
        twin.semilogx(grid, curves.jacobian_norm, color="tab:red", label=r"$\|J\|_F$")
        twin.semilogx(grid, curves.jacobian_max, color="tab:red", linestyle="--",
                      label=r"max $|J_{ij}|$")
        twin.set_ylabel("size of the softmax Jacobian", color="tab:red")
        twin.set_ylim(0.0, max(0.3, float(curves.jacobian_norm.max()) * 1.05))
        right.axvline(scale, color="black", linewidth=1)
        right.plot([scale], [float(now.entropy)], "o", color="tab:blue")
        twin.plot([scale], [float(now.jacobian_norm)], "o", color="tab:red")
        lines = right.get_lines()[:1] + twin.get_lines()[:2]
        twin.legend(lines, [line.get_label() for line in lines], loc="upper right",
                    fontsize=8)
        right.set_title(f"max weight {float(now.weights.max()):.3f}, "
                        rf"max $|J_{{ij}}|$ = {float(now.jacobian_max):.4f}", fontsize=9)
        plt.show()
        plt.close(fig)

    widget = live_plot({"scale": scale_slider, "d_k": dk_slider, "divide": divide_box}, draw)
    fallback = saturation_grid(scales=c, d_ks=dims, d_k=d_k, n_keys=n_keys, seed=seed)
    return Explorer(widget, fallback, alt=alt)
