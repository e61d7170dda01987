r"""Controls that run in the reader's browser, without a kernel, on the library's numbers.

Each function here returns a :class:`~attention_lib.static_sliders.StaticSlider`: one
self-contained HTML element (inline style and script, nothing loaded from elsewhere) whose
numbers are computed by ``attention_lib`` and embedded as JSON. Its script redoes the
computation in double precision, with the same operations as the library, whenever a
control changes. Every control is a native ``<input>``, ``<select>`` or ``<button>`` with a
visible ``<label>``, so it works by keyboard. Before the script runs (an untrusted notebook
strips scripts) the element shows the values at its starting position, computed here, the
controls are disabled, and a note says how to make them move; the script removes the note.
The JavaScript and CSS live in ``attention_lib/assets``.

- :func:`saturation_explorer`: softmax saturation as the scale, :math:`d_k` and the
  :math:`\sqrt{d_k}` division change (chapter 4);
- :func:`query_picker`: one query of the "The cat sat on" walkthrough, its scores, weights
  and the weighted sum of the values term by term (chapter 3);
- :func:`retrieval_playground`: the trained soft dictionary of chapter 12 on a sequence the
  reader types;
- :func:`causal_stepper`: causal generation step by step, the new query, the keys it may
  use and the key-value cache (chapters 5 and 9);
- :func:`projection_scale_explorer`: the walkthrough's weights as ``W_Q`` and ``W_K`` are
  multiplied by a factor (chapter 3).

The browser tests (``tests/test_live_controls_browser.py``) move every control by keyboard
in Chromium and compare what is displayed with the library.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_real_array, check_flag, positive_int
from .attention import project_qkv, scaled_dot_product_attention
from .examples import SATURATION_SCORES
from .saturation import projection_scale_weights, saturation_scores, saturation_stats
from .softmax import softmax
from .static_sliders import SUPPRESS_SHORTCUTS, StaticSlider, _asset
from .training import EXPORT_FORMAT, RETRIEVAL_PARAMS, retrieval_forward

__all__ = [
    "causal_stepper",
    "parse_retrieval_sequence",
    "projection_scale_explorer",
    "query_picker",
    "retrieval_playground",
    "saturation_explorer",
]

#: Shown until the script runs (the script removes it).
STATIC_NOTE = (
    "The values above are for {state}. These controls work when their script runs: on the "
    "website they do; in JupyterLab, run this cell (or File > Trust Notebook)."
)


# --------------------------------------------------------------------------- shared pieces


def _fmt(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, as the script's ``fmt`` (no sign on a rounded zero)."""
    s = f"{float(x):.{digits}f}"
    return s[1:] if re.fullmatch(r"-0\.?0*", s) else s


def _vec(xs: ArrayLike, digits: int) -> str:
    return "[" + ", ".join(_fmt(x, digits) for x in np.ravel(xs)) + "]"


def _attr(obj: Any) -> str:
    """``obj`` as JSON, escaped for a double-quoted HTML attribute."""
    return html.escape(json.dumps(obj, separators=(",", ":")), quote=True)


def _floats(a: ArrayLike) -> Any:
    """Nested lists of Python floats (``repr`` precision: JSON round-trips them exactly)."""
    return np.asarray(a, dtype=np.float64).tolist()


def _uid(kind: str, *parts: Any) -> str:
    """A stable id: the same arguments give the same id, different ones a different id."""
    digest = hashlib.sha1(json.dumps([kind, *parts], default=str).encode()).hexdigest()[:10]
    return f"lc-{kind}-{digest}"


def _bar_row(label: str, p: float, digits: int, extra: str | None = None, cls: str = "") -> str:
    """One table row (label, optional number, bar, weight), as the script's ``barRow``.

    Only rounded numbers go into the markup shown before the script runs, so that it does not
    depend on the last bits of a computation (the script adds the exact values).
    """
    return (f'<tr{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}><th scope="row">{label}</th>'
            + ("" if extra is None else f'<td class="lc-num lc-score">{extra}</td>')
            + '<td class="lc-bar-cell"><div class="lc-track"><div class="lc-bar" style="width: '
            f'{100 * p:.1f}%"></div></div></td>'
            f'<td class="lc-num lc-weight">{_fmt(p, digits)}</td></tr>')


def _heat_style(w: float) -> str:
    """Heatmap cell colours, as the script's ``heatStyle`` (text colour by contrast)."""
    lo, hi = (247, 251, 255), (8, 48, 107)
    rgb = [math.floor(a + (b - a) * w + 0.5) for a, b in zip(lo, hi, strict=True)]
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4
           for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    text = "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"
    return f"background: rgb({', '.join(map(str, rgb))}); color: {text}"


