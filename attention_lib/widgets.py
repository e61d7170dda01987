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
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["Explorer", "figure_png", "live_plot"]


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

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> ex = Explorer(widgets.IntSlider(), fig, alt="an empty plot")
    >>> sorted(ex._repr_mimebundle_())[:2]
    ['application/vnd.jupyter.widget-view+json', 'image/png']
    """

    def __init__(self, widget: widgets.Widget, fallback: Figure, alt: str) -> None:
        if not alt:
            raise ValueError("alt is empty; describe the fallback figure for readers who cannot see it")
        self.widget = widget
        self.alt = alt
        self.png = figure_png(fallback)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
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
