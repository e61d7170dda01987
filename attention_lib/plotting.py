"""Pictures of attention weights (matplotlib).

Every function takes an optional ``ax`` and returns the axes it drew on, so a
chapter can compose figures. matplotlib is imported here only, not by
``import attention_lib``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from numpy.typing import ArrayLike

from ._validation import as_real_array, positive_int
from .saturation import projection_scale_weights, saturation_scores, saturation_stats

__all__ = [
    "BOOK_RC",
    "attention_heatmap",
    "attention_shape_flow",
    "causal_tiles",
    "head_split_flow",
    "kv_cache_step",
    "mask_heatmap",
    "projection_scale_grid",
    "query_path",
    "saturation_grid",
    "use_book_style",
    "weights_bar",
]

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
        ax.bar_label(bars, labels=[fmt.format(x) for x in w], fontsize=9, padding=2)
        ax.set_ylim(0, max(float(w.max()), 0.0) * 1.15 + 1e-9)
    return ax


def mask_heatmap(
    mask: ArrayLike,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = "Mask",
    form: str = "additive",
) -> Axes:
    """Draw a boolean attention mask: visible cells light, hidden cells dark.

    Parameters
    ----------
    mask : array_like of bool, shape (n_q, n_k)
        True where the query (row) may attend to the key (column).
    query_labels, key_labels : sequence of str, optional
        Tokens for the rows (queries) and columns (keys).
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when omitted.
    title : str or None
    form : {"additive", "bool"}, default "additive"
        How each cell is labelled: ``"additive"`` writes the number added to
        the score (``0`` visible, ``-inf`` hidden), ``"bool"`` writes
        ``True`` / ``False``.

    Returns
    -------
    matplotlib.axes.Axes

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
    if m.ndim != 2:
        raise ValueError(f"mask has shape {m.shape}; expected a 2-D (n_q, n_k) matrix")
    if form not in ("additive", "bool"):
        raise ValueError(f"form={form!r}; expected 'additive' or 'bool'")
    n_q, n_k = m.shape
    rows = _labels(query_labels, n_q, "query_labels")
    cols = _labels(key_labels, n_k, "key_labels")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.7 * n_k, 0.8 + 0.6 * n_q), layout="constrained")
    colours = ListedColormap(["#3a3a3a", "#f3e6a8"])  # hidden, visible
    ax.imshow(m.astype(int), cmap=colours, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(n_k), cols, rotation=45 if max(map(len, cols)) > 3 else 0,
                  ha="right" if max(map(len, cols)) > 3 else "center")
    ax.set_yticks(range(n_q), rows)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    shown = {"additive": ("\u2212\u221e", "0"), "bool": ("False", "True")}[form]
    for i in range(n_q):
        for j in range(n_k):
            ax.text(j, i, shown[int(m[i, j])], ha="center", va="center", fontsize=10,
                    color="black" if m[i, j] else "white")
    return ax


