"""Matrices and rows of attention weights: heatmaps, the mask, bar charts.

The three pictures share one axes helper, ``_matrix_axes``: keys across, queries
down, long tick labels slanted, the axis labels and the title.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle
from numpy.typing import ArrayLike

from .._validation import cell_positions
from .style import _labels

__all__ = ["attention_heatmap", "mask_heatmap", "weights_bar"]


def _matrix_axes(
    ax: Axes | None,
    key_labels: list[str],
    query_labels: list[str] | None,
    *,
    figsize: tuple[float, float],
    title: str | None,
    xlabel: str | None,
    ylabel: str | None,
) -> Axes:
    """The axes of a picture with one column per key (and one row per query, if given).

    Made with ``figsize`` (constrained layout) when ``ax`` is None. The keys label the
    x ticks, slanted when one is longer than 3 characters; the queries label the y
    ticks; ``title``, ``xlabel`` and ``ylabel`` are set unless None or empty.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    slant = max(map(len, key_labels)) > 3
    ax.set_xticks(range(len(key_labels)), key_labels, rotation=45 if slant else 0,
                  ha="right" if slant else "center")
    if query_labels is not None:
        ax.set_yticks(range(len(query_labels)), query_labels)
    for text, write in ((xlabel, ax.set_xlabel), (ylabel, ax.set_ylabel), (title, ax.set_title)):
        if text:
            write(text)
    return ax


def _matrix_size(n_q: int, n_k: int) -> tuple[float, float]:
    """Figure size (inches) of an n_q x n_k heatmap drawn on its own."""
    return (1.0 + 0.7 * n_k, 0.8 + 0.6 * n_q)


def _grid_labels(
    a: np.ndarray, name: str, query_labels: Sequence[str] | None,
    key_labels: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    """The row (query) and column (key) labels of the 2-D matrix ``a``, called ``name``."""
    if a.ndim != 2:
        raise ValueError(f"{name} has shape {a.shape}; expected a 2-D (n_q, n_k) matrix")
    n_q, n_k = a.shape
    return _labels(query_labels, n_q, "query_labels"), _labels(key_labels, n_k, "key_labels")


def _cell_texts(ax: Axes, texts: list[list[str]], light: np.ndarray, fontsize: float) -> None:
    """Write ``texts[i][j]`` at the centre of cell (i, j): black on light cells, else white."""
    for i, row in enumerate(texts):
        for j, text in enumerate(row):
            ax.text(j, i, text, ha="center", va="center", fontsize=fontsize,
                    color="black" if light[i, j] else "white")


def attention_heatmap(
    weights: ArrayLike,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = "Attention weights",
    annotate: bool = True,
    fmt: str = "{:.2f}",
    cmap: str = "viridis",
    vmin: float | None = 0.0,
    vmax: float | None = None,
    colorbar: bool = True,
    highlight: Collection[tuple[int, int]] | ArrayLike | None = None,
    xlabel: str | None = "key (attended to)",
    ylabel: str | None = "query (attending)",
) -> Axes:
    """Draw a matrix of attention weights with the queries as rows and the keys as columns.

    Parameters
    ----------
    weights : array_like, shape (n_q, n_k)
        One row per query; typically each row sums to one.
    query_labels, key_labels : sequence of str, optional
        Tokens for the rows (queries) and columns (keys).
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when omitted.
    title : str or None
    annotate : bool, default True
        Write each value in its cell (for small matrices).
    fmt : str
        Format of the annotations.
    cmap, vmin, vmax : colour map and its limits (``vmax`` defaults to the largest weight).
    colorbar : bool, default True
    highlight : collection of (int, int), or array_like of bool, shape (n_q, n_k), optional
        Cells to outline in white: ``(query, key)`` pairs (a list, a set, or an
        ``(m, 2)`` array such as ``np.argwhere(...)``), or a boolean matrix, True at
        the cells outlined. Each outline is a ``Rectangle`` with gid
        ``"highlight[i,j]"``.
    xlabel, ylabel : str or None
        Axis labels; None draws none.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, or the axes of the new figure; its colour bar, if any, is beside it.

    Examples
    --------
    >>> ax = attention_heatmap(np.eye(2), ["a", "b"], ["a", "b"], highlight=[(1, 0)])
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['a', 'b']
    >>> [p.get_gid() for p in ax.patches]
    ['highlight[1,0]']
    >>> plt.close(ax.figure)
    """
    w = np.asarray(weights, dtype=float)
    rows, cols = _grid_labels(w, "weights", query_labels, key_labels)
    n_q, n_k = w.shape
    outlined = [] if highlight is None else cell_positions(highlight, (n_q, n_k), "highlight")
    ax = _matrix_axes(ax, cols, rows, figsize=_matrix_size(n_q, n_k), title=title,
                      xlabel=xlabel, ylabel=ylabel)
    top = float(w.max()) if vmax is None else vmax
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=top, aspect="auto")
    if annotate:
        middle = (vmin if vmin is not None else float(w.min())) + 0.5 * (
            top - (vmin if vmin is not None else float(w.min())))
        _cell_texts(ax, [[fmt.format(x) for x in row] for row in w], w > middle, 9)
    for i, j in outlined:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="white",
                               linewidth=2.5, gid=f"highlight[{i},{j}]"))
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="weight")
    return ax