def _assemble(kind: str, uid: str, data: Mapping[str, Any], body: str, script: str,
              state: str, alt: str, title: str) -> StaticSlider:
    """The element: root with its data, style, title, body, the note and the script."""
    attrs = " ".join(f'data-{name}="{_attr(value)}"' for name, value in data.items())
    js = ("(function () {\n"
          f"const root = document.getElementById({json.dumps(uid)});\n"
          'if (!root || root.dataset.ready) { return; }\nroot.dataset.ready = "1";\n'
          + _asset("live_controls_common.js") + _asset(script) + "})();")
    # JupyterLab takes arrow keys as notebook shortcuts unless a control opts out.
    body = re.sub(r"<(input|select|button)\b", rf"<\1 {SUPPRESS_SHORTCUTS}", body)
    markup = (f'<div class="lc-root lc-{kind}" id="{uid}" {attrs}>\n'
              f'<style>{_asset("live_controls.css")}</style>\n'
              f'<p class="lc-title">{html.escape(title)}</p>\n{body}\n'
              f'<p class="lc-static-note"><em>{html.escape(STATIC_NOTE.format(state=state))}'
              f'</em></p>\n<script>{js}</script>\n</div>')
    return StaticSlider(markup, alt)


def _scale_fields(uid: str, label: str, value: float, scale_max: float, step: float) -> str:
    """A slider and a number field for one scale, each with its visible label."""
    common = f'min="0" max="{scale_max!r}" step="{step!r}" value="{value!r}" disabled'
    return (f'<div class="lc-field"><label for="{uid}-scale">{label}</label>'
            f'<input type="range" class="lc-scale" id="{uid}-scale" {common}></div>'
            f'<div class="lc-field"><label for="{uid}-c">c =</label>'
            f'<input type="number" class="lc-scale-number" id="{uid}-c" {common} '
            f'autocomplete="off" aria-describedby="{uid}-err"></div>'
            f'<p class="lc-error" id="{uid}-err" role="status" aria-live="polite"></p>')


def _check_scale(value: Any, scale_max: Any, step: Any, name: str = "scale") -> float:
    for arg, x in ((name, value), ("scale_max", scale_max), ("step", step)):
        if not isinstance(x, int | float | np.integer | np.floating) or isinstance(x, bool):
            raise TypeError(f"{arg}={x!r}; expected a real number")
        if not math.isfinite(x):
            raise ValueError(f"{arg}={x!r}; expected a finite number")
    if not (scale_max > 0 and step > 0 and 0 <= value <= scale_max):
        raise ValueError(f"{name}={value!r} with scale_max={scale_max!r} and step={step!r}: "
                         f"expected 0 <= {name} <= scale_max, scale_max > 0 and step > 0")
    return float(value)


def _token_position(tokens: Sequence[str], query: str | int, name: str = "query") -> int:
    if isinstance(query, str) and query in tokens:
        return list(tokens).index(query)
    if isinstance(query, int | np.integer) and not isinstance(query, bool) \
            and 0 <= query < len(tokens):
        return int(query)
    raise ValueError(f"{name}={query!r}; expected one of the tokens {list(tokens)} "
                     f"or a position from 0 to {len(tokens) - 1}")


def _labels(tokens: Any, n: int, name: str = "tokens") -> list[str]:
    if tokens is None:
        return [str(i + 1) for i in range(n)]
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(f"{name}={tokens!r}; expected a sequence of {n} strings")
    labels = [str(t) for t in tokens]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} entries; expected {n}, one per position")
    return labels