def attention_shape_flow(
    n_q: int,
    n_k: int,
    d_k: int,
    d_v: int,
    *,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    highlight: tuple[int, int] | None = (0, 0),
    ax: Axes | None = None,
    title: str | None = "Shapes through attention: read the axes",
) -> Axes:
    r"""Draw the matrices of attention as grids sized by their shapes.

    The top line is :math:`Q K^{\mathsf T}` (the raw scores), the bottom line
    is :math:`A V = Z` with :math:`A = \operatorname{softmax}(Q K^{\mathsf T}
    / \sqrt{d_k})` taken along each row (over the keys). Every matrix is drawn with one unit
    square per entry, rows downwards, so that a row of ``Q`` lines up with the
    same row of ``S``, ``A`` and ``Z``.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys (= values), each in 1..32.
    d_k, d_v : int
        Size of a query/key vector and of a value vector, each in 1..32.
    query_labels : sequence of str, optional
        Token of each query, length ``n_q``; written beside the rows of
        ``Q``, ``A`` and ``Z``.
    key_labels : sequence of str, optional
        Token of each key, length ``n_k``; written above the columns of
        ``K^T`` and beside the rows of ``V``.
    highlight : (int, int) or None, default (0, 0)
        A query ``i`` and a key ``j``: row ``i`` of ``Q``, ``A`` and ``Z``,
        column ``j`` of ``K^T`` and the score ``(Q K^T)[i, j]`` are coloured.
        None colours nothing.
    ax : matplotlib Axes, optional
        Where to draw; a new figure sized to the matrices (about 0.28 inch
        per entry) is made when omitted. The text is sized in points, so a
        much smaller ``ax`` crowds the labels.
    title : str or None

    Returns
    -------
    matplotlib.axes.Axes
        Each matrix is a ``Rectangle`` whose ``gid`` is its name (``"Q"``,
        ``"K^T"``, ``"QK^T"``, ``"A"``, ``"V"``, ``"Z"``), with width = number
        of columns and height = number of rows; highlighted parts have gids
        ``"Q:row"``, ``"K^T:col"``, ``"QK^T:cell"``, ``"A:row"`` and
        ``"Z:row"``.

    Notes
    -----
    The shapes drawn are

    .. math::

        \underbrace{Q}_{n_q \times d_k}\,
        \underbrace{K^{\mathsf T}}_{d_k \times n_k}
        = \underbrace{Q K^{\mathsf T}}_{n_q \times n_k}, \qquad
        \underbrace{A}_{n_q \times n_k}\,
        \underbrace{V}_{n_k \times d_v}
        = \underbrace{Z}_{n_q \times d_v}.

    The first product sums over :math:`d_k` (the axis ``Q`` and ``K`` share)
    and keeps one row per query and one column per key; the second sums over
    the keys and keeps one row per query and one column per value feature.

    Examples
    --------
    >>> ax = attention_shape_flow(3, 5, 4, 2)
    >>> shapes = {p.get_gid(): (p.get_height(), p.get_width()) for p in ax.patches}
    >>> shapes["QK^T"], shapes["Z"]
    ((3, 5), (3, 2))
    >>> plt.close(ax.figure)
    """
    dims = {"n_q": n_q, "n_k": n_k, "d_k": d_k, "d_v": d_v}
    for name, value in dims.items():
        positive_int(value, name)
        if value > 32:
            raise ValueError(
                f"{name}={value}; expected 1 <= {name} <= 32 (one square per entry is drawn)"
            )
    n_q, n_k, d_k, d_v = (int(v) for v in dims.values())
    queries = None if query_labels is None else _labels(query_labels, n_q, "query_labels")
    keys = None if key_labels is None else _labels(key_labels, n_k, "key_labels")
    if highlight is not None:
        try:
            i, j = (int(h) for h in highlight)
        except (TypeError, ValueError):
            raise TypeError(f"highlight={highlight!r}; expected a pair (query, key)") from None
        if not (0 <= i < n_q and 0 <= j < n_k):
            raise ValueError(
                f"highlight={tuple(highlight)!r}; expected 0 <= query < {n_q} and "
                f"0 <= key < {n_k}"
            )

    # Layout in "entry" units; y grows downwards so that row 0 is on top.
    gap = 2.2  # room for an operator sign between two matrices
    small = 10  # font size of tokens and shapes, in points
    char = 0.3  # about one character of that font, in entry units
    side = 0.0 if queries is None else char * max(map(len, queries)) + 0.4
    kside = 0.0 if keys is None else char * max(map(len, keys)) + 0.4
    top1 = 0.0 if keys is None else kside  # key tokens sit above K^T
    x_q = side
    x_kt = x_q + d_k + gap
    x_s = x_kt + n_k + gap
    h1 = max(n_q, d_k)
    top2 = top1 + h1 + 5.8
    x_a = side
    x_v = x_a + n_k + gap + kside
    x_z = x_v + d_v + gap + side
    h2 = max(n_q, n_k)
    width = max(x_s + n_k + (6.5 if highlight is not None else 0.0), x_z + d_v)
    height = top2 + h2 + 3.2

    if ax is None:
        scale = 0.28  # inches per entry
        _, ax = plt.subplots(figsize=(max(4.0, scale * (width + 1)), scale * (height + 1.5)),
                             layout="constrained")
    fills = {"Q": "#fde0c5", "K^T": "#cfe3f3", "QK^T": "#e6dcef", "A": "#e6dcef",
             "V": "#d5ecd4", "Z": "#f2f2f2"}

    def matrix(gid: str, x: float, y: float, rows: int, cols: int, name: str,
               shape: str, label_y: float) -> None:
        ax.add_patch(Rectangle((x, y), cols, rows, gid=gid, facecolor=fills[gid],
                               edgecolor="black", linewidth=1.2))
        for r in range(1, rows):
            ax.plot([x, x + cols], [y + r, y + r], color="0.6", linewidth=0.5)
        for c in range(1, cols):
            ax.plot([x + c, x + c], [y, y + rows], color="0.6", linewidth=0.5)
        ax.text(x + cols / 2, label_y + 0.35, name, ha="center", va="top", fontsize=13)
        ax.text(x + cols / 2, label_y + 1.3, shape, ha="center", va="top", fontsize=small)

    def mark(gid: str, x: float, y: float, w: float, h: float, color: str) -> None:
        ax.add_patch(Rectangle((x, y), w, h, gid=gid, facecolor=color, alpha=0.75,
                               edgecolor=color, linewidth=1.5))

    def sign(x: float, y: float, text: str) -> None:
        ax.text(x, y, text, ha="center", va="center", fontsize=18)

    def row_labels(x: float, y: float, labels: list[str] | None) -> None:
        for r, lab in enumerate(labels or []):
            ax.text(x - 0.2, y + r + 0.5, lab, ha="right", va="center", fontsize=small)

    # Line 1: Q @ K^T (the names sit on one baseline below the tallest matrix)
    base1 = top1 + h1
    matrix("Q", x_q, top1, n_q, d_k, "$Q$", f"$n_q \\times d_k$\n= {n_q} × {d_k}", base1)
    matrix("K^T", x_kt, top1, d_k, n_k, "$K^{\\mathsf{T}}$",
           f"$d_k \\times n_k$\n= {d_k} × {n_k}", base1)
    matrix("QK^T", x_s, top1, n_q, n_k, "$QK^{\\mathsf{T}}$ (scores)",
           f"$n_q \\times n_k$\n= {n_q} × {n_k}", base1)
    sign(x_q + d_k + gap / 2, top1 + min(n_q, d_k) / 2, "@")
    sign(x_kt + n_k + gap / 2, top1 + min(n_q, d_k) / 2, "=")
    row_labels(x_q, top1, queries)
    for c, lab in enumerate(keys or []):
        ax.text(x_kt + c + 0.5, top1 - 0.2, lab, ha="left", va="bottom", fontsize=small,
                rotation=60, rotation_mode="anchor")

    # Line 2: A @ V = Z, with A = softmax(Q K^T / sqrt(d_k)) along each row
    base2 = top2 + h2
    matrix("A", x_a, top2, n_q, n_k, "$A$ (rows sum to 1)",
           f"$n_q \\times n_k$\n= {n_q} × {n_k}", base2)
    matrix("V", x_v, top2, n_k, d_v, "$V$", f"$n_k \\times d_v$\n= {n_k} × {d_v}", base2)
    matrix("Z", x_z, top2, n_q, d_v, "$Z = AV$", f"$n_q \\times d_v$\n= {n_q} × {d_v}",
           base2)
    # The signs sit in the free part of each gap, left of the next row labels.
    sign(x_a + n_k + gap / 2, top2 + min(n_q, n_k) / 2, "@")
    sign(x_v + d_v + gap / 2, top2 + min(n_q, n_k) / 2, "=")
    row_labels(x_a, top2, queries)
    row_labels(x_v, top2, keys)
    row_labels(x_z, top2, queries)
    # An elbow arrow from the scores down to A: "divide by sqrt(d_k), softmax along each row".
    x_from, x_to, y_turn = x_s + n_k / 2, x_a + n_k / 2, top2 - 1.0
    ax.plot([x_from, x_from, x_to], [base1 + 2.7, y_turn, y_turn], color="0.3",
            linewidth=1.0)
    ax.annotate("", xy=(x_to, top2 - 0.1), xytext=(x_to, y_turn),
                arrowprops={"arrowstyle": "-|>", "color": "0.3", "shrinkA": 0, "shrinkB": 0})
    ax.text((x_from + x_to) / 2, y_turn - 0.2,
            "divide by $\\sqrt{d_k}$, then softmax\nalong each row (over the keys)",
            ha="center", va="bottom", fontsize=small, color="0.2")

    if highlight is not None:
        orange, blue, purple = "tab:orange", "tab:blue", "tab:purple"
        mark("Q:row", x_q, top1 + i, d_k, 1, orange)
        mark("K^T:col", x_kt + j, top1, 1, d_k, blue)
        mark("QK^T:cell", x_s + j, top1 + i, 1, 1, purple)
        mark("A:row", x_a, top2 + i, n_k, 1, orange)
        mark("Z:row", x_z, top2 + i, d_v, 1, orange)
        y_row = top2 + i + 0.5
        ax.annotate("", xy=(x_a + n_k - 0.1, y_row), xytext=(x_a + 0.1, y_row),
                    arrowprops={"arrowstyle": "<->", "color": "black", "linewidth": 1.2,
                                "shrinkA": 0, "shrinkB": 0})
        ax.text(x_s + n_k + 0.4, top1 + i + 0.5,
                f"$q_{{{i}}} \\cdot k_{{{j}}}$:\n{d_k} product{'s' * (d_k != 1)}, summed",
                ha="left", va="center", fontsize=small, color=purple)

    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(height, -1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=13)
    return ax


# --------------------------------------------------------------------------------------
# Static pictures of the explorers (chapters 3 and 4)
# --------------------------------------------------------------------------------------

