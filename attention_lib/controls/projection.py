r"""The projection scale (chapter 3): the walkthrough's weights as ``W_Q`` and ``W_K`` grow by c."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import scale_range
from ..attention import scaled_scores
from ..saturation import projection_scale_weights
from . import element as el
from .query import walkthrough

__all__ = ["projection_scale_explorer"]


def _heat_rows(tokens: Sequence[str], w: np.ndarray) -> str:
    return "".join(el.piece("heat_row", label=html.escape(t),
                         cells="".join(el.heat_cell(float(x)) for x in row))
                   for t, row in zip(tokens, w, strict=True))


def projection_scale_explorer(
    example: Any,
    *,
    scale: float = 1.0,
    scale_max: float = 30.0,
    step: float = 0.01,
    title: str = "Multiply W_Q and W_K by c: the attention weights sharpen",
) -> el.ControlElement:
    r"""A browser-side explorer of the walkthrough's weights with ``W_Q`` and ``W_K`` times c.

    A slider and a number field set :math:`c` (from 0 to ``scale_max``); the element shows
    all :math:`n \times n` weights as a shaded table (queries as rows, keys as columns,
    three decimals) and the factor :math:`c^2` that multiplies every score.

    Parameters
    ----------
    example : WalkthroughExample
        Anything with ``tokens``, ``x``, ``w_q``, ``w_k`` and ``w_v``.
    scale, scale_max, step : float
        Starting value, upper end (the lower end is 0) and step of :math:`c`.
        ``scale_max`` squared, times the largest scaled score, must stay at most ``1e15``
        in size (so that every number shown is finite), and ``step`` is from
        ``scale_max / 1e9`` to ``scale_max``.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the weights at ``scale``, computed here.

    Notes
    -----
    The script computes what :func:`attention_lib.projection_scale_weights` returns:

    .. math:: \operatorname{softmax}\!\left(c^2\,\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right),
              \qquad Q = X W_Q,\; K = X W_K .

    Examples
    --------
    >>> from attention_lib.examples import cat_sat_on
    >>> markup = projection_scale_explorer(cat_sat_on(), scale=3.0)._repr_html_()
    >>> markup.split("<script>")[0].count('class="lc-heat-cell')  # shown before any script
    16
    """
    tokens, q, k, _ = walkthrough(example)
    largest = float(np.max(np.abs(scaled_scores(q, k))))
    c0, hi, step = scale_range(scale, scale_max, step, largest=largest, power=2)
    data = {"tokens": tokens, "q": el.floats(q), "k": el.floats(k)}
    ident = el.uid("proj", data, c0, hi, step, title)
    w = projection_scale_weights(example.x, example.w_q, example.w_k, [c0])[0]  # (n, n)
    head = "".join(f'<th scope="col">{html.escape(t)}</th>' for t in tokens)
    body = f"""<div class="lc-controls">
{el.scale_fields(ident, "factor c", c0, hi, step)}
</div>
<p>Q and K are multiplied by c, so every score q·k<sub>j</sub> / √d<sub>k</sub> is multiplied
by c² = <span class="lc-c2">{el.fmt(c0 * c0, 2)}</span>.</p>
<table class="lc-heat"><caption class="lc-hint">attention weights: one row per query,
one column per key</caption><thead><tr><th scope="col">query \\ key</th>{head}</tr></thead>
<tbody>{_heat_rows(tokens, w)}</tbody></table>"""
    alt = (f"slider for the factor c multiplying W_Q and W_K, showing the "
           f"{len(tokens)} x {len(tokens)} attention weights of {' '.join(tokens)}")
    return el.assemble("proj", ident, data, body, "projection.js", state=f"c = {c0:g}", alt=alt,
                    title=title, templates=("heat_cell", "heat_row", "scale_error"))
