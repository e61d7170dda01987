"""The matrices of attention drawn as grids sized by their shapes (chapter 1)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from .._validation import positive_int
from .style import _labels

__all__ = ["attention_shape_flow"]


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