_DK_CHOICES = tuple(2**i for i in range(11))  # 1, 2, 4, ..., 1024


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

    The static picture of :func:`attention_lib.widgets.projection_scale_explorer`: one row of
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
    d_k: int = 64,
    n_keys: int = 8,
    seed: int = 0,
) -> Figure:
    r"""Small multiples of :func:`attention_lib.widgets.saturation_explorer`'s key positions.

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


# --------------------------------------------------------------------------------------
# Picture-first diagrams (chapters 3, 6, 9 and 10)
# --------------------------------------------------------------------------------------

# Okabe-Ito colours (distinguishable with every common colour-vision deficiency),
# and light tints of them for filled boxes.
_OKABE = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "blue": "#0072B2",
          "vermillion": "#D55E00", "purple": "#CC79A7", "yellow": "#F0E442"}
_TINT = {"orange": "#F8DDA6", "sky": "#CBE6F6", "green": "#B3E0D1", "blue": "#B3D0E6",
         "vermillion": "#F2C9A9", "purple": "#EFD4E3", "grey": "#E8E8E8"}
_MIN_PT = 9  # the smallest text any diagram writes, in points


def _canvas(ax: Axes | None, width: float, height: float) -> Axes:
    """An axes whose data units are inches of a ``width`` x ``height`` drawing (y up)."""
    if ax is None:
        fig = plt.figure(figsize=(width, height))
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0.0, width)
    ax.set_ylim(0.0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _cells(ax: Axes, x: float, y_top: float, values: np.ndarray | None, *, rows: int,
           cols: int, cell: float | tuple[float, float], fill: str, gid: str,
           fmt: str = "{:.2f}", size: float = _MIN_PT, edge: str = "0.25",
           grid: bool = True) -> Rectangle:
    """A rows x cols grid of cells (top-left corner at ``(x, y_top)``), optionally with numbers.

    ``cell`` is the side of a square cell or its (width, height). The outline is one
    ``Rectangle`` with ``gid``, ``cols`` cells wide and ``rows`` cells high.
    """
    cw, ch = (cell, cell) if isinstance(cell, int | float) else cell
    frame = Rectangle((x, y_top - rows * ch), cols * cw, rows * ch, facecolor=fill,
                      edgecolor=edge, linewidth=1.0, gid=gid)
    ax.add_patch(frame)
    for r in range(1, rows if grid else 0):
        ax.plot([x, x + cols * cw], [y_top - r * ch] * 2, color="0.55", linewidth=0.5)
    for c in range(1, cols if grid else 0):
        ax.plot([x + c * cw] * 2, [y_top, y_top - rows * ch], color="0.55", linewidth=0.5)
    if values is not None:
        vals = np.asarray(values, dtype=float).reshape(rows, cols)
        for r in range(rows):
            for c in range(cols):
                ax.text(x + (c + 0.5) * cw, y_top - (r + 0.5) * ch, fmt.format(vals[r, c]),
                        ha="center", va="center", fontsize=size, gid=f"{gid}[{r},{c}]")
    return frame


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], *,
           color: str = "0.3", width: float = 1.0, style: str = "-|>") -> None:
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": style, "color": color, "linewidth": width,
                            "shrinkA": 0, "shrinkB": 0, "mutation_scale": 11})


def query_path(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    query: str | int = 0,
    tokens: Sequence[str] | None = None,
    *,
    digits: int = 3,
    vector_digits: int = 2,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    r"""Draw the path of one query through attention, left to right, with its numbers.

    From left to right: the query vector :math:`q_i`; its score against each
    key, :math:`s_j = q_i \cdot k_j / \sqrt{d_k}`; the softmax that turns the
    scores into weights :math:`p_j` (drawn as bars); the value vectors
    :math:`v_j` each multiplied by its weight; and their sum, the output row
    :math:`z_i = \sum_j p_j v_j`. The weights and the output are those of
    :func:`attention_lib.scaled_dot_product_attention` on ``q``, ``k``, ``v``.

    Parameters
    ----------
    q : array_like, shape (n_q, d_k)
        Queries (for example from :func:`attention_lib.project_qkv`).
    k : array_like, shape (n_k, d_k)
        Keys, at most 12.
    v : array_like, shape (n_k, d_v)
        Values, ``d_v`` at most 6.
    query : str or int, default 0
        The query drawn: a token of ``tokens`` or a row index of ``q``.
    tokens : sequence of str, optional
        Token of each key (and of each query when ``n_q == n_k``); defaults
        to the positions ``0, 1, ...``.
    digits : int, default 3
        Decimals of the scores, weights and output.
    vector_digits : int, default 2
        Decimals of the entries of the query and value vectors.
    ax : matplotlib Axes, optional
        Where to draw; a new figure (7 inches wide) is made when omitted. Its
        data units are inches, so a smaller ``ax`` crowds the numbers.
    title : str or None, optional
        Defaults to a sentence naming the query; "" draws none.

    Returns
    -------
    matplotlib.axes.Axes
        The printed numbers are ``Text`` artists with gids ``"score[j]"``,
        ``"weight[j]"`` and ``"output[c]"`` (and ``"q[c,0]"``, ``"v[j][0,c]"``
        inside the vectors); the weight bars are ``Rectangle`` patches with gids
        ``"bar[j]"`` whose widths are proportional to the weights.

    Examples
    --------
    >>> from attention_lib import examples, project_qkv
    >>> ex = examples.cat_sat_on()
    >>> q, k, v = project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    >>> ax = query_path(q, k, v, "sat", ex.tokens)
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "weight[2]"]
    ['0.255']
    >>> plt.close(ax.figure)
    """
    from .attention import scaled_dot_product_attention

    qa = as_real_array(q, "q", min_ndim=2)
    ka = as_real_array(k, "k", min_ndim=2)
    va = as_real_array(v, "v", min_ndim=2)
    for name, a in (("q", qa), ("k", ka), ("v", va)):
        if a.ndim != 2:
            raise ValueError(f"{name} has shape {a.shape}; expected a 2-D matrix (rows, features)")
    n_q, d_k = qa.shape
    n_k, d_v = va.shape
    if ka.shape != (n_k, d_k):
        raise ValueError(f"k has shape {ka.shape}; expected ({n_k}, {d_k}): one key per value "
                         f"and d_k = {d_k} as q")
    if n_k > 12 or d_k > 6 or d_v > 6:
        raise ValueError(f"got n_k={n_k}, d_k={d_k}, d_v={d_v}; expected n_k <= 12 and "
                         "d_k, d_v <= 6 (every number is printed)")
    positive_int(digits, "digits", minimum=0)
    positive_int(vector_digits, "vector_digits", minimum=0)
    names = _labels(tokens, n_k, "tokens")
    if isinstance(query, str):
        if n_q != n_k:
            raise ValueError(f"query={query!r} is a token, but q has {n_q} rows and k {n_k}; "
                             "pass the row index")
        i = _token_index(names, query)
    else:
        i = _token_index([str(r) for r in range(n_q)], query)
    out, weights = scaled_dot_product_attention(qa, ka, va)
    w = weights[i]
    s = (ka @ qa[i]) / np.sqrt(d_k)  # the row of scaled scores
    z = out[i]
    qname = names[i] if n_q == n_k else str(i)
    f, fv = f"{{:.{digits}f}}", f"{{:.{vector_digits}f}}"

    cell = 0.36 if max(d_k, d_v) <= 3 else 0.3  # one vector entry (inches)
    row_h = 0.42
    top_pad, bottom_pad = (0.95 if title == "" else 1.2), 0.25
    body = max(n_k * row_h, d_k * cell + 0.1)
    height = top_pad + body + bottom_pad
    width = 7.0
    ax = _canvas(ax, width, height)
    y_top = height - top_pad - (body - n_k * row_h) / 2  # top of the first key row
    mid = y_top - n_k * row_h / 2
    row_y = [y_top - (j + 0.5) * row_h for j in range(n_k)]
    head = height - top_pad + 0.42  # column headings

    # 1. the query vector, a column
    x_q = 0.15
    _cells(ax, x_q, mid + d_k * cell / 2, qa[i], rows=d_k, cols=1, cell=cell,
           fill=_TINT["orange"], gid="q", fmt=fv)
    ax.text(0.1, head, f"query $q$\nof {qname!r}", ha="left", va="center", fontsize=10)
    # 2. one score per key
    x_key = x_q + cell + 0.5
    x_s = x_key + 1.0  # right edge of the scores
    for j in range(n_k):
        _arrow(ax, (x_q + cell + 0.05, mid), (x_key - 0.05, row_y[j]), width=0.8)
        ax.text(x_key, row_y[j], names[j], ha="left", va="center", fontsize=10,
                fontweight="bold" if j == i else "normal")
        ax.text(x_s, row_y[j], f.format(s[j]), ha="right", va="center", fontsize=10,
                gid=f"score[{j}]")
    ax.text(x_key + 0.55, head, "score $s_j$\n$q \\cdot k_j / \\sqrt{d_k}$", ha="center",
            va="center", fontsize=10)
    # 3. softmax: a bracket, then one bar per key with its weight
    x_br = x_s + 0.08
    ax.plot([x_br, x_br + 0.08, x_br + 0.08, x_br],
            [row_y[0] + 0.15, row_y[0] + 0.15, row_y[-1] - 0.15, row_y[-1] - 0.15],
            color="0.3", linewidth=1.0)
    _arrow(ax, (x_br + 0.08, mid), (x_br + 0.42, mid), width=1.2)
    ax.text(x_br + 0.25, mid - 0.12, "softmax", ha="center", va="top", fontsize=9,
            rotation=90, color="0.2")
    x_w = x_br + 0.5
    bar_max = 0.7  # the length of a weight of 1: a light track behind every bar
    for j in range(n_k):
        ax.add_patch(Rectangle((x_w, row_y[j] - 0.13), bar_max, 0.26,
                               facecolor=_TINT["grey"], edgecolor="none"))
        ax.add_patch(Rectangle((x_w, row_y[j] - 0.13), bar_max * w[j], 0.26,
                               facecolor=_OKABE["blue"], edgecolor="none", gid=f"bar[{j}]"))
        ax.text(x_w + bar_max + 0.06, row_y[j], f.format(w[j]), ha="left",
                va="center", fontsize=10, gid=f"weight[{j}]")
    ax.text(x_w + 0.55, head, "weight $p_j$\n(sum to 1)", ha="center", va="center",
            fontsize=10)
    # 4. the values, each times its weight
    x_v = x_w + bar_max + 0.06 + 0.075 * (digits + 2) + 0.3
    for j in range(n_k):
        ax.text(x_v - 0.06, row_y[j], "×", ha="right", va="center", fontsize=11)
        _cells(ax, x_v, row_y[j] + cell / 2, va[j], rows=1, cols=d_v, cell=cell,
               fill=_TINT["green"], gid=f"v[{j}]", fmt=fv)
    ax.text(x_v + d_v * cell / 2, head, "value $v_j$", ha="center", va="center", fontsize=10)
    # 5. the sum: the output row
    x_sum = x_v + d_v * cell + 0.08
    ax.plot([x_sum, x_sum + 0.08, x_sum + 0.08, x_sum],
            [row_y[0] + 0.15, row_y[0] + 0.15, row_y[-1] - 0.15, row_y[-1] - 0.15],
            color="0.3", linewidth=1.0)
    x_z = x_sum + 0.42
    _arrow(ax, (x_sum + 0.08, mid), (x_z - 0.04, mid), width=1.2)
    ax.text(x_sum + 0.23, mid - 0.3, "$\\Sigma$", ha="center", va="top", fontsize=12)
    zcell = max(cell, 0.075 * (digits + 2) + 0.05)
    _cells(ax, x_z, mid + zcell / 2, z, rows=1, cols=d_v, cell=zcell, fill=_TINT["orange"],
           gid="output", fmt=f, edge="black")
    for c, t in enumerate([t for t in ax.texts if t.get_gid() and
                           t.get_gid().startswith("output[")]):
        t.set_gid(f"output[{c}]")
    ax.text(x_z + d_v * zcell, head, f"output $z$ of {qname!r}\n$= \\Sigma_j\\, p_j v_j$",
            ha="right", va="center", fontsize=10)
    used = x_z + d_v * zcell + 0.1
    if used > width:
        ax.set_xlim(0.0, used)
    if title is None:
        title = f"The path of one query, {qname!r}: scores, softmax, weighted sum of values"
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax


def _sizes(values: dict[str, Any], limits: dict[str, int]) -> dict[str, int]:
    """Positive ints, each at most its limit (one square per entry is drawn)."""
    out = {}
    for name, value in values.items():
        out[name] = positive_int(value, name)
        if out[name] > limits[name]:
            raise ValueError(f"{name}={value}; expected 1 <= {name} <= {limits[name]} "
                             "(one square per entry is drawn)")
    return out


_HEADS = ("orange", "sky", "green", "purple")  # one colour per head


def head_split_flow(
    n: int,
    d_model: int,
    num_heads: int,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    r"""Draw multi-head attention as shapes: split into heads, attend, concatenate, project.

    From left to right: :math:`X` (:math:`n \times d_{\text{model}}`);
    :math:`Q = X W_Q`, whose columns are cut into ``num_heads`` blocks of
    :math:`d_k = d_{\text{model}} / h` (:math:`K` and :math:`V` are cut the
    same way); one attention per head giving :math:`Z^{(h)}`
    (:math:`n \times d_k`); the concatenation of the :math:`Z^{(h)}`
    (:math:`n \times d_{\text{model}}`); and its product with :math:`W_O`.
    One square per entry, in one colour per head.

    Parameters
    ----------
    n : int
        Number of tokens, 1..12.
    d_model : int
        Width of a token's vector, 1..16, a multiple of ``num_heads``.
    num_heads : int
        Number of heads ``h``, 1..4.
    ax : matplotlib Axes, optional
        Where to draw; a new figure (7 inches wide) is made when omitted.
    title : str or None, optional
        Defaults to a sentence with the sizes; "" draws none.

    Returns
    -------
    matplotlib.axes.Axes
        Every matrix is a ``Rectangle`` whose gid is its name (``"X"``, ``"Q"``,
        ``"Z_1"``, ..., ``"concat"``, ``"output"``) and whose width and height are
        its numbers of columns and rows times the same entry size; the head
        blocks of ``Q`` and of the concatenation have gids ``"Q:head1"``, ...,
        ``"concat:head1"``, ....

    Examples
    --------
    >>> ax = head_split_flow(4, 8, 2)
    >>> sorted(p.get_gid() for p in ax.patches if p.get_gid() in ("Z_1", "Z_2"))
    ['Z_1', 'Z_2']
    >>> plt.close(ax.figure)
    """
    dims = _sizes({"n": n, "d_model": d_model, "num_heads": num_heads},
                  {"n": 12, "d_model": 16, "num_heads": 4})
    n, d_model, h = dims["n"], dims["d_model"], dims["num_heads"]
    if d_model % h:
        raise ValueError(f"d_model={d_model} is not a multiple of num_heads={h}; expected "
                         "d_model = num_heads * d_k")
    d_k = d_model // h
    e = min(0.085, 0.72 / d_model, 0.6 / n)  # inches per entry
    wide = d_model * e
    tall = n * e
    row_h = max(tall, 0.3) + 0.62  # one head per row on the right
    top_pad = 0.75 if title != "" else 0.35
    height = top_pad + max(h * row_h, tall + 1.3) + 0.1
    ax = _canvas(ax, 7.0, height)
    mid = height - top_pad - max(h * row_h, tall + 1.3) / 2 + 0.1
    head_y = [height - top_pad - (r + 0.5) * row_h + 0.2 for r in range(h)]

    def shape(x: float, y: float, text: str) -> None:
        ax.text(x, y, text, ha="center", va="top", fontsize=9, color="0.15")

    def blocks(gid: str, x: float, y_mid: float) -> None:
        for b in range(h):
            ax.add_patch(Rectangle((x + b * d_k * e, y_mid - tall / 2), d_k * e, tall,
                                   facecolor=_TINT[_HEADS[b]], edgecolor="none",
                                   gid=f"{gid}:head{b + 1}"))
        _cells(ax, x, y_mid + tall / 2, None, rows=n, cols=d_model, cell=e, fill="none",
               gid=gid)
        for b in range(1, h):
            ax.plot([x + b * d_k * e] * 2, [y_mid - tall / 2, y_mid + tall / 2],
                    color="black", linewidth=1.6)

    x_x = 0.1
    _cells(ax, x_x, mid + tall / 2, None, rows=n, cols=d_model, cell=e, fill=_TINT["grey"],
           gid="X")
    ax.text(x_x + wide / 2, mid + tall / 2 + 0.1, "$X$", ha="center", va="bottom", fontsize=12)
    shape(x_x + wide / 2, mid - tall / 2 - 0.08, f"$n \\times d_{{model}}$\n= {n} × {d_model}")

    x_q = x_x + wide + 0.55
    _arrow(ax, (x_x + wide + 0.08, mid), (x_q - 0.08, mid))
    ax.text((x_x + wide + x_q) / 2, mid + 0.06, "$\\cdot W_Q$", ha="center", va="bottom",
            fontsize=10)
    blocks("Q", x_q, mid)
    ax.text(x_q + wide / 2, mid + tall / 2 + 0.1, "$Q = XW_Q$", ha="center", va="bottom",
            fontsize=12)
    shape(x_q + wide / 2, mid - tall / 2 - 0.08,
          f"{n} × {d_model}, in\n{h} block{'s' * (h != 1)} of\n$d_k$ = {d_k}\n($K$, $V$ alike)")

    x_att = x_q + wide + 0.5
    att_w = 1.05
    x_z = x_att + att_w + 0.3
    x_c = x_z + d_k * e + 0.65
    for b in range(h):
        y = head_y[b]
        colour = _OKABE[_HEADS[b]]
        _arrow(ax, (x_q + wide + 0.08, mid + tall / 2 - (b + 0.5) * tall / h),
               (x_att - 0.05, y), color=colour, width=1.3)
        ax.add_patch(Rectangle((x_att, y - 0.24), att_w, 0.48, facecolor="white",
                               edgecolor=colour, linewidth=1.5, gid=f"head{b + 1}"))
        sup = f"^{{({b + 1})}}"  # head b + 1, as chapter 6 writes it: Q^(1), ...
        ax.text(x_att + att_w / 2, y, f"attention\n$Q{sup}, K{sup}, V{sup}$",
                ha="center", va="center", fontsize=9)
        ax.text(x_att + att_w / 2, y + 0.26, f"head {b + 1}", ha="center", va="bottom",
                fontsize=9, color="0.2")
        _arrow(ax, (x_att + att_w + 0.03, y), (x_z - 0.05, y), color=colour, width=1.3)
        ax.add_patch(Rectangle((x_z, y - tall / 2), d_k * e, tall, facecolor=_TINT[_HEADS[b]],
                               edgecolor="none"))
        _cells(ax, x_z, y + tall / 2, None, rows=n, cols=d_k, cell=e, fill="none",
               gid=f"Z_{b + 1}")
        ax.text(x_z + d_k * e + 0.06, y + tall / 2, f"$Z^{{({b + 1})}}$", ha="left", va="top",
                fontsize=11)
        shape(x_z + d_k * e / 2, y - tall / 2 - 0.05, f"{n} × {d_k}")
        _arrow(ax, (x_z + d_k * e + 0.3, y), (x_c + (b + 0.5) * d_k * e,
               mid + tall / 2 + 0.03 if y > mid else mid - tall / 2 - 0.03),
               color=colour, width=1.3)
    blocks("concat", x_c, mid)
    ax.text(x_c + wide / 2, mid + tall / 2 + 0.32, "concat", ha="center", va="bottom",
            fontsize=11)
    shape(x_c + wide / 2, mid - tall / 2 - 0.35, f"{n} × {d_model}")

    x_o = x_c + wide + 0.6
    _arrow(ax, (x_c + wide + 0.08, mid), (x_o - 0.08, mid))
    ax.text((x_c + wide + x_o) / 2, mid + 0.06, "$\\cdot W_O$", ha="center", va="bottom",
            fontsize=10)
    shape((x_c + wide + x_o) / 2, mid - 0.06, f"{d_model} × {d_model}")
    _cells(ax, x_o, mid + tall / 2, None, rows=n, cols=d_model, cell=e, fill=_TINT["grey"],
           gid="output")
    ax.text(x_o + wide / 2, mid + tall / 2 + 0.1, "output", ha="center", va="bottom",
            fontsize=11)
    shape(x_o + wide / 2, mid - tall / 2 - 0.08, f"{n} × {d_model}")
    if x_o + wide + 0.1 > 7.0:
        ax.set_xlim(0.0, x_o + wide + 0.1)
    if title is None:
        title = (f"{h} head{'s' * (h != 1)}: $d_{{model}}$ = {d_model} is cut into "
                 f"{h} × $d_k$ = {h} × {d_k} columns, then put back")
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax


def kv_cache_step(
    t: int,
    d_k: int,
    d_v: int | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    r"""Draw one step of causal generation with a key/value cache, with its shapes.

    Positions :math:`1, \dots, t-1` are in the cache: their keys and values were
    computed at earlier steps and are only read. The new token at position
    :math:`t` brings a query :math:`q_t` and a key and value, appended as row
    :math:`t` of :math:`K` and :math:`V`. The new query attends to keys
    :math:`1, \dots, t` only: :math:`t` scores, :math:`t` weights, one output row
    :math:`z_t`. Position :math:`t + 1` does not exist yet (dashed).

    Parameters
    ----------
    t : int
        Position of the new token, 1..12 (``t - 1`` positions are cached).
    d_k : int
        Size of a query/key vector, 1..64 (above 16 the columns are not ruled).
    d_v : int, optional
        Size of a value vector, 1..64; defaults to ``d_k``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure (7 inches wide) is made when omitted.
    title : str or None, optional
        Defaults to a sentence with ``t``; "" draws none.

    Returns
    -------
    matplotlib.axes.Axes
        The matrices are ``Rectangle`` patches with gids ``"K:cached"`` and
        ``"V:cached"`` (``t - 1`` rows; absent when ``t = 1``), ``"K:new"`` and
        ``"V:new"`` (one row), ``"q"``, ``"scores"``, ``"weights"`` (one row of
        ``t``) and ``"z"``; heights and widths are rows and columns times the
        same entry size.

    Examples
    --------
    >>> ax = kv_cache_step(5, 4)
    >>> [p.get_gid() for p in ax.patches if p.get_gid() == "weights"]
    ['weights']
    >>> plt.close(ax.figure)
    """
    dims = _sizes({"t": t, "d_k": d_k, "d_v": d_k if d_v is None else d_v},
                  {"t": 12, "d_k": 64, "d_v": 64})
    t, d_k, d_v = dims["t"], dims["d_k"], dims["d_v"]
    eh = min(0.2, 2.2 / (t + 1))  # height of a row (inches)
    ew = min(eh, 1.1 / max(d_k, d_v))  # width of a column
    grid = ew >= 0.05  # rule the columns only where they are wide enough to see
    top_pad = 0.75 if title != "" else 0.4
    block = (t + 1) * eh  # K (or V) with the dashed future row
    height = top_pad + 2 * block + 2.3
    ax = _canvas(ax, 7.0, height)
    cached, new, future = _TINT["grey"], _OKABE["orange"], "none"

    def shape(x: float, y: float, text: str, ha: str = "center") -> None:
        ax.text(x, y, text, ha=ha, va="top", fontsize=9, color="0.15")

    def grow(name: str, x: float, y_top: float, cols: int) -> float:
        """K or V: cached rows, the new row, a dashed future row; returns its bottom."""
        if t > 1:
            _cells(ax, x, y_top, None, rows=t - 1, cols=cols, cell=(ew, eh), fill=cached,
                   gid=f"{name}:cached", grid=grid)
        _cells(ax, x, y_top - (t - 1) * eh, None, rows=1, cols=cols, cell=(ew, eh), fill=new,
               gid=f"{name}:new", edge="black", grid=grid)
        name = f"${name}$"
        ax.add_patch(Rectangle((x, y_top - (t + 1) * eh), cols * ew, eh, facecolor=future,
                               edgecolor="0.5", linestyle="--", linewidth=0.9))
        for r in range(t + 1):
            label = str(r + 1) if r < t - 1 or t <= 2 else ("$t$" if r == t - 1 else "")
            if r == t - 1:
                label = f"{t} (new)"
            elif r == t:
                label = f"{t + 1}: not yet"
            elif t > 4 and 0 < r < t - 2:
                label = "⋮" if r == (t - 1) // 2 else ""
            ax.text(x - 0.06, y_top - (r + 0.5) * eh, label, ha="right", va="center",
                    fontsize=9, color="0.5" if r == t else "black")
        ax.text(x + cols * ew / 2, y_top + 0.06, name, ha="center", va="bottom", fontsize=12)
        return y_top - (t + 1) * eh

    # Left: the new token's three vectors; k_t and v_t level with the rows they become.
    y_q = height - top_pad - 0.3
    y_k = y_q - 0.75  # top of K
    x_vec = 0.15
    x_cache = 2.95
    bottom_k = grow("K", x_cache, y_k, d_k)
    shape(x_cache + d_k * ew / 2, bottom_k - 0.05, f"$t \\times d_k$ = {t} × {d_k}")
    y_v = bottom_k - 0.75
    bottom_v = grow("V", x_cache, y_v, d_v)
    shape(x_cache + d_v * ew / 2, bottom_v - 0.05, f"$t \\times d_v$ = {t} × {d_v}")
    rows_y = {"q": y_q, "k": y_k - (t - 1) * eh, "v": y_v - (t - 1) * eh}
    ax.text(x_vec, y_q + 0.12, f"new token, position $t$ = {t}", ha="left", va="bottom",
            fontsize=10)
    for name, cols, colour in (("q", d_k, _TINT["blue"]), ("k", d_k, new), ("v", d_v, new)):
        y = rows_y[name]
        _cells(ax, x_vec + 0.35, y, None, rows=1, cols=cols, cell=(ew, eh), fill=colour,
               gid=name if name == "q" else f"{name}_t", edge="black", grid=grid)
        ax.text(x_vec + 0.3, y - eh / 2, f"${name}_t$", ha="right", va="center", fontsize=11)
        shape(x_vec + 0.35 + cols * ew / 2, y - eh - 0.05, f"1 × {d_k if name != 'v' else d_v}")
        if name != "q":
            _arrow(ax, (x_vec + 0.35 + cols * ew + 0.05, y - eh / 2), (x_cache - 0.8, y - eh / 2),
                   color=new, width=1.6)
            ax.text((x_vec + 0.35 + cols * ew + x_cache - 0.8) / 2, y - eh / 2 + 0.05,
                    "append", ha="center", va="bottom", fontsize=9, color="0.2")
    if t > 1:
        ax.text(x_cache + max(d_k, d_v) * ew + 0.1, y_k - (t - 1) * eh / 2,
                f"cached:\nrows 1..{t - 1}", ha="left", va="center", fontsize=9, color="0.35")

    # Right: one row of t scores, t weights, one output row.
    x_r = x_cache + max(d_k, d_v) * ew + 1.0
    re_ = min(eh, (7.0 - x_r - 0.2) / t)
    y_s = y_q
    _cells(ax, x_r, y_s, None, rows=1, cols=t, cell=re_, fill=_TINT["blue"], gid="scores")
    ax.text(x_r, y_s + 0.06, "scores $q_t K^{\\top} / \\sqrt{d_k}$", ha="left",
            va="bottom", fontsize=10)
    shape(x_r, y_s - re_ - 0.05, f"1 × $t$ = 1 × {t}: keys 1..{t}", ha="left")
    _arrow(ax, (x_vec + 0.35 + d_k * ew + 0.05, y_q - eh / 2), (x_r - 0.05, y_s - re_ / 2),
           color=_OKABE["blue"], width=1.2)
    _arrow(ax, (x_cache + d_k * ew + 0.05, y_k - 0.1), (x_r - 0.05, y_s - re_ / 2),
           width=1.0, color="0.45")
    y_w = y_s - re_ - 0.85
    _arrow(ax, (x_r + t * re_ / 2, y_s - re_ - 0.3), (x_r + t * re_ / 2, y_w + 0.27), width=1.2)
    ax.text(x_r + t * re_ / 2 + 0.08, y_s - re_ - 0.42, "softmax", ha="left", va="center",
            fontsize=9, color="0.2")
    _cells(ax, x_r, y_w, None, rows=1, cols=t, cell=re_, fill=_TINT["blue"], gid="weights")
    ax.text(x_r, y_w + 0.06, "weights", ha="left", va="bottom", fontsize=10)
    shape(x_r, y_w - re_ - 0.05, f"1 × {t}, sum to 1", ha="left")
    y_z = y_v - (t - 1) * eh
    _cells(ax, x_r, y_z, None, rows=1, cols=d_v, cell=(ew, eh), fill=_TINT["blue"], gid="z",
           edge="black", grid=grid)
    ax.text(x_r, y_z + 0.06, "output $z_t$ = weights $\\cdot V$", ha="left", va="bottom",
            fontsize=10)
    shape(x_r, y_z - eh - 0.05, f"1 × $d_v$ = 1 × {d_v}", ha="left")
    _arrow(ax, (x_r + t * re_ / 2, y_w - re_ - 0.3), (x_r + t * re_ / 2, y_z + 0.3), width=1.2)
    _arrow(ax, (x_cache + d_v * ew + 0.05, y_v - t * eh / 2), (x_r - 0.05, y_z - eh / 2),
           width=1.0, color="0.45")
    if title is None:
        title = (f"Step $t$ = {t}: one new key and value are appended; "
                 f"the new query reads all {t} keys")
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax


def _tile_kinds(n: int, b_q: int, b_k: int) -> np.ndarray:
    """(T_q, T_k) array of "full", "diagonal" or "skipped", from the blocks of the causal mask."""
    from .attention import causal_mask

    visible = causal_mask(n)
    kinds = np.empty((-(-n // b_q), -(-n // b_k)), dtype=object)
    for a, i0 in enumerate(range(0, n, b_q)):
        for b, j0 in enumerate(range(0, n, b_k)):
            tile = visible[i0:i0 + b_q, j0:j0 + b_k]
            kinds[a, b] = "full" if tile.all() else "diagonal" if tile.any() else "skipped"
    return kinds


def causal_tiles(
    scores: ArrayLike,
    block_size: int | tuple[int, int],
    *,
    query_block: int = -1,
    digits: int = 2,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    r"""Draw the tiles of a causal online softmax and one query block's running state.

    Left: the :math:`n \times n` matrix of scores cut into :math:`b_q \times b_k`
    tiles and classified with the blocks of :func:`attention_lib.causal_mask`:
    tiles computed in full, diagonal tiles (computed, then their future
    entries set to :math:`-\infty`) and skipped tiles (never computed). The
    tiles of one query block carry the order in which it visits its key blocks,
    left to right. Right, level with that block's rows: the running maximum
    :math:`m` and running sum :math:`\ell` of each row after each tile, as
    :func:`attention_lib.online_softmax_row` computes them from ``scores``; a
    bold :math:`m` has risen at that tile, so the earlier sum was rescaled by
    :math:`e^{m_{\text{old}} - m_{\text{new}}}`.

    Parameters
    ----------
    scores : array_like, shape (n, n)
        Scaled scores :math:`QK^{\mathsf T}/\sqrt{d_k}` (finite), ``n`` in 1..24.
    block_size : int or (int, int)
        ``b`` for square tiles, or ``(b_q, b_k)``.
    query_block : int, default -1
        The query block whose visits and state are shown (Python indexing, so
        -1 is the last); it may visit at most 4 key blocks.
    digits : int, default 2
        Decimals of ``m`` and ``l``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure (7 inches wide) is made when omitted.
    title : str or None, optional
        Defaults to a sentence with the sizes; "" draws none.

    Returns
    -------
    matplotlib.axes.Axes
        One ``Rectangle`` per tile with gid ``"tile:full"``, ``"tile:diagonal"``
        or ``"tile:skipped"``; the visit numbers are ``Text`` artists with gids
        ``"visit[s]"``; the state tables' numbers have gids ``"m[r,s]"`` and
        ``"l[r,s]"`` (row ``r`` of the block, after visit ``s``, from 0).

    Examples
    --------
    >>> ax = causal_tiles(np.zeros((8, 8)), 4)
    >>> sorted(p.get_gid() for p in ax.patches if str(p.get_gid()).startswith("tile:"))
    ['tile:diagonal', 'tile:diagonal', 'tile:full', 'tile:skipped']
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "l[3,1]"]   # 8 scores of 0
    ['8.00']
    >>> plt.close(ax.figure)
    """
    from .tiled import online_softmax_row

    s = as_real_array(scores, "scores", min_ndim=2)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"scores has shape {s.shape}; expected a square (n, n) matrix")
    n = s.shape[0]
    if n > 24:
        raise ValueError(f"scores has n={n}; expected n <= 24 (one square per score is drawn)")
    if not np.isfinite(s).all():
        raise ValueError("scores has NaN or infinite entries; expected finite scores "
                         "(the causal mask is applied here)")
    if isinstance(block_size, tuple | list):
        if len(block_size) != 2:
            raise ValueError(f"block_size={block_size!r}; expected b or (b_q, b_k)")
        b_q, b_k = (positive_int(b, "block_size") for b in block_size)
    else:
        b_q = b_k = positive_int(block_size, "block_size")
    positive_int(digits, "digits", minimum=0)
    kinds = _tile_kinds(n, b_q, b_k)
    t_q, t_k = kinds.shape
    if isinstance(query_block, bool) or not isinstance(query_block, int | np.integer):
        raise TypeError(f"query_block={query_block!r}; expected an int")
    if not -t_q <= query_block < t_q:
        raise ValueError(f"query_block={query_block} is out of range for {t_q} query blocks")
    blk = int(query_block) % t_q
    visits = [b for b in range(t_k) if kinds[blk, b] != "skipped"]  # left to right
    if len(visits) > 4:
        raise ValueError(f"query block {blk} visits {len(visits)} key blocks; expected at "
                         "most 4 (choose an earlier query_block or larger blocks)")
    rows = range(blk * b_q, min(n, (blk + 1) * b_q))
    m_tab = np.empty((len(rows), len(visits)))
    l_tab = np.empty((len(rows), len(visits)))
    for r, i in enumerate(rows):
        # The keys of each visited block that row i may see; with b_q != b_k a row can
        # see none of a diagonal tile's keys, and its state then stays as it was.
        blocks = [s[i, b * b_k:min(i + 1, (b + 1) * b_k)] for b in visits]
        seen = [step for step, x in enumerate(blocks) if len(x)]  # always includes 0
        trace = online_softmax_row([blocks[step] for step in seen],
                                   [np.ones((len(blocks[step]), 1)) for step in seen])
        last = np.searchsorted(seen, np.arange(len(visits)), side="right") - 1
        m_tab[r], l_tab[r] = trace.running_max[last], trace.running_sum[last]

    # Layout (inches): grid on the left, the two state tables level with the block's rows.
    tw = 0.14 + 0.075 * (digits + 3)  # width of a table cell
    tables = 2 * len(visits) * tw + 0.45
    c = min(0.3, 3.3 / n, (7.0 - 0.7 - tables - 0.35) / n)  # one score
    top_pad = 0.95 if title != "" else 0.6
    legend_h = 0.85
    height = top_pad + n * c + legend_h
    ax = _canvas(ax, 7.0, height)
    x0, y0 = 0.7, height - top_pad  # top-left corner of the grid

    fills = {"full": _TINT["sky"], "visible": _TINT["orange"], "masked": "#5A5A5A",
             "skipped": "white"}
    colour = np.ones((n, n, 3))
    rgb = {k: to_rgb(v) for k, v in fills.items()}
    for a in range(t_q):
        for b in range(t_k):
            rs = slice(a * b_q, min(n, (a + 1) * b_q))
            cs = slice(b * b_k, min(n, (b + 1) * b_k))
            if kinds[a, b] == "full":
                colour[rs, cs] = rgb["full"]
            elif kinds[a, b] == "diagonal":
                ii, jj = np.meshgrid(np.arange(n)[rs], np.arange(n)[cs], indexing="ij")
                colour[rs, cs] = np.where((jj <= ii)[..., None], rgb["visible"], rgb["masked"])
    ax.imshow(colour, extent=(x0, x0 + n * c, y0 - n * c, y0), interpolation="nearest",
              zorder=0)
    for r in range(1, n):
        ax.plot([x0, x0 + n * c], [y0 - r * c] * 2, color="white", linewidth=0.6, zorder=1)
        ax.plot([x0 + r * c] * 2, [y0, y0 - n * c], color="white", linewidth=0.6, zorder=1)
    for a in range(t_q):
        for b in range(t_k):
            top, left = a * b_q, b * b_k
            hgt, wid = min(n, top + b_q) - top, min(n, left + b_k) - left
            ax.add_patch(Rectangle((x0 + left * c, y0 - (top + hgt) * c), wid * c, hgt * c,
                                   facecolor="none", edgecolor="black", linewidth=1.8,
                                   gid=f"tile:{kinds[a, b]}", zorder=2))
            if kinds[a, b] == "skipped" and wid * c > 0.55:
                ax.text(x0 + (left + wid / 2) * c, y0 - (top + hgt / 2) * c, "skipped",
                        ha="center", va="center", fontsize=9, color="0.35")
    for j in range(n):  # positions, from 0 as in numpy
        ax.text(x0 + (j + 0.5) * c, y0 + 0.05, str(j), ha="center", va="bottom", fontsize=9)
        ax.text(x0 - 0.05, y0 - (j + 0.5) * c, str(j), ha="right", va="center", fontsize=9)
    ax.text(x0 + n * c / 2, y0 + 0.3, f"key position $j$ (blocks of {b_k})", ha="center",
            va="bottom", fontsize=10)
    ax.text(x0 - 0.4, y0 - n * c / 2, f"query position $i$ (blocks of {b_q})", ha="center",
            va="center", rotation=90, fontsize=10)

    # The chosen query block: its band, and the order of its visits.
    band_top, band_h = blk * b_q, len(rows)
    ax.add_patch(Rectangle((x0 - 0.02, y0 - (band_top + band_h) * c - 0.02), n * c + 0.04,
                           band_h * c + 0.04, facecolor="none", edgecolor=_OKABE["vermillion"],
                           linewidth=2.4, zorder=3))
    for step, b in enumerate(visits):
        left = b * b_k
        wid = min(n, left + b_k) - left
        ax.text(x0 + (left + wid / 2) * c, y0 - (band_top + band_h / 2) * c, str(step + 1),
                ha="center", va="center", fontsize=10, fontweight="bold", zorder=4,
                gid=f"visit[{step}]",
                bbox={"boxstyle": "circle,pad=0.25", "facecolor": "white",
                      "edgecolor": _OKABE["vermillion"], "linewidth": 1.5})

    # The state tables, one column per visit, level with the rows of the block.
    f = f"{{:.{digits}f}}"
    x_m = x0 + n * c + 0.4
    x_l = x_m + len(visits) * tw + 0.3
    y_band = y0 - band_top * c
    for name, x, tab in (("m", x_m, m_tab), ("l", x_l, l_tab)):
        for step in range(len(visits)):
            ax.add_patch(Rectangle((x + step * tw, y_band - band_h * c), tw, band_h * c,
                                   facecolor=_TINT["grey"] if step % 2 else "white",
                                   edgecolor="0.5", linewidth=0.8))
            ax.text(x + (step + 0.5) * tw, y_band + 0.14, str(step + 1), ha="center",
                    va="center", fontsize=9, fontweight="bold",
                    bbox={"boxstyle": "circle,pad=0.2", "facecolor": "white",
                          "edgecolor": _OKABE["vermillion"], "linewidth": 1.2})
            for r in range(band_h):
                rose = name == "m" and step > 0 and tab[r, step] > tab[r, step - 1]
                ax.text(x + (step + 0.5) * tw, y_band - (r + 0.5) * c, f.format(tab[r, step]),
                        ha="center", va="center", fontsize=9, gid=f"{name}[{r},{step}]",
                        fontweight="bold" if rose else "normal")
        label = "running max $m$" if name == "m" else "running sum $\\ell$"
        ax.text(x + len(visits) * tw / 2, y_band + 0.34, label + "\nafter each tile",
                ha="center", va="bottom", fontsize=10)
    ax.text(x_m, y_band - band_h * c - 0.1,
            f"Rows {rows[0]} to {rows[-1]} (outlined) visit tiles "
            f"{', '.join(str(v + 1) for v in range(len(visits)))} in this order.\n"
            "Bold: $m$ rose at that tile, so the old $\\ell$\n"
            "was first multiplied by exp(old $m$ − new $m$).",
            ha="left", va="top", fontsize=9, color="0.2")

    # Legend, below the grid.
    items = [("full", "computed in full"), ("skipped", "skipped"),
             ("visible", "diagonal: computed"), ("masked", "diagonal: set to $-\\infty$")]
    for number, (key, text) in enumerate(items):
        x_leg = 0.15 + 1.45 * (number // 2)
        y_leg = y0 - n * c - 0.25 - 0.28 * (number % 2)
        ax.add_patch(Rectangle((x_leg, y_leg - 0.08), 0.16, 0.16, facecolor=fills[key],
                               edgecolor="0.3", linewidth=0.8))
        ax.text(x_leg + 0.22, y_leg, text, ha="left", va="center", fontsize=9)
    counts = {k: int((kinds == k).sum()) for k in ("full", "diagonal", "skipped")}
    if title is None:
        title = (f"{n} × {n} scores in {b_q} × {b_k} tiles under the causal mask: "
                 f"{counts['full']} full, {counts['diagonal']} diagonal, "
                 f"{counts['skipped']} skipped")
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax
