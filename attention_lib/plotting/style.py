"""The book's figure style, its colours, and the labels every figure writes.

``use_book_style`` sets legible sizes and sharp inline PNGs; ``_OKABE`` and
``_TINT`` are the colours of the diagrams; ``_labels`` turns tokens into tick labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .._validation import position_labels

__all__ = ["BOOK_RC", "use_book_style"]


# The book's figure style (see use_book_style): no text under 9 pt, relative sizes
# ("medium", "large") pinned to points, figures at most 7 inches wide by default.
BOOK_RC: dict[str, Any] = {
    "font.size": 10.0,
    "axes.titlesize": 11.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": 10.0,
    "ytick.labelsize": 10.0,
    "legend.fontsize": 10.0,
    "legend.title_fontsize": 10.0,
    "figure.titlesize": 12.0,
    "figure.labelsize": 10.0,
    "figure.figsize": (6.4, 4.8),
}


def _width_only(formatter: Any) -> Any:
    """Wrap a figure-to-PNG formatter so that it reports the display width only."""

    def png(fig: Figure) -> Any:
        out = formatter(fig)
        if isinstance(out, tuple):  # (data, {"width": w, "height": h})
            data, metadata = out
            return data, {"width": metadata["width"]}
        return out

    png.book_style = True  # type: ignore[attr-defined]
    return png


def use_book_style() -> None:
    """Set the book's figure style: legible text, at most 7 inches wide, sharp inline images.

    Sets the matplotlib ``rcParams`` of ``BOOK_RC`` (every font size in
    points, at least 9; the default figure 6.4 x 4.8 inches). Inside IPython
    (Jupyter, Colab, the book build), inline figures are also sent as PNGs with
    twice the pixels ("retina") and a display width of half their pixel width:
    the usual size, sharp on hi-dpi screens. Only the width is given, so a
    page narrower than the figure scales it down without distorting it.
    Elsewhere nothing else changes. Call it once, in a chapter's imports cell.

    Notes
    -----
    Why PNG and not SVG: nbval compares every stored output as text except
    ``image/png`` and ``image/jpeg`` (and the widget view), and an SVG's text
    changes with the matplotlib version, fonts and generated ids.

    Examples
    --------
    >>> with plt.rc_context():            # restores the rcParams afterwards
    ...     use_book_style()              # not inside IPython here: rcParams only
    ...     print(plt.rcParams["legend.fontsize"], plt.rcParams["axes.titlesize"])
    10.0 11.0
    """
    plt.rcParams.update(BOOK_RC)
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    set_matplotlib_formats("retina")
    png = shell.display_formatter.formatters["image/png"]
    png.for_type(Figure, _width_only(png.lookup_by_type(Figure)))


# Okabe-Ito colours (distinguishable with every common colour-vision deficiency),
# and light tints of them for filled boxes.
_OKABE = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "blue": "#0072B2",
          "vermillion": "#D55E00", "purple": "#CC79A7", "yellow": "#F0E442"}
_TINT = {"orange": "#F8DDA6", "sky": "#CBE6F6", "green": "#B3E0D1", "blue": "#B3D0E6",
         "vermillion": "#F2C9A9", "purple": "#EFD4E3", "grey": "#E8E8E8"}
_MIN_PT = 9  # the smallest text any diagram writes, in points


def _labels(labels: Sequence[str] | None, n: int, name: str) -> list[str]:
    """``n`` tick labels: the given ones as str (checked to be ``n``), or the positions."""
    return position_labels(labels, n, name)