# --------------------------------------------------------------------------- 1. saturation


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
) -> StaticSlider:
    r"""A browser-side explorer of ``softmax(c * scores)``: weights, entropy, Jacobian size.

    The reader picks a row of scores (the tutorial's row, or one fixed random draw of a
    query and ``n_keys`` keys for each ``d_k`` in ``d_ks``), ticks or unticks the division
    by :math:`\sqrt{d_k}`, and sets the scale :math:`c` with a slider or by typing it (to
    ``step``, 0.001 by default). The element shows the weights (bars and three decimals),
    their entropy, and the Frobenius norm and largest entry of the softmax Jacobian.

    Parameters
    ----------
    d_ks : sequence of int
        The key sizes offered, each with its own draw (distinct positive integers).
    n_keys, seed : int
        As in :func:`attention_lib.saturation_scores`.
    tutorial_scores : array_like, shape (n,)
        The first row offered (the tutorial's scores by default); never divided.
    start : "tutorial" or int
        The row selected at first: ``"tutorial"`` or one of ``d_ks``.
    scale, scale_max, step : float
        Starting value, upper end (the lower end is 0) and step of :math:`c`.
    divide : bool
        Whether the division box starts ticked.
    title : str

    Returns
    -------
    StaticSlider

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
    if not dims or len(set(dims)) != len(dims):
        raise ValueError(f"d_ks={list(d_ks)!r}; expected at least one key size, none twice")
    n_keys = positive_int(n_keys, "n_keys", minimum=2)
    seed = positive_int(seed, "seed", minimum=0)
    tut = as_real_array(tutorial_scores, "tutorial_scores", min_ndim=1)
    if tut.ndim != 1 or tut.shape[0] < 2:
        raise ValueError(f"tutorial_scores has shape {tut.shape}; expected one row of at "
                         "least two scores, shape (n,)")
    if start != "tutorial" and (isinstance(start, bool) or start not in dims):
        raise ValueError(f"start={start!r}; expected 'tutorial' or one of d_ks {dims}")
    c0 = _check_scale(scale, scale_max, step)
    divide = check_flag(divide, "divide")
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")

    tut_text = "[" + ", ".join(f"{x:g}" for x in tut) + "]"
    rows = [{"label": tut_text, "d_k": None, "scores": _floats(tut)}]
    rows += [{"label": f"d_k = {d}", "d_k": d,
              "scores": _floats(saturation_scores(d, divide_by_sqrt_dk=False, n_keys=n_keys,
                                                  seed=seed))} for d in dims]
    index = 0 if start == "tutorial" else 1 + dims.index(start)
    uid = _uid("sat", rows, index, c0, scale_max, step, divide, title)

    row = rows[index]
    if row["d_k"] is None:
        s = tut.astype(np.float64)
        formula = f"c × s<sub>j</sub>, s = {html.escape(tut_text)}"
    else:
        s = saturation_scores(row["d_k"], divide_by_sqrt_dk=divide, n_keys=n_keys, seed=seed)
        formula = ("c × q·k<sub>j</sub> / √d<sub>k</sub>" if divide
                   else "c × q·k<sub>j</sub> (not divided)") + f", d<sub>k</sub> = {row['d_k']}"
    st = saturation_stats(s, c0)
    z = s * c0
    options = "".join(
        f'<option value="{"tutorial" if r["d_k"] is None else r["d_k"]}"'
        f'{" selected" if i == index else ""}>'
        + (f"the tutorial's scores {html.escape(tut_text)}" if r["d_k"] is None
           else f"random q and keys, d_k = {r['d_k']}") + "</option>"
        for i, r in enumerate(rows))
    table = "".join(_bar_row(f"key {j + 1}", float(p), 3, _fmt(z[j], 2))
                    for j, p in enumerate(st.weights))
    body = f"""<div class="lc-controls">
