"""Pictures of attention weights (matplotlib).

Every function takes an optional ``ax`` and returns the axes it drew on, so a
chapter can compose figures. matplotlib is imported here only, not by
``import attention_lib``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from numpy.typing import ArrayLike

__all__ = ["attention_heatmap", "weights_bar"]


def _labels(labels: Sequence[str] | None, n: int, name: str) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [str(s) for s in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels; expected {n}, one per row/column")
    return labels


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

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = attention_heatmap(np.eye(2), ["a", "b"], ["a", "b"])
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['a', 'b']
    >>> plt.close(ax.figure)
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"weights has shape {w.shape}; expected a 2-D (n_q, n_k) matrix")
    n_q, n_k = w.shape
    rows = _labels(query_labels, n_q, "query_labels")
    cols = _labels(key_labels, n_k, "key_labels")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.7 * n_k, 0.8 + 0.6 * n_q), layout="constrained")
    top = float(w.max()) if vmax is None else vmax
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=top, aspect="auto")
    ax.set_xticks(range(n_k), cols, rotation=45 if max(map(len, cols)) > 3 else 0,
                  ha="right" if max(map(len, cols)) > 3 else "center")
    ax.set_yticks(range(n_q), rows)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    if annotate:
        middle = (vmin if vmin is not None else float(w.min())) + 0.5 * (
            top - (vmin if vmin is not None else float(w.min())))
        for i in range(n_q):
            for j in range(n_k):
                ax.text(j, i, fmt.format(w[i, j]), ha="center", va="center", fontsize=9,
                        color="black" if w[i, j] > middle else "white")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="weight")
    return ax


def weights_bar(
    weights: ArrayLike,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    highlight: int | None = None,
    ylabel: str = "attention weight",
    annotate: bool = True,
    fmt: str = "{:.3f}",
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
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(names)), 3.2), layout="constrained")
    colors = ["tab:blue"] * len(names)
    if highlight is not None:
        colors[highlight] = "tab:orange"
    bars = ax.bar(range(len(names)), w, color=colors)
    ax.set_xticks(range(len(names)), names, rotation=45 if max(map(len, names)) > 3 else 0,
                  ha="right" if max(map(len, names)) > 3 else "center")
    ax.set_xlabel("key (token attended to)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        ax.bar_label(bars, labels=[fmt.format(x) for x in w], fontsize=8, padding=2)
        ax.set_ylim(0, max(float(w.max()), 0.0) * 1.15 + 1e-9)
    return ax
