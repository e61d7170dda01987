"""The tiles of a causal online softmax and one query block's running state (chapter 17)."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle
from numpy.typing import ArrayLike

from .._validation import as_real_array, positive_int
from ..masks import causal_tile_kinds
from ..tiled import online_softmax_row
from .diagrams import _canvas, _title
from .style import _OKABE, _TINT

__all__ = ["causal_tiles"]


def causal_tiles(
    scores: ArrayLike, block_size: int | tuple[int, int], *, query_block: int = -1,
    digits: int = 2, ax: Axes | None = None, title: str | None = None,
) -> Axes:
    r"""Draw the tiles of a causal online softmax and one query block's running state.

    Left: the :math:`n \times n` matrix of scores cut into :math:`b_q \times b_k`
    tiles and classified by :func:`attention_lib.causal_tile_kinds`:
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
    title : str or None, optional
        Where to draw (a new figure 7 inches wide when omitted) and the title (by
        default a sentence with the sizes; "" draws none).

    Returns
    -------
    matplotlib.axes.Axes
        One ``Rectangle`` per tile with gid ``"tile:full"``, ``"tile:diagonal"``
        or ``"tile:skipped"``; the visit numbers are ``Text`` artists with gids
        ``"visit[s]"``; the state tables' numbers have gids ``"m[r,s]"`` and
        ``"l[r,s]"`` (row ``r`` of the block, after visit ``s``, from 0).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> ax = causal_tiles(np.zeros((8, 8)), 4)
    >>> sorted(p.get_gid() for p in ax.patches if str(p.get_gid()).startswith("tile:"))
    ['tile:diagonal', 'tile:diagonal', 'tile:full', 'tile:skipped']
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "l[3,1]"]   # 8 scores of 0
    ['8.00']
    >>> plt.close(ax.figure)
    """
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
    kinds = causal_tile_kinds(n, block_q=b_q, block_k=b_k)  # (T_q, T_k) of str
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
    _title(ax, height, title, f"{n} × {n} scores in {b_q} × {b_k} tiles under the causal mask: "
           f"{counts['full']} full, {counts['diagonal']} diagonal, {counts['skipped']} skipped")
    return ax