<div class="lc-field"><label for="{uid}-row">scores</label>
<select class="lc-row" id="{uid}-row" disabled autocomplete="off">{options}</select></div>
<div class="lc-field"><input type="checkbox" class="lc-divide" id="{uid}-divide"
{" checked" if divide else ""} disabled autocomplete="off"><label for="{uid}-divide">divide by
√d<sub>k</sub></label><span class="lc-hint lc-divide-hint"{"" if row["d_k"] is None else " hidden"}>
(not for the tutorial's row, which has no d<sub>k</sub>)</span></div>
{_scale_fields(uid, "scale c", c0, float(scale_max), float(step))}
</div>
<p>scores c·s: <span class="lc-formula">{formula}</span></p>
<table class="lc-weights"><thead><tr><th scope="col">key</th><th scope="col" class="lc-num">
score</th><th scope="col">weight</th><th scope="col" class="lc-num">p</th></tr></thead>
<tbody>{table}</tbody></table>
<p class="lc-stats"><span>entropy <span class="lc-entropy">{_fmt(st.entropy, 3)}</span> nats
(uniform: log n = <span class="lc-logn">{_fmt(math.log(len(s)), 3)}</span>)</span>
<span>‖J‖<sub>F</sub> = <span class="lc-jnorm">{_fmt(st.jacobian_norm, 4)}</span></span>
<span>largest |J<sub>ij</sub>| = <span class="lc-jmax">{_fmt(st.jacobian_max, 4)}</span></span>
</p>"""
    state = (f"c = {c0:g} on the tutorial's scores" if row["d_k"] is None
             else f"c = {c0:g}, d_k = {row['d_k']}, "
             + ("divided by √d_k" if divide else "not divided"))
    alt = (f"explorer of softmax(c × scores) for the scores {tut_text} and random scores at "
           f"d_k = {', '.join(map(str, dims))}: weights, entropy and softmax Jacobian size")
    return _assemble("saturation", uid, {"rows": rows}, body, "saturation_explorer.js",
                     state, alt, title)


# --------------------------------------------------------------------------- 2. pick a query


def _walkthrough(example: Any, name: str = "example") -> tuple[list[str], np.ndarray, ...]:
    for attr in ("tokens", "x", "w_q", "w_k", "w_v"):
        if not hasattr(example, attr):
            raise TypeError(f"{name} has no {attr!r}; expected a WalkthroughExample such as "
                            "attention_lib.examples.cat_sat_on()")
    tokens = [str(t) for t in example.tokens]
    q, k, v = project_qkv(example.x, example.w_q, example.w_k, example.w_v)
    if len(tokens) != q.shape[-2] or q.ndim != 2:
        raise ValueError(f"{name} has {len(tokens)} tokens for x of shape "
                         f"{np.shape(example.x)}; expected one 2-D row per token")
    return tokens, q, k, v


def query_picker(
    example: Any,
    *,
    query: str | int = "sat",
    title: str = "Pick a query: its scores, its weights and its output",
) -> StaticSlider:
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
    StaticSlider

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
    tokens, q, k, v = _walkthrough(example)
    i = _token_position(tokens, query)
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")
    out, weights = scaled_dot_product_attention(q, k, v)
    data = {"tokens": tokens, "q": _floats(q), "k": _floats(k), "v": _floats(v)}
    uid = _uid("query", data, i, title)
    d_k = q.shape[-1]
    scores = (q * (1.0 / math.sqrt(d_k))) @ k.T  # (n, n), as the library computes them
    options = "".join(f'<option value="{j}"{" selected" if j == i else ""}>'
                      f"{html.escape(t)}</option>" for j, t in enumerate(tokens))
    table = "".join(_bar_row(html.escape(t), float(weights[i, j]), 4, _fmt(scores[i, j], 4))
                    for j, t in enumerate(tokens))
    terms, total = [], np.zeros(v.shape[-1])
    for j, t in enumerate(tokens):
        term = weights[i, j] * v[j]
        total = total + term
        terms.append(_term_item(html.escape(t), float(weights[i, j]), v[j], term, total))
    body = f"""<div class="lc-controls"><div class="lc-field">
<label for="{uid}-query">query token</label>
<select class="lc-query" id="{uid}-query" disabled autocomplete="off">{options}</select>
</div></div>
<p>Scores of <strong class="lc-name">{html.escape(tokens[i])}</strong> against each key,
q·k<sub>j</sub> / √d<sub>k</sub> with d<sub>k</sub> = {d_k}, and the softmax of them:</p>
<table class="lc-weights"><thead><tr><th scope="col">key</th><th scope="col" class="lc-num">
score</th><th scope="col">weight</th><th scope="col" class="lc-num">a</th></tr></thead>
<tbody>{table}</tbody></table>
<p>The output is the weighted sum of the value vectors, one term at a time:</p>
<ol class="lc-terms">{"".join(terms)}</ol>
<p>output z<sub><span class="lc-name">{html.escape(tokens[i])}</span></sub> =
<span class="lc-vec lc-output">{_vec(out[i], 4)}</span></p>"""
    alt = (f"choose a query among {', '.join(tokens)}: its scores, weights and output "
           "as the weighted sum of the values")
    return _assemble("query", uid, data, body, "query_picker.js",
                     f"the query {tokens[i]!r}", alt, title)


def _term_item(label: str, a: float, v: np.ndarray, term: np.ndarray, total: np.ndarray) -> str:
    """One term of the weighted sum, as the script's ``termItem``."""
    return (f'<li><span>+ {_fmt(a, 4)} × v<sub>{label}</sub> {_vec(v, 4)} = '
            f'<span class="lc-vec lc-term">{_vec(term, 4)}</span></span>'
            f'<span>sum so far <span class="lc-vec lc-partial">{_vec(total, 4)}</span></span>'
            '</li>')


# --------------------------------------------------------------------------- 5. W_Q, W_K x c


def _heat_rows(tokens: Sequence[str], w: np.ndarray) -> str:
    return "".join(
        f'<tr><th scope="row">{html.escape(t)}</th>'
        + "".join(f'<td style="{_heat_style(float(x))}">{_fmt(x, 3)}</td>' for x in row)
        + "</tr>"
        for t, row in zip(tokens, w, strict=True))


def projection_scale_explorer(
    example: Any,
    *,
    scale: float = 1.0,
    scale_max: float = 30.0,
    step: float = 0.01,
    title: str = "Multiply W_Q and W_K by c: the attention weights sharpen",
) -> StaticSlider:
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
    title : str

    Returns
    -------
    StaticSlider

    Notes
    -----
    The script computes what :func:`attention_lib.projection_scale_weights` returns:

    .. math:: \operatorname{softmax}\!\left(c^2\,\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right),
              \qquad Q = X W_Q,\; K = X W_K .

    Examples
    --------
    >>> from attention_lib.examples import cat_sat_on
    >>> markup = projection_scale_explorer(cat_sat_on(), scale=3.0)._repr_html_()
    >>> markup.split("<script>")[0].count("<td style=")  # the weights shown before any script
    16
    """
    tokens, q, k, _ = _walkthrough(example)
    c0 = _check_scale(scale, scale_max, step)
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")
    data = {"tokens": tokens, "q": _floats(q), "k": _floats(k)}
    uid = _uid("proj", data, c0, scale_max, step, title)
    w = projection_scale_weights(example.x, example.w_q, example.w_k, [c0])[0]  # (n, n)
    head = "".join(f'<th scope="col">{html.escape(t)}</th>' for t in tokens)
    body = f"""<div class="lc-controls">
{_scale_fields(uid, "factor c", c0, float(scale_max), float(step))}
</div>
<p>Q and K are multiplied by c, so every score q·k<sub>j</sub> / √d<sub>k</sub> is multiplied
by c² = <span class="lc-c2">{_fmt(c0 * c0, 2)}</span>.</p>
<table class="lc-heat"><caption class="lc-hint">attention weights: one row per query,
one column per key</caption><thead><tr><th scope="col">query \\ key</th>{head}</tr></thead>
<tbody>{_heat_rows(tokens, w)}</tbody></table>"""
    alt = (f"slider for the factor c multiplying W_Q and W_K, showing the "
           f"{len(tokens)} x {len(tokens)} attention weights of {' '.join(tokens)}")
    return _assemble("proj", uid, data, body, "projection_scale_explorer.js",
                     f"c = {c0:g}", alt, title)


# --------------------------------------------------------------------------- 4. causal steps


def causal_stepper(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    tokens: Sequence[str] | None = None,
    *,
    start: int = 1,
    title: str = "Generate one token at a time: the new query, the mask and the cache",
) -> StaticSlider:
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
    tokens : sequence of str, optional
        A label per position (default ``"1", "2", ...``).
    start : int
        The step shown first, from 1 to n.
    title : str

    Returns
    -------
    StaticSlider

    Notes
    -----
    Step :math:`t` shows row :math:`t` (counted from 1) of
    ``scaled_dot_product_attention(q, k, v, causal=True)``:

    .. math:: a_{tj} = \operatorname{softmax}_{j \le t}\!\left(\frac{\mathbf q_t\cdot
              \mathbf k_j}{\sqrt{d_k}}\right), \qquad \mathbf z_t = \sum_{j\le t}
              a_{tj}\mathbf v_j .

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    >>> "next token" in causal_stepper(q, k, v, ["a", "b", "c"])._repr_html_()
    True
    """
    q = as_real_array(q, "q", min_ndim=2)
    k = as_real_array(k, "k", min_ndim=2)
    v = as_real_array(v, "v", min_ndim=2)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 2:
            raise ValueError(f"{name} has shape {a.shape}; expected one row per position, "
                             "shape (n, d)")
    if k.shape != q.shape or v.shape[0] != q.shape[0]:
        raise ValueError(f"q {q.shape}, k {k.shape}, v {v.shape}; expected q and k of shape "
                         "(n, d_k) and v of shape (n, d_v)")
    n = q.shape[0]
    labels = _labels(tokens, n)
    if not isinstance(start, int | np.integer) or isinstance(start, bool):
        raise TypeError(f"start={start!r}; expected an integer step from 1 to {n}")
    if not 1 <= start <= n:
        raise ValueError(f"start={start}; expected a step from 1 to {n}")
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")
    out, weights = scaled_dot_product_attention(q, k, v, causal=True)
    data = {"tokens": labels, "q": _floats(q), "k": _floats(k), "v": _floats(v)}
    uid = _uid("causal", data, int(start), title)
    t = int(start)
    d_k = q.shape[-1]
    scores = (q * (1.0 / math.sqrt(d_k))) @ k.T  # (n, n) before the mask
    body = f"""<div class="lc-controls">
<button type="button" class="lc-prev" id="{uid}-prev" disabled>previous</button>
<button type="button" class="lc-next" id="{uid}-next" disabled>next token</button>
<div class="lc-field"><label for="{uid}-step">step t</label>
<input type="range" class="lc-step" id="{uid}-step" min="1" max="{n}" step="1" value="{t}"
disabled autocomplete="off"></div>
<p aria-live="polite" class="lc-now">{_stepper_now(labels, t)}</p>
</div>
<p>Keys the new query may use (solid) and positions not generated yet (dashed):</p>
<ul class="lc-tokens">{_stepper_tokens(labels, t)}</ul>
<p>The cache holds the keys and values of positions 1 to <span class="lc-t">{t}</span>:</p>
<ul class="lc-terms lc-cache">{_stepper_cache(labels, k, v, t)}</ul>
<p>Scores q<sub>t</sub>·k<sub>j</sub> / √d<sub>k</sub> and weights of the new query:</p>
<table class="lc-weights"><thead><tr><th scope="col">key</th><th scope="col" class="lc-num">
score</th><th scope="col">weight</th><th scope="col" class="lc-num">a</th></tr></thead>
<tbody>{_stepper_rows(labels, scores[t - 1], weights[t - 1], t)}</tbody></table>
<p>output z<sub>t</sub> = <span class="lc-vec lc-output">{_vec(out[t - 1], 3)}</span></p>"""
    alt = (f"step through causal attention over {' '.join(labels)}: at step t the new query "
           "sees positions 1 to t, the cache holds their keys and values")
    return _assemble("causal", uid, data, body, "causal_stepper.js", f"step t = {t}", alt,
                     title)


def _stepper_now(labels: Sequence[str], t: int) -> str:
    return (f"step t = {t} of {len(labels)}: the new token is "
            f"<strong>{html.escape(labels[t - 1])}</strong> (position {t})")


def _stepper_tokens(labels: Sequence[str], t: int) -> str:
    return "".join(
        f'<li class="{"lc-new" if j + 1 == t else "lc-seen" if j + 1 < t else "lc-future"}">'
        f'{j + 1} {html.escape(x)}'
        f'{" (new query)" if j + 1 == t else " (masked)" if j + 1 > t else ""}</li>'
        for j, x in enumerate(labels))


def _stepper_cache(labels: Sequence[str], k: np.ndarray, v: np.ndarray, t: int) -> str:
    return "".join(f'<li><span>{j + 1} {html.escape(labels[j])}:</span> '
                   f'<span>k = <span class="lc-vec">{_vec(k[j], 2)}</span></span> '
                   f'<span>v = <span class="lc-vec">{_vec(v[j], 2)}</span></span></li>'
                   for j in range(t))


def _stepper_rows(labels: Sequence[str], s: np.ndarray, a: np.ndarray, t: int) -> str:
    return "".join(
        _bar_row(f"{j + 1} {html.escape(x)}", float(a[j]), 3,
                 _fmt(s[j], 3) if j < t else "masked", "" if j < t else "lc-off")
        for j, x in enumerate(labels))


# --------------------------------------------------------------------------- 3. the trained model


def _load_model(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The exported document (format, vocabulary, params) and its arrays, checked."""
    if isinstance(model, str | os.PathLike):
        with open(model, encoding="utf-8") as f:
            doc = json.load(f)
    elif isinstance(model, Mapping):
        doc = dict(model)
    else:
        raise TypeError(f"model is a {type(model).__name__}; expected the document "
                        "export_retrieval_model writes (a dict, as json.load gives) or its path")
    if doc.get("format") != EXPORT_FORMAT:
        raise ValueError(f"model has format {doc.get('format')!r}; expected {EXPORT_FORMAT!r} "
                         "(a file written by export_retrieval_model)")
    vocab = doc.get("vocabulary")
    if not (isinstance(vocab, Mapping) and all(
            isinstance(vocab.get(name), list) and vocab[name]
            and all(isinstance(x, str) and x and not any(ch.isspace() or ch == "?" for ch in x)
                    for x in vocab[name]) for name in ("keys", "values"))):
        raise ValueError("model has no usable vocabulary; expected lists of key and value "
                         "names (non-empty strings without spaces or '?')")
    params_doc = doc.get("params")
    if not isinstance(params_doc, Mapping) or any(n not in params_doc for n in RETRIEVAL_PARAMS):
        raise ValueError(f"model lacks some of the params {list(RETRIEVAL_PARAMS)}")
    params = {n: as_real_array(params_doc[n], f"model params {n}", min_ndim=1).astype(np.float64)
              for n in RETRIEVAL_PARAMS}
    n_keys, n_values = len(vocab["keys"]), len(vocab["values"])
    d = params["key_embed"].shape[-1]
    d_k, d_v = params["w_q"].shape[-1], params["w_v"].shape[-1]
    want = {"key_embed": (n_keys, d), "value_embed": (n_values, d), "query_embed": (n_keys, d),
            "w_q": (d, d_k), "w_k": (d, d_k), "w_v": (d, d_v), "w_out": (d_v, n_values),
            "b_out": (n_values,)}
    for name, shape in want.items():
        if params[name].shape != shape:
            raise ValueError(f"model params {name} has shape {params[name].shape}; expected "
                             f"{shape} for {n_keys} keys, {n_values} values")
    kept = {"format": doc["format"], "vocabulary": {"keys": list(vocab["keys"]),
                                                    "values": list(vocab["values"])},
            "params": {n: params[n].tolist() for n in RETRIEVAL_PARAMS}}
    return kept, params


def _sequence_problem(text: str, keys: Sequence[str], values: Sequence[str]
                      ) -> tuple[str | None, tuple[list[int], list[int], int] | None]:
    """What is wrong with ``text`` (as the script words it), or its key, value, query indices."""
    tokens = text.split()
    example = f"{keys[0]}{values[-1]} ? {keys[0]}"
    if not tokens:
        return f"type the pairs, then ? and the key to look up, e.g. {example}", None
    if tokens.count("?") != 1 or tokens.index("?") != len(tokens) - 2:
        return f"end the sequence with ? and one key to look up, e.g. {example}", None
    pairs, query = tokens[:-2], tokens[-1]
    if not pairs:
        return "store at least one pair before ?", None
    if len(pairs) > len(keys):
        return (f"at most {len(keys)} pairs: there are {len(keys)} keys and each is stored "
                "once"), None
    key_idx, value_idx = [], []
    for tok in pairs:
        split = next(((tok[:i], tok[i:]) for i in range(1, len(tok))
                      if tok[:i] in keys and tok[i:] in values), None)
        if split is None:
            return (f'"{tok}" is not a pair: write a key {keys[0]}–{keys[-1]} followed by a '
                    f"value {values[0]}–{values[-1]}, like {keys[0]}{values[-1]}"), None
        if keys.index(split[0]) in key_idx:
            return f"the key {split[0]} is stored twice; each key may be stored once", None
        key_idx.append(keys.index(split[0]))
        value_idx.append(values.index(split[1]))
    if query not in keys:
        return f'"{query}" is not a key: look up one of {keys[0]}–{keys[-1]}', None
    return None, (key_idx, value_idx, list(keys).index(query))


def parse_retrieval_sequence(
    sequence: str, vocabulary: Mapping[str, Sequence[str]]
) -> tuple[list[int], list[int], int]:
    """Read a typed soft-dictionary sequence such as ``"c3 a7 f1 ? f"``.

    Parameters
    ----------
    sequence : str
        Pairs separated by spaces, each a key name followed by a value name, no key twice
        and at most as many pairs as there are keys; then ``?`` and the key to look up
        (which need not be stored).
    vocabulary : mapping
        ``{"keys": [...], "values": [...]}``, as :func:`attention_lib.export_retrieval_model`
        writes it.

    Returns
    -------
    keys, values : list of int
        The positions of the stored keys and values in the vocabulary.
    query : int
        The position of the key looked up.

    Raises
    ------
    ValueError
        Naming ``sequence`` and saying what is wrong, in the words
        :func:`retrieval_playground` shows in the page.

    Examples
    --------
    >>> vocab = {"keys": list("abcdefgh"), "values": list("01234567")}
    >>> parse_retrieval_sequence("c3 a7 f1 ? f", vocab)
    ([2, 0, 5], [3, 7, 1], 5)
    """
    if not isinstance(sequence, str):
        raise TypeError(f"sequence={sequence!r}; expected a str such as 'c3 a7 ? a'")
    problem, parsed = _sequence_problem(sequence, list(vocabulary["keys"]),
                                        list(vocabulary["values"]))
    if problem is not None:
        raise ValueError(f"sequence={sequence!r}: {problem}")
    return parsed


def retrieval_playground(
    model: Mapping[str, Any] | str | os.PathLike,
    *,
    sequence: str = "c3 a7 f1 b1 h6 d0 ? f",
    title: str = "The trained soft dictionary, running in this page",
) -> StaticSlider:
    r"""The exported soft-dictionary model, run in the browser on a sequence the reader types.

    The reader edits a sequence in a text field. While it is valid (see
    :func:`parse_retrieval_sequence`), the script runs the model's forward pass in
    JavaScript on the embedded weights at every keystroke and draws the query's attention
    weight on each stored pair (bars and three decimals, the pair whose key is looked up
    marked), with the model's answer (the value of the largest logit) and its probability.
    Anything else is refused with a message saying what is wrong.

    Parameters
    ----------
    model : dict or path
        The document :func:`attention_lib.export_retrieval_model` writes (as ``json.load``
        returns it) or the path of that file. Its format, vocabulary and parameters are
        embedded in the page.
    sequence : str
        The sequence shown first.
    title : str

    Returns
    -------
    StaticSlider

    Notes
    -----
    The script computes what :func:`attention_lib.retrieval_forward` returns:

    .. math::

        X = E_{\text{key}}[\text{keys}] + E_{\text{value}}[\text{values}], \quad
        \mathbf a = \operatorname{softmax}\bigl(E_{\text{query}}[q] W_Q (X W_K)^{\mathsf T}
        / \sqrt{d_k}\bigr), \quad
        \boldsymbol\ell = \mathbf a X W_V W_{\text{out}} + \mathbf b_{\text{out}} .

    Examples
    --------
    >>> import attention_lib as al, tempfile, pathlib
    >>> result = al.train_retrieval(seed=0, steps=5)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = al.export_retrieval_model(result, pathlib.Path(tmp) / "model.json")
    ...     markup = retrieval_playground(path, sequence="a1 b2 ? b")._repr_html_()
    >>> markup.split("<script>")[0].count('class="lc-num lc-weight"')  # one row per pair
    2
    """
    doc, params = _load_model(model)
    keys, values = doc["vocabulary"]["keys"], doc["vocabulary"]["values"]
    key_idx, value_idx, query = parse_retrieval_sequence(sequence, doc["vocabulary"])
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")
    uid = _uid("retrieval", doc, sequence, title)
    logits, weights = retrieval_forward(params, [key_idx], [value_idx], [query])
    rules = (f"Allowed: 1 to {len(keys)} pairs separated by spaces, each a key "
             f"{keys[0]}–{keys[-1]} followed by a value {values[0]}–{values[-1]} (like "
             f"{keys[2 % len(keys)]}{values[3 % len(values)]}), no key twice; then ? and the "
             "key to look up. Anything else is refused with a message.")
    body = f"""<div class="lc-controls"><div class="lc-field lc-field-wide">
<label for="{uid}-seq">sequence</label>
<input type="text" class="lc-seq" id="{uid}-seq" value="{html.escape(sequence, quote=True)}"
disabled autocomplete="off" spellcheck="false" aria-describedby="{uid}-rules {uid}-err">
</div></div>
<p class="lc-hint" id="{uid}-rules">{html.escape(rules)}</p>
<p class="lc-error" id="{uid}-err" role="status" aria-live="polite"></p>
<div class="lc-result" data-logits="{_attr(_floats(logits[0]))}">
{_retrieval_result(keys, values, key_idx, value_idx, query, logits[0], weights[0])}</div>"""
    alt = (f"type a sequence of key-value pairs and a query (keys {keys[0]}-{keys[-1]}, "
           f"values {values[0]}-{values[-1]}); the trained model's attention weights and "
           "answer are computed in the page")
    return _assemble("retrieval", uid, {"model": doc}, body, "retrieval_playground.js",
                     f"the sequence {sequence}", alt, title)


def _retrieval_result(keys: Sequence[str], values: Sequence[str], key_idx: Sequence[int],
                      value_idx: Sequence[int], query: int, logits: np.ndarray,
                      weights: np.ndarray) -> str:
    """The answer and the table of weights, as the script's ``result``."""
    probs = softmax(np.asarray(logits, dtype=np.float64))
    best = int(np.argmax(logits))
    answer = (f"The model answers <strong>{html.escape(values[best])}</strong> (probability "
              f"{_fmt(probs[best], 3)}); ")
    if query in key_idx:
        stored = values[value_idx[list(key_idx).index(query)]]
        verdict = "right" if stored == values[best] else "wrong"
        answer += (f"the value stored with {html.escape(keys[query])} is "
                   f"{html.escape(stored)}: {verdict}.")
    else:
        answer += (f"no pair holds the key {html.escape(keys[query])}, so no answer is "
                   "right.")
    rows = "".join(
        _bar_row(f"{j + 1} {html.escape(keys[kk] + values[vv])}"
                 + (" (looked up)" if kk == query else ""), float(weights[j]), 3, None,
                 "lc-mark" if kk == query else "")
        for j, (kk, vv) in enumerate(zip(key_idx, value_idx, strict=True)))
    return (f'<p class="lc-answer">{answer}</p>\n<p>Attention of the query '
            f'<strong>? {html.escape(keys[query])}</strong> over the stored pairs:</p>\n'
            '<table class="lc-weights"><thead><tr><th scope="col">pair</th><th scope="col">'
            f'weight</th><th scope="col" class="lc-num">a</th></tr></thead><tbody>{rows}'
            '</tbody></table>')
