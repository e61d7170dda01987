"""Picture-first diagrams drawn from real numbers (chapters 3, 6 and 16).

Each diagram is laid out in inches on a ``_canvas`` (a 7-inch-wide figure by
default), from grids of cells (``_cells``) and arrows (``_arrow``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle
from numpy.typing import ArrayLike

from .._validation import as_real_array, positive_int, token_position
from ..attention import scaled_dot_product_attention, scaled_scores
from .style import _MIN_PT, _OKABE, _TINT, _labels

__all__ = ["head_split_flow", "kv_cache_step", "query_path"]


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


def _bracket(ax: Axes, x: float, y_top: float, y_bottom: float) -> None:
    """A square bracket ``]`` 0.08 inch wide, from ``y_top`` down to ``y_bottom``."""
    ax.plot([x, x + 0.08, x + 0.08, x], [y_top, y_top, y_bottom, y_bottom], color="0.3",
            linewidth=1.0)


def _title(ax: Axes, height: float, title: str | None, default: str) -> None:
    """``title`` (``default`` if None) at the top left of a diagram ``height`` inches high.

    An empty ``title`` writes none.
    """
    if title is None:
        title = default
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)


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
        i = token_position(names, query)
    else:
        i = token_position([str(r) for r in range(n_q)], query)
    out, weights = scaled_dot_product_attention(qa, ka, va)
    w = weights[i]
    s = scaled_scores(qa[i:i + 1].astype(out.dtype), ka.astype(out.dtype))[0]  # (n_k,)
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
    _bracket(ax, x_br, row_y[0] + 0.15, row_y[-1] - 0.15)
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
    _bracket(ax, x_sum, row_y[0] + 0.15, row_y[-1] - 0.15)
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
    _title(ax, height, title,
           f"The path of one query, {qname!r}: scores, softmax, weighted sum of values")
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
    n: int, d_model: int, num_heads: int, *, ax: Axes | None = None, title: str | None = None,
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

    def named(x: float, name: str, size: float, sizes: str, *, above: float = 0.1,
              below: float = 0.08) -> None:
        """The name above an n x d_model matrix at ``x`` and its sizes below."""
        ax.text(x + wide / 2, mid + tall / 2 + above, name, ha="center", va="bottom",
                fontsize=size)
        shape(x + wide / 2, mid - tall / 2 - below, sizes)

    def times(x_left: float, x_right: float, matrix: str) -> None:
        """An arrow from the matrix ending at ``x_left`` to ``x_right``, marked "times W"."""
        _arrow(ax, (x_left + 0.08, mid), (x_right - 0.08, mid))
        ax.text((x_left + x_right) / 2, mid + 0.06, f"$\\cdot {matrix}$", ha="center",
                va="bottom", fontsize=10)

    x_x = 0.1
    _cells(ax, x_x, mid + tall / 2, None, rows=n, cols=d_model, cell=e, fill=_TINT["grey"],
           gid="X")
    named(x_x, "$X$", 12, f"$n \\times d_{{model}}$\n= {n} × {d_model}")

    x_q = x_x + wide + 0.55
    times(x_x + wide, x_q, "W_Q")
    blocks("Q", x_q, mid)
    named(x_q, "$Q = XW_Q$", 12,
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
    named(x_c, "concat", 11, f"{n} × {d_model}", above=0.32, below=0.35)

    x_o = x_c + wide + 0.6
    times(x_c + wide, x_o, "W_O")
    shape((x_c + wide + x_o) / 2, mid - 0.06, f"{d_model} × {d_model}")
    _cells(ax, x_o, mid + tall / 2, None, rows=n, cols=d_model, cell=e, fill=_TINT["grey"],
           gid="output")
    named(x_o, "output", 11, f"{n} × {d_model}")
    if x_o + wide + 0.1 > 7.0:
        ax.set_xlim(0.0, x_o + wide + 0.1)
    _title(ax, height, title, f"{h} head{'s' * (h != 1)}: $d_{{model}}$ = {d_model} is cut "
           f"into {h} × $d_k$ = {h} × {d_k} columns, then put back")
    return ax


def kv_cache_step(
    t: int, d_k: int, d_v: int | None = None, *, ax: Axes | None = None,
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
    _title(ax, height, title, f"Step $t$ = {t}: one new key and value are appended; "
           f"the new query reads all {t} keys")
    return ax
