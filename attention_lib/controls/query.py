r"""Pick a query (chapter 3): one row of the walkthrough's attention, built up term by term."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from .._validation import displayable, token_position
from ..attention import project_qkv, scaled_dot_product_attention, scaled_scores
from . import element as el

__all__ = ["query_picker"]


def walkthrough(example: Any, name: str = "example") -> tuple[list[str], np.ndarray, ...]:
    """The tokens and Q, K, V (float64) of a walkthrough example, checked."""
    for attr in ("tokens", "x", "w_q", "w_k", "w_v"):
        if not hasattr(example, attr):
            raise TypeError(f"{name} has no {attr!r}; expected a WalkthroughExample such as "
                            "attention_lib.examples.cat_sat_on()")
    tokens = [str(t) for t in example.tokens]
    q, k, v = project_qkv(example.x, example.w_q, example.w_k, example.w_v)
    if len(tokens) != q.shape[-2] or q.ndim != 2:
        raise ValueError(f"{name} has {len(tokens)} tokens for x of shape "
                         f"{np.shape(example.x)}; expected one 2-D row per token")
    q, k, v = (displayable(a, f"{name}'s {n}") for a, n in ((q, "Q"), (k, "K"), (v, "V")))
    return tokens, q, k, v


def query_picker(
    example: Any,
    *,
    query: str | int = "sat",
    title: str = "Pick a query: its scores, its weights and its output",
) -> el.ControlElement:
    r"""A browser-side view of one query of the walkthrough, built up term by term.

    The reader picks a token from a list. The element shows that token's scaled scores
    against every key, :math:`\mathbf q_i\cdot\mathbf k_j/\sqrt{d_k}`, its weights
    (bars and four decimals), and the weighted sum of the value vectors one term
    :math:`a_{ij}\mathbf v_j` at a time with the sum so far, ending in the output row.

    Parameters
    ----------
    example : WalkthroughExample
        Anything with ``tokens``, ``x``, ``w_q``, ``w_k`` and ``w_v`` (such as
        :func:`attention_lib.examples.cat_sat_on`).
    query : str or int
        The token (or its position) selected at first.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the query ``query``, computed here.

    Notes
    -----
    :math:`Q, K, V` come from :func:`attention_lib.project_qkv`; the script computes row
    :math:`i` of :func:`attention_lib.scaled_dot_product_attention`:

    .. math:: a_{ij} = \operatorname{softmax}_j\!\left(\frac{\mathbf q_i\cdot\mathbf k_j}
              {\sqrt{d_k}}\right), \qquad \mathbf z_i = \sum_j a_{ij}\mathbf v_j .

    Examples
    --------
    >>> from attention_lib.examples import cat_sat_on
    >>> markup = query_picker(cat_sat_on())._repr_html_()
    >>> markup.count("<option")
    4
    """
    tokens, q, k, v = walkthrough(example)
    i = token_position(tokens, query)
    scores = displayable(scaled_scores(q, k), "the scores of example")  # (n, n)
    out, weights = scaled_dot_product_attention(q, k, v)
    data = {"tokens": tokens, "q": el.floats(q), "k": el.floats(k), "v": el.floats(v)}
    ident = el.uid("query", data, i, title)
    d_k = q.shape[-1]
    options = "".join(f'<option value="{j}"{" selected" if j == i else ""}>'
                      f"{html.escape(t)}</option>" for j, t in enumerate(tokens))
    table = "".join(el.bar_row(html.escape(t), float(weights[i, j]), 4, el.fmt(scores[i, j], 4))
                    for j, t in enumerate(tokens))
    terms, total = [], np.zeros(v.shape[-1])
    for j, t in enumerate(tokens):
        term = weights[i, j] * v[j]
        total = total + term
        terms.append(el.piece("term_item", label=html.escape(t),
                           a=el.fmt(weights[i, j], 4), v=el.vec(v[j], 4), term=el.vec(term, 4),
                           total=el.vec(total, 4)))
    body = f"""<div class="lc-controls"><div class="lc-field">
<label for="{ident}-query">query token</label>
<select class="lc-query" id="{ident}-query" disabled autocomplete="off">{options}</select>
</div></div>
<p>Scores of <strong class="lc-name">{html.escape(tokens[i])}</strong> against each key,
q·k<sub>j</sub> / √d<sub>k</sub> with d<sub>k</sub> = {d_k}, and the softmax of them:</p>
{el.weights_table(table)}
<p>The output is the weighted sum of the value vectors, one term at a time:</p>
<ol class="lc-terms">{"".join(terms)}</ol>
<p>output z<sub><span class="lc-name">{html.escape(tokens[i])}</span></sub> =
<span class="lc-vec lc-output">{el.vec(out[i], 4)}</span></p>"""
    alt = (f"choose a query among {', '.join(tokens)}: its scores, weights and output "
           "as the weighted sum of the values")
    return el.assemble("query", ident, data, body, "query.js", state=f"the query {tokens[i]!r}",
                    alt=alt, title=title, templates=("bar_row", "score_cell", "term_item"))
