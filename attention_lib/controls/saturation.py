r"""The saturation explorer (chapter 4): ``softmax(c * scores)`` as c, d_k and the division move."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_real_array, check_flag, positive_int, scale_range
from ..examples import SATURATION_SCORES
from ..saturation import saturation_scores, saturation_stats
from . import element as el

__all__ = ["saturation_explorer"]

#: The largest key size offered (each d_k is one draw of a query and n_keys keys).
MAX_D_K = 2**16

#: The most keys a row may have (one table row each).
MAX_KEYS = 64


def saturation_explorer(
    *,
    d_ks: Sequence[int] = (4, 16, 64, 256, 1024),
    n_keys: int = 8,
    seed: int = 0,
    tutorial_scores: ArrayLike = SATURATION_SCORES,
    start: str | int = "tutorial",
    scale: float = 10.0,
    scale_max: float = 100.0,
    step: float = 0.001,
    divide: bool = True,
    title: str = "Softmax saturation: scale, d_k and the division by √d_k",
) -> el.ControlElement:
    r"""A browser-side explorer of ``softmax(c * scores)``: weights, entropy, Jacobian size.

    The reader picks a row of scores (the tutorial's row, or one fixed random draw of a
    query and ``n_keys`` keys for each ``d_k`` in ``d_ks``), ticks or unticks the division
    by :math:`\sqrt{d_k}`, and sets the scale :math:`c` with a slider or by typing it (to
    ``step``, 0.001 by default). The element shows the weights (bars and three decimals),
    their entropy, and the Frobenius norm and largest entry of the softmax Jacobian.

    Parameters
    ----------
    d_ks : sequence of int
        The key sizes offered, each with its own draw (distinct integers from 1 to
        65536).
    n_keys, seed : int
        As in :func:`attention_lib.saturation_scores` (``n_keys`` from 2 to 64).
    tutorial_scores : array_like, shape (n,)
        The first row offered (the tutorial's scores by default); never divided.
    start : "tutorial" or int
        The row selected at first: ``"tutorial"`` or one of ``d_ks``.
    scale, scale_max, step : float
        Starting value, upper end (the lower end is 0) and step of :math:`c`. ``scale_max``
        times the largest score (undivided) must stay at most ``1e15`` in size, so that
        every number shown is finite, and ``step`` is from ``scale_max / 1e9`` to
        ``scale_max``.
    divide : bool
        Whether the division box starts ticked.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the row ``start`` at the scale ``scale``,
        computed here.

    Notes
    -----
    With :math:`s_j = \mathbf q\cdot\mathbf k_j/\sqrt{d_k}` (or undivided, or the
    tutorial's row) the script computes exactly what
    :func:`attention_lib.saturation_stats` returns for ``(s, c)``:

    .. math:: p = \operatorname{softmax}(c\,s),\quad H = -\sum_j p_j\log p_j,\quad
              \|\operatorname{diag}(p) - p p^{\mathsf T}\|_F .

    The random scores are those of :func:`attention_lib.saturation_scores`.

    Examples
    --------
    >>> s = saturation_explorer(d_ks=[4, 64])
    >>> markup = s._repr_html_()
    >>> 'type="range"' in markup and 'type="number"' in markup and "<select" in markup
    True
    """
    if isinstance(d_ks, str | bytes) or not isinstance(d_ks, Sequence | np.ndarray):
        raise TypeError(f"d_ks={d_ks!r}; expected a sequence of key sizes")
    dims = [positive_int(d, "d_ks") for d in d_ks]
    if not dims or len(set(dims)) != len(dims) or max(dims) > MAX_D_K:
        raise ValueError(f"d_ks={list(d_ks)!r}; expected at least one key size from 1 to "
                         f"{MAX_D_K}, none twice")
    n_keys = positive_int(n_keys, "n_keys", minimum=2)
    if n_keys > MAX_KEYS:
        raise ValueError(f"n_keys={n_keys}; expected at most {MAX_KEYS} keys (one row each)")
    seed = positive_int(seed, "seed", minimum=0)
    tut = as_real_array(tutorial_scores, "tutorial_scores", min_ndim=1)
    if tut.ndim != 1 or not 2 <= tut.shape[0] <= MAX_KEYS:
        raise ValueError(f"tutorial_scores has shape {tut.shape}; expected one row of 2 to "
                         f"{MAX_KEYS} scores, shape (n,)")
    if not (isinstance(start, str) and start == "tutorial"):
        positive_int(start, "start", what=f"one of d_ks {dims}, or 'tutorial'")
        if start not in dims:
            raise ValueError(f"start={start!r}; expected 'tutorial' or one of d_ks {dims}")
    divide = check_flag(divide, "divide")

    tut_text = "[" + ", ".join(f"{x:g}" for x in tut) + "]"
    rows = [{"label": tut_text, "d_k": None, "scores": el.floats(tut)}]
    rows += [{"label": f"d_k = {d}", "d_k": d,
              "scores": el.floats(saturation_scores(d, divide_by_sqrt_dk=False, n_keys=n_keys,
                                                 seed=seed))} for d in dims]
    largest = max(float(np.max(np.abs(r["scores"]))) for r in rows)
    c0, hi, step = scale_range(scale, scale_max, step, largest=largest)
    index = 0 if isinstance(start, str) else 1 + dims.index(start)
    ident = el.uid("sat", rows, index, c0, hi, step, divide, title)

    row = rows[index]
    if row["d_k"] is None:
        s = tut.astype(np.float64)
        formula = el.piece("formula_tutorial", scores=html.escape(tut_text))
    else:
        s = saturation_scores(row["d_k"], divide_by_sqrt_dk=divide, n_keys=n_keys, seed=seed)
        formula = el.piece("formula_divided" if divide else "formula_undivided", d_k=row["d_k"])
    st = saturation_stats(s, c0)
    z = s * c0
    options = "".join(
        f'<option value="{"tutorial" if r["d_k"] is None else r["d_k"]}"'
        f'{" selected" if i == index else ""}>'
        + (f"the tutorial's scores {html.escape(tut_text)}" if r["d_k"] is None
           else f"random q and keys, d_k = {r['d_k']}") + "</option>"
        for i, r in enumerate(rows))
    table = "".join(el.bar_row(f"key {j + 1}", float(p), 3, el.fmt(z[j], 2))
                    for j, p in enumerate(st.weights))
    body = f"""<div class="lc-controls">
<div class="lc-field"><label for="{ident}-row">scores</label>
<select class="lc-row" id="{ident}-row" disabled autocomplete="off">{options}</select></div>
<div class="lc-field"><input type="checkbox" class="lc-divide" id="{ident}-divide"
{" checked" if divide else ""} disabled autocomplete="off"><label for="{ident}-divide">divide by
√d<sub>k</sub></label><span class="lc-hint lc-divide-hint"{"" if row["d_k"] is None else " hidden"}>
(not for the tutorial's row, which has no d<sub>k</sub>)</span></div>
{el.scale_fields(ident, "scale c", c0, hi, step)}
</div>
<p>scores c·s: <span class="lc-formula">{formula}</span></p>
{el.weights_table(table, "p")}
<p class="lc-stats"><span>entropy <span class="lc-entropy">{el.fmt(st.entropy, 3)}</span> nats
(uniform: log n = <span class="lc-logn">{el.fmt(math.log(len(s)), 3)}</span>)</span>
<span>‖J‖<sub>F</sub> = <span class="lc-jnorm">{el.fmt(st.jacobian_norm, 4)}</span></span>
<span>largest |J<sub>ij</sub>| = <span class="lc-jmax">{el.fmt(st.jacobian_max, 4)}</span></span>
</p>"""
    state = (f"c = {c0:g} on the tutorial's scores" if row["d_k"] is None
             else f"c = {c0:g}, d_k = {row['d_k']}, "
             + ("divided by √d_k" if divide else "not divided"))
    alt = (f"explorer of softmax(c × scores) for the scores {tut_text} and random scores at "
           f"d_k = {', '.join(map(str, dims))}: weights, entropy and softmax Jacobian size")
    return el.assemble("saturation", ident, {"rows": rows}, body, "saturation.js", state=state,
                    alt=alt, title=title,
                    templates=("bar_row", "score_cell", "scale_error", "formula_tutorial",
                               "formula_divided", "formula_undivided"))
