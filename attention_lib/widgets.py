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

from ._validation import as_real_array, positive_int
from .plotting import (
    _DK_CHOICES,
    _saturation_bars,
    _saturation_title,
    _token_index,
    attention_heatmap,
    projection_scale_grid,
    saturation_grid,
    weights_bar,
)
from .saturation import projection_scale_weights, saturation_scores, saturation_stats

__all__ = [
    "Explorer",
    "figure_png",
    "live_plot",
    "projection_scale_explorer",
    "saturation_explorer",
]


def figure_png(fig: Figure, *, dpi: int = 100, scale: int = 2) -> bytes:
    """Render a matplotlib figure to PNG bytes and close it.

    The image has ``scale`` pixels per ``1 / dpi`` inch ("retina" for the
    default 2), so that it stays sharp on hi-dpi screens when it is displayed
    ``scale`` times smaller than its pixel size.

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(3, 2))
    >>> png = figure_png(fig, dpi=100)
    >>> png[:4]
    b'\\x89PNG'
    >>> int.from_bytes(png[16:20], "big") > 400   # about 2 x 300 pixels wide
    True
    """
    positive_int(scale, "scale")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi * scale, bbox_inches="tight")
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
    >>> fig, ax = plt.subplots(figsize=(4, 3))
    >>> ex = Explorer(widgets.IntSlider(), fig, alt="an empty plot")
    >>> bundle, metadata = ex._repr_mimebundle_()
    >>> sorted(bundle)[:2]
    ['application/vnd.jupyter.widget-view+json', 'image/png']
    >>> metadata["image/png"]["width"] == int.from_bytes(ex.png[16:20], "big") // 2
    True
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

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        if self.html is not None:
            bundle["text/html"] = self.html._repr_html_()
        bundle["text/plain"] = f"<{type(self).__name__}: {self.alt}>"
        # The PNG has twice the pixels (figure_png): show it at half its pixel width, the
        # figure's size, sharp on hi-dpi screens. The width is in the PNG header, bytes 16-20.
        width = int.from_bytes(self.png[16:20], "big")
        return bundle, {"image/png": {"width": width // 2}}


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


def projection_scale_explorer(
    example: Any,
    *,
    query: str | int = "sat",
    scales: ArrayLike = (1, 3, 10, 30),
) -> Explorer:
    """A slider for the factor ``c`` that multiplies ``W_Q`` and ``W_K``.

    Live: a logarithmic slider for ``c`` (0.1 to 100) redraws the heatmap of
    the weights and the bar chart of the row of ``query``. Static fallback:
    :func:`attention_lib.plotting.projection_scale_grid` at ``scales``.

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
    The weights come from :func:`attention_lib.projection_scale_weights`.

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
    (:func:`attention_lib.saturation_scores`) and, beside them, the entropy and the size of
    the softmax Jacobian as functions of :math:`c` with the current
    :math:`c` marked. Static fallback: :func:`attention_lib.plotting.saturation_grid`
    (every panel from the one draw at ``d_k``).

    Parameters
    ----------
    d_k : int, default 64
        Initial key size (a power of two up to 1024) and the key size of the
        fallback's one draw.
    n_keys, seed : int
        As in :func:`attention_lib.saturation_scores`.
    scales, d_ks : array_like
        The positions shown in the static fallback (see
        :func:`attention_lib.plotting.saturation_grid`).

    Returns
    -------
    Explorer
        The live widget with the fallback figure; its ``alt`` gives the
        largest weight and the entropy in every panel of the fallback.

    Examples
    --------
    >>> ex = saturation_explorer(scales=[1, 30], d_ks=[1, 1024])
    >>> ex.alt.split(":")[0]
    'Weights of one random query over 8 keys, as bar charts, all from one draw s'
    >>> plt.close("all")
    """
    if d_k not in _DK_CHOICES:
        raise ValueError(f"d_k={d_k!r}; expected a power of two from 1 to 1024")
    c = as_real_array(scales, "scales", min_ndim=1)
    dims = [int(d) for d in as_real_array(d_ks, "d_ks", min_ndim=1)]

    def describe_panel(s: np.ndarray) -> str:
        st = saturation_stats(s)
        return f"largest weight {float(st.weights.max()):.2f}, entropy {float(st.entropy):.2f}"

    base = saturation_scores(d_k, n_keys=n_keys, seed=seed)  # (n_keys,): the one draw, s
    top = "; ".join(f"c = {x:g}: " + describe_panel(float(x) * base) for x in c)
    bottom = "; ".join(f"d_k = {d}: " + describe_panel(math.sqrt(d) * base) for d in dims)
    alt = (f"Weights of one random query over {n_keys} keys, as bar charts, all from one "
           f"draw s: its scores at d_k = {d_k}, divided by the square root of d_k. Top, the "
           f"scores times a scale c, {top}. Bottom, the division left out at size d_k, which "
           f"multiplies s by the square root of d_k, {bottom}. The larger the factor, the "
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
                    fontsize=9)
        right.set_title(f"max weight {float(now.weights.max()):.3f}, "
                        rf"max $|J_{{ij}}|$ = {float(now.jacobian_max):.4f}", fontsize=9)
        plt.show()
        plt.close(fig)

    widget = live_plot({"scale": scale_slider, "d_k": dk_slider, "divide": divide_box}, draw)
    fallback = saturation_grid(scales=c, d_ks=dims, d_k=d_k, n_keys=n_keys, seed=seed)
    return Explorer(widget, fallback, alt=alt)