def weights_bar(
    weights: ArrayLike, labels: Sequence[str] | None = None, *, ax: Axes | None = None,
    title: str | None = None, highlight: int | None = None, ylabel: str = "attention weight",
    annotate: bool = True, fmt: str = "{:.3f}",
) -> Axes:
    """Bar chart of one row of attention weights, one bar per key.

    Parameters
    ----------
    weights : array_like, shape (n_k,)
    labels : sequence of str, optional
        Token of each key.
    ax : matplotlib Axes, optional
    title : str or None
    highlight : int, optional
        Index of a bar to draw in a contrasting colour (e.g. the largest).
    ylabel : str
    annotate : bool, default True
        Write each value above its bar.
    fmt : str

    Returns
    -------
    matplotlib.axes.Axes
        The chart's axes (``ax`` if given), one bar patch per key.

    Examples
    --------
    >>> ax = weights_bar([0.2, 0.8], ["a", "b"], highlight=1)
    >>> len(ax.patches)
    2
    >>> plt.close(ax.figure)
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1:
        raise ValueError(f"weights has shape {w.shape}; expected one row, shape (n_k,)")
    names = _labels(labels, w.shape[0], "labels")
    ax = _matrix_axes(ax, names, None, figsize=(max(4.0, 0.7 * len(names)), 3.2), title=title,
                      xlabel="key (token attended to)", ylabel=ylabel)
    colors = ["tab:blue"] * len(names)
    if highlight is not None:
        colors[highlight] = "tab:orange"
    bars = ax.bar(range(len(names)), w, color=colors)
    if annotate:
        ax.bar_label(bars, labels=[fmt.format(x) for x in w], fontsize=9, padding=2)
        ax.set_ylim(0, max(float(w.max()), 0.0) * 1.15 + 1e-9)
    return ax


def mask_heatmap(
    mask: ArrayLike, query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None, *, ax: Axes | None = None,
    title: str | None = "Mask", form: str = "additive",
) -> Axes:
    """Draw a boolean attention mask: visible cells light, hidden cells dark.

    Parameters
    ----------
    mask : array_like of bool, shape (n_q, n_k)
        True where the query (row) may attend to the key (column).
    query_labels, key_labels : sequence of str, optional
    ax : matplotlib Axes, optional
    title : str or None, default "Mask"
        As in :func:`attention_heatmap`: the tokens of the rows and columns, where to
        draw, the title.
    form : {"additive", "bool"}, default "additive"
        How each cell is labelled: ``"additive"`` writes the number added to
        the score (``0`` visible, ``-inf`` hidden), ``"bool"`` writes
        ``True`` / ``False``.

    Returns
    -------
    matplotlib.axes.Axes
        The mask's axes (``ax`` if given), one text per cell.

    Examples
    --------
    >>> ax = mask_heatmap(np.tri(2, dtype=bool))
    >>> [t.get_text() for t in ax.texts]
    ['0', '−∞', '0', '0']
    >>> plt.close(ax.figure)
    """
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"mask has dtype {m.dtype}; expected a boolean array (True = may attend)")
    if form not in ("additive", "bool"):
        raise ValueError(f"form={form!r}; expected 'additive' or 'bool'")
    rows, cols = _grid_labels(m, "mask", query_labels, key_labels)
    ax = _matrix_axes(ax, cols, rows, figsize=_matrix_size(*m.shape), title=title,
                      xlabel="key (attended to)", ylabel="query (attending)")
    colours = ListedColormap(["#3a3a3a", "#f3e6a8"])  # hidden, visible
    ax.imshow(m.astype(int), cmap=colours, vmin=0, vmax=1, aspect="auto")
    shown = {"additive": ("\u2212\u221e", "0"), "bool": ("False", "True")}[form]
    _cell_texts(ax, [[shown[x] for x in row] for row in m.astype(int)], m, 10)
    return ax
