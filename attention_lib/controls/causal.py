r"""The causal stepper (chapter 5): generation one position at a time, the mask and the cache."""

from __future__ import annotations

import html
from collections.abc import Sequence

from numpy.typing import ArrayLike

from .._validation import as_real_array, displayable, positive_int
from ..attention import scaled_dot_product_attention, scaled_scores
from . import element as el

__all__ = ["causal_stepper"]


def causal_stepper(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    tokens: Sequence[str] | None = None,
    *,
    start: int = 1,
    title: str = "Generate one token at a time: the new query, the mask and the cache",
) -> el.ControlElement:
    r"""A browser-side stepper through causal generation, one position per step.

    Buttons "previous" and "next token" and a slider set the step :math:`t` (from 1 to
    :math:`n`). At step :math:`t` the element shows which keys the new query (position
    :math:`t`) may use (positions 1 to :math:`t`), the cache holding the keys and values of
    positions 1 to :math:`t`, the new query's scores and weights (three decimals; the
    later positions are masked, weight 0) and its output row.

    Parameters
    ----------
    q, k : array_like, shape (n, d_k)
    v : array_like, shape (n, d_v)
        Every entry, score and output must be at most ``1e15`` in size (the page shows
        them all).
    tokens : sequence of str, optional
        A label per position (default ``"1", "2", ...``).
    start : int
        The step shown first, from 1 to n.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows step ``start``, computed here.

    Notes
    -----
    Step :math:`t` shows row :math:`t` (counted from 1) of
    ``scaled_dot_product_attention(q, k, v, causal=True)``:

    .. math:: a_{tj} = \operatorname{softmax}_{j \le t}\!\left(\frac{\mathbf q_t\cdot
              \mathbf k_j}{\sqrt{d_k}}\right), \qquad \mathbf z_t = \sum_{j\le t}
              a_{tj}\mathbf v_j .

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    >>> "next token" in causal_stepper(q, k, v, ["a", "b", "c"])._repr_html_()
    True
    """
    q, k, v = (as_real_array(a, name, min_ndim=2) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 2:
            raise ValueError(f"{name} has shape {a.shape}; expected one row per position, "
                             "shape (n, d)")
    if k.shape != q.shape or v.shape[0] != q.shape[0]:
        raise ValueError(f"q {q.shape}, k {k.shape}, v {v.shape}; expected q and k of shape "
                         "(n, d_k) and v of shape (n, d_v)")
    q, k, v = (displayable(a, name) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    n = q.shape[0]
    names = el.labels(tokens, n)
    t = positive_int(start, "start", what=f"a step from 1 to {n}")
    if t > n:
        raise ValueError(f"start={start}; expected a step from 1 to {n}")
    scores = displayable(scaled_scores(q, k), "the scores q k^T / sqrt(d_k)")  # (n, n), unmasked
    out, weights = scaled_dot_product_attention(q, k, v, causal=True)
    data = {"tokens": names, "q": el.floats(q), "k": el.floats(k), "v": el.floats(v)}
    ident = el.uid("causal", data, t, title)
    now = el.piece("step_now", t=t, n=n, token=html.escape(names[t - 1]))
    chips = "".join(el.piece("token_chip", **_chip(j, x, t)) for j, x in enumerate(names))
    cache = "".join(el.piece("cache_item", j=j + 1, token=html.escape(names[j]),
                          k=el.vec(k[j], 2), v=el.vec(v[j], 2)) for j in range(t))
    rows = "".join(el.bar_row(f"{j + 1} {html.escape(x)}", float(weights[t - 1, j]), 3,
                           el.fmt(scores[t - 1, j], 3) if j < t else "masked",
                           "" if j < t else "lc-off")
                   for j, x in enumerate(names))
    body = f"""<div class="lc-controls">
<button type="button" class="lc-prev" id="{ident}-prev" disabled>previous</button>
<button type="button" class="lc-next" id="{ident}-next" disabled>next token</button>
<div class="lc-field"><label for="{ident}-step">step t</label>
<input type="range" class="lc-step" id="{ident}-step" min="1" max="{n}" step="1" value="{t}"
disabled autocomplete="off"></div>
<p aria-live="polite" class="lc-now">{now}</p>
</div>
<p>Keys the new query may use (solid) and positions not generated yet (dashed):</p>
<ul class="lc-tokens">{chips}</ul>
<p>The cache holds the keys and values of positions 1 to <span class="lc-t">{t}</span>:</p>
<ul class="lc-terms lc-cache">{cache}</ul>
<p>Scores q<sub>t</sub>·k<sub>j</sub> / √d<sub>k</sub> and weights of the new query:</p>
{el.weights_table(rows)}
<p>output z<sub>t</sub> = <span class="lc-vec lc-output">{el.vec(out[t - 1], 3)}</span></p>"""
    alt = (f"step through causal attention over {' '.join(names)}: at step t the new query "
           "sees positions 1 to t, the cache holds their keys and values")
    return el.assemble("causal", ident, data, body, "causal.js", state=f"step t = {t}", alt=alt,
                    title=title, templates=("bar_row", "score_cell", "step_now", "token_chip",
                                            "cache_item"))


def _chip(j: int, token: str, t: int) -> dict[str, object]:
    """The slots of position ``j``'s chip (counted from 0) at step ``t`` (counted from 1)."""
    cls = "lc-new" if j + 1 == t else "lc-seen" if j + 1 < t else "lc-future"
    tail = " (new query)" if j + 1 == t else " (masked)" if j + 1 > t else ""
    return {"cls": cls, "j": j + 1, "token": html.escape(token), "tail": tail}
