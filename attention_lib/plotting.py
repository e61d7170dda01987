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
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from numpy.typing import ArrayLike

from ._validation import as_real_array, positive_int
from .saturation import projection_scale_weights, saturation_scores, saturation_stats

__all__ = [
    "attention_heatmap",
    "attention_shape_flow",
    "mask_heatmap",
    "projection_scale_grid",
    "saturation_grid",
    "weights_bar",
]


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
    r"""Small multiples of :func:`attention_lib.widgets.saturation_explorer`'s key slider positions.

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
        As in :func:`attention_lib.saturation_scores`.

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
